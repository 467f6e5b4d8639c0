/* Interrupt lines: I/O APIC inputs that a driver binds to a process.  When
 * a bound line fires the kernel masks it and sends an IRQ message through
 * the SENDER capability given to BIND; the driver unmasks it with ACK once
 * it has served the device, so a level-triggered line cannot storm.  An
 * interrupt that finds the process busy waits (one per line, a bit in the
 * process) and is delivered when the process next receives. */
#include "arch.h"
#include "device.h"
#include "dma_domain.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "process.h"

#define CONSOLE_LINE 4 /* the kernel's own serial input */

static struct cap bound[KEEP_IRQ_LINES]; /* the SENDER of each line, or null */

/* The process line is bound to; a binding whose process has been destroyed
 * is dropped (and the line masked) here. */
static struct process *bound_to(unsigned line)
{
    if (cap_is_null(bound[line]))
        return NULL;
    struct process *p = process_from_cap(bound[line]);
    if (process_is_out(p))
        return NULL; /* cannot happen: bound processes are not exported, nor bound while out */
    if (!p) {
        bound[line] = (struct cap){0, 0};
        ioapic_mask(line, true);
    }
    return p;
}

void interrupt_fire(unsigned line)
{
    ioapic_mask(line, true);
    apic_eoi();
    struct process *p = bound_to(line);
    if (!p)
        return;
    if (p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_RECV)
        ipc_deliver_irq(p, line, cap_payload(bound[line]));
    else
        p->irq_pending |= 1u << line;
}

bool interrupt_deliver_pending(struct process *p)
{
    if ((p->irq_pending & DMA_FAULT_PENDING) && dma_domain_deliver_pending(p))
        return true;
    while (p->irq_pending & ~DMA_FAULT_PENDING) {
        unsigned line = (unsigned)__builtin_ctz(p->irq_pending);
        p->irq_pending &= ~(1u << line);
        if (bound_to(line) == p) {
            ipc_deliver_irq(p, line, cap_payload(bound[line]));
            return true;
        }
    }
    return false;
}

bool interrupt_bound_to(struct process *p)
{
    for (unsigned line = 0; line < KEEP_IRQ_LINES; line++)
        if (!cap_is_null(bound[line]) && process_from_cap(bound[line]) == p)
            return true;
    return false;
}

static u64 bind(struct invocation *inv, unsigned line)
{
    struct cap s;
    if (line == CONSOLE_LINE)
        return KEEP_ERR_IN_USE;
    u64 e = cap_lookup(inv->caller->as, inv->arg[1], KEEP_TYPE_SENDER, KEEP_RIGHT_WRITE, &s);
    if (e)
        return e;
    if (process_is_out(process_from_cap(s)))
        return KEEP_ERR_BAD_STATE;
    if (bound_to(line))
        return KEEP_ERR_IN_USE;
    bound[line] = s;
    ioapic_program(line, IRQ_VECTOR_BASE + line, line >= 16, false);
    return KEEP_ERR_OK;
}

static u64 unbind(unsigned line)
{
    struct process *p = bound_to(line);
    if (!p)
        return KEEP_ERR_BAD_STATE;
    ioapic_mask(line, true);
    p->irq_pending &= ~(1u << line);
    bound[line] = (struct cap){0, 0};
    return KEEP_ERR_OK;
}

u64 interrupt_invoke(struct invocation *inv)
{
    u64 line = inv->arg[0];
    switch (inv->method) {
    case KEEP_M_INTERRUPT_INFO:
    case KEEP_M_INTERRUPT_RESTRICT:
        return range_invoke(inv, 0);
    case KEEP_M_INTERRUPT_BIND:
    case KEEP_M_INTERRUPT_UNBIND:
    case KEEP_M_INTERRUPT_ACK:
        if (!inv_has(inv, KEEP_RIGHT_WRITE))
            return KEEP_ERR_NO_RIGHTS;
        if (!range_holds(inv->cap, line, 1) || line >= KEEP_IRQ_LINES)
            return KEEP_ERR_INVALID_ARG;
        if (inv->method == KEEP_M_INTERRUPT_BIND)
            return bind(inv, (unsigned)line);
        if (inv->method == KEEP_M_INTERRUPT_UNBIND)
            return unbind((unsigned)line);
        if (!bound_to((unsigned)line))
            return KEEP_ERR_BAD_STATE;
        ioapic_mask((unsigned)line, false);
        return KEEP_ERR_OK;
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
