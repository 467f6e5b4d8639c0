/* Device resources for user-level drivers: device memory (DEVMEM), I/O
 * ports (IOPORT) and interrupt lines (INTERRUPT).  A capability to one of
 * them names a range in word 1: the first unit (page frame number, port or
 * line) in bits 0-31 and the number of units in bits 32-63.  Such ranges
 * are never destroyed, so these capabilities carry no version: they are
 * revoked through a wrapper standing for them (wrapper.c). */
#ifndef KEEP_DEVICE_H
#define KEEP_DEVICE_H

#include "cap.h"
#include "types.h"

struct invocation;
struct process;

static inline u64 range_w1(u64 base, u64 count) { return base | count << 32; }
static inline u64 range_base(struct cap c) { return c.w1 & 0xffffffff; }
static inline u64 range_count(struct cap c) { return c.w1 >> 32; }
/* Does c's range hold the n (at least 1) units from first? */
static inline bool range_holds(struct cap c, u64 first, u64 n)
{
    return n && first >= range_base(c) && n <= range_count(c) &&
           first - range_base(c) <= range_count(c) - n;
}

/* INFO and RESTRICT, the same for the three types; arguments and results
 * count in units of 2^shift (DEVMEM gives addresses, the others numbers). */
u64 range_invoke(struct invocation *inv, unsigned shift);

/* The physical address of page `offset` of a DEVMEM capability, or an
 * error (INVALID_ARG beyond the range, IN_USE for RAM or kernel devices). */
u64 devmem_page(struct cap c, u64 offset, u64 *pa);

/* The source id of the PCI function whose configuration page is page
 * `offset` of the DEVMEM capability at address `devmem` (which needs
 * WRITE): the authority over that function.  INVALID_ARG for any other page. */
u64 devmem_pci_function(struct invocation *inv, u64 devmem, u64 offset, u16 *sid);

/* A bit of process.irq_pending above the I/O APIC lines: an MSI line bound
 * to the process fired while it was busy (which ones: interrupt.c). */
#define MSI_PENDING (1u << 30)

/* Interrupt line `line` fired (its vector is IRQ_VECTOR_BASE + line). */
void interrupt_fire(unsigned line);
/* An interrupt that waited for p: delivered now if there is one. */
bool interrupt_deliver_pending(struct process *p);
/* The wrapper whose frame is w is being destroyed: unbind and unroute
 * the lines bound or routed through it. */
void interrupt_wrapper_revoked(u64 w);
/* Is an interrupt line bound to p? */
bool interrupt_bound_to(struct process *p);

u64 devmem_invoke(struct invocation *inv);
u64 ioport_invoke(struct invocation *inv);
u64 interrupt_invoke(struct invocation *inv);

#endif
