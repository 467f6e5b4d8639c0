/* DMA domains: the device-visible address spaces the IOMMU gives PCI
 * functions (kernel/arch/x86_64/vtd.c drives the hardware). */
#ifndef KEEP_DMA_DOMAIN_H
#define KEEP_DMA_DOMAIN_H

#include "cap.h"
#include "types.h"

struct account;
struct invocation;
struct process;

/* A bit of process.irq_pending above the interrupt lines: DMA faults wait
 * for this process in some domain's queue. */
#define DMA_FAULT_PENDING (1u << 31)
_Static_assert(KEEP_IRQ_LINES < 31, "the DMA-fault bit lies above the interrupt lines");

/* ACCOUNT.CREATE_DMA_DOMAIN and ACCOUNT.DESTROY of a DMA_DOMAIN from a;
 * the destruction goes in parts of DESTROY_TABLES tables, restarting from
 * the system call between them (INV_DONE). */
u64 dma_domain_create(struct invocation *inv, struct account *a);
u64 dma_domain_destroy(struct invocation *inv, struct cap c, struct account *a);
/* MEMORY.REVOKE: remove every DMA mapping of frame pa (the IOTLB
 * invalidated before it returns); how many there were. */
u64 dma_domain_unmap_frame(u64 pa);
/* ACCOUNT.DESTROY_ALL: every domain made from a, freeing at most *budget
 * of their tables (counted down); false when the budget ran out first. */
bool dma_domain_destroy_all(struct account *a, unsigned *budget);
u64 dma_domain_invoke(struct invocation *inv);

/* A translation fault of device sid in domain did (from the fault
 * interrupt); false if did names no domain. */
bool dma_domain_fault(u16 did, u16 sid, u64 addr, unsigned reason, bool write);
/* Deliver one waiting fault to p, which has begun to receive; false if
 * none waits (the pending bit is cleared when the last one goes). */
bool dma_domain_deliver_pending(struct process *p);

#endif
