/* ACPI tables the kernel reads: DMAR (the IOMMU, vtd.c) and MCFG (where
 * PCI configuration space lies, so that a DEVMEM page names a PCI function). */
#ifndef KEEP_ACPI_H
#define KEEP_ACPI_H

#include "types.h"

struct acpi_header {
    char sig[4];
    u32 length;
    u8 revision, checksum;
    char oem[6], oem_table[8];
    u32 oem_rev, creator, creator_rev;
} __attribute__((packed));

/* The table with this signature from the RSDT/XSDT, checksum verified, or
 * NULL. */
const struct acpi_header *acpi_find(const char sig[4]);

/* Read MCFG; a machine without one has no PCI functions to name. */
void acpi_pci_init(void);
/* If pa is the configuration page of a PCI function in segment 0, its
 * source id (bus << 8 | device << 3 | function) and true. */
bool acpi_pci_function(u64 pa, u16 *sid);

#endif
