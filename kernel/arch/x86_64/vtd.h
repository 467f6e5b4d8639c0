/* Intel VT-d DMA remapping (the IOMMU), as far as DMA domains need it:
 * the root and context tables, invalidation, and fault recording.  The
 * domains' own page tables are built by kernel/object/dma_domain.c. */
#ifndef KEEP_VTD_H
#define KEEP_VTD_H

#include "types.h"

#define VEC_DMA_FAULT 0x28 /* the IOMMU's fault event */

/* Find the IOMMU in the ACPI DMAR table and turn DMA remapping on (every
 * device's DMA is blocked until it is attached to a domain). */
void vtd_init(void);
bool vtd_enabled(void);
unsigned vtd_levels(void);     /* page-table levels of a domain: 3 (39-bit) or 4 (48-bit) */
unsigned vtd_domain_ids(void); /* domain numbers the IOMMU has */
bool vtd_owns_page(u64 pa);    /* the IOMMU's registers: never DEVMEM */

/* Whether the IOMMU translates the DMA of function sid (its DMAR scope). */
bool vtd_covers(u16 sid);
/* The domain number a device (source id) is attached to, 0 for none. */
u16 vtd_device_domain(u16 sid);
/* Whether attaching sid would need a context table, which the caller
 * must have found a frame for (vtd_attach takes it from the pool). */
bool vtd_attach_needs_frame(u16 sid);
/* Attach sid to domain did with top-level table root_pa; the caller checked
 * that it is attached nowhere and that a frame is free.  The context cache
 * and the domain's IOTLB entries are invalidated before it returns. */
void vtd_attach(u16 sid, u16 did, u64 root_pa);
void vtd_detach(u16 sid);
/* Detach the `devices` devices of domain did (its count of them): a search
 * of the buses that have a context table, which stops at the last one. */
void vtd_detach_domain(u16 did, unsigned devices);
/* Invalidate the IOTLB entries of domain did (after every change of its
 * tables: caching mode makes even a new mapping need it). */
void vtd_flush_domain(u16 did);
/* With interrupt remapping on: point I/O APIC line `line`'s remapping
 * entry (handle = line) at vector; false when remapping is off (the I/O
 * APIC then sends compatibility-format messages). */
bool vtd_route_line(unsigned line, unsigned vector, bool level);
/* MSI line `handle` (its remapping entry) to vector for function sid:
 * the message address and data the function must send.  With interrupt
 * remapping the entry is written (usable by sid alone) and the message is
 * in remappable format; without, a compatibility-format message. */
void vtd_route_msi(unsigned handle, unsigned vector, u16 sid, u64 *addr, u64 *data);
/* Clear the entry: messages naming it are refused (and reported). */
void vtd_unroute_msi(unsigned handle);
/* The fault event interrupt: read and clear the fault records. */
void vtd_fault_irq(void);

#endif
