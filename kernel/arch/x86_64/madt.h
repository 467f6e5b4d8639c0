/* The ACPI MADT ("APIC" table): where the local and I/O APICs are, which
 * I/O APIC input (global system interrupt, GSI) each ISA IRQ reaches, and
 * how each input is triggered.  Parsed without touching hardware, so the
 * host tests check it on made-up tables. */
#ifndef KEEP_MADT_H
#define KEEP_MADT_H

#include "acpi.h"
#include "keep/abi.h"
#include "types.h"

#define MADT_LEVEL 1 /* level-triggered (else edge) */
#define MADT_LOW 2   /* active low (else high) */

struct madt {
    u64 lapic_pa, ioapic_pa;
    u8 isa_gsi[16];               /* the I/O APIC input of each ISA IRQ */
    u8 mode[KEEP_IRQ_LINES];      /* MADT_LEVEL | MADT_LOW of each input */
    unsigned overrides;           /* interrupt source overrides applied */
    bool found;                   /* from a table (else the PC defaults) */
};

/* Fill m from the MADT h (NULL: none), starting from the PC defaults: the
 * APICs at 0xfee00000 and 0xfec00000, ISA IRQ n on input n, edge and
 * active high, inputs 16 and up (PCI) level and active low.  Malformed
 * entries end the walk; overrides naming inputs beyond the I/O APIC's
 * KEEP_IRQ_LINES, an I/O APIC whose inputs do not start at 0, are
 * ignored. */
void madt_parse(const struct acpi_header *h, struct madt *m);

#endif
