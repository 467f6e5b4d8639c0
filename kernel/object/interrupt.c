/* Interrupt lines that a driver binds to a process: the I/O APIC's inputs
 * (0-23) and the MSI lines (24-55), vectors a PCI function's message-
 * signalled interrupts reach once ROUTE_MSI routed them.  When a bound line
 * fires the kernel sends an IRQ message through the SENDER capability
 * given to BIND.  An I/O APIC line is masked until the driver's ACK, so a
 * level-triggered line cannot storm; an MSI is an edge, never masked.  An
 * interrupt that finds the process busy waits (one per line, a bit in the
 * process, or in msi_pending) and is delivered when the process next
 * receives.  A line bound to a notification instead (BIND_NOTIFICATION)
 * ORs its bits into it: nothing waits in the process, the word keeps them. */
#include "notification.h"
#include "arch.h"
#include "device.h"
#include "dma_domain.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "process.h"
#include "vtd.h"
#include "wrapper.h"

#define CONSOLE_LINE isa_line(4) /* the kernel's own serial input, ISA IRQ 4 */
#define LINES (KEEP_IRQ_LINES + KEEP_MSI_LINES)
#define IOAPIC_LINES ((1u << KEEP_IRQ_LINES) - 1) /* their bits in process.irq_pending */
_Static_assert(KEEP_IRQ_LINES < 30 && KEEP_MSI_LINES <= 32, "the pending bits fit");

static struct cap bound[LINES]; /* the SENDER or NOTIFICATION of each line, or null */
static u64 bound_bits[LINES];   /* the bits a line bound to a notification ORs in */
static u32 msi_routed;          /* MSI lines routed to a function (bit line - IRQ_LINES) */
static u32 msi_pending;         /* MSI lines that fired while their process was busy */

/* The wrappers a line was bound (or an MSI line routed) through: their
 * destruction unbinds (unroutes) it.  Empty when done with the
 * INTERRUPT capability itself. */
struct via {
    u64 w[KEEP_WRAPPER_DEPTH];
    unsigned n;
};
static struct via bound_via[LINES], routed_via[LINES];

static void set_via(struct via *v, const struct invocation *inv)
{
    v->n = inv->nvia;
    for (unsigned i = 0; i < inv->nvia; i++)
        v->w[i] = inv->via[i];
    wrapper_note_interrupt(inv->via, inv->nvia);
}

static bool came_through(const struct via *v, u64 w)
{
    for (unsigned i = 0; i < v->n; i++)
        if (v->w[i] == w)
            return true;
    return false;
}

static bool is_msi(unsigned line) { return line >= KEEP_IRQ_LINES; }
static u32 msi_bit(unsigned line) { return 1u << (line - KEEP_IRQ_LINES); }

static bool to_ntfn(unsigned line) { return cap_type(bound[line]) == KEEP_TYPE_NOTIFICATION; }

static void drop(unsigned line)
{
    bound[line] = (struct cap){0, 0};
    if (!is_msi(line))
        ioapic_mask(line, true);
}

/* The notification line is bound to; a destroyed one's binding is dropped. */
static struct notification *bound_ntfn(unsigned line)
{
    if (!to_ntfn(line))
        return NULL;
    struct notification *n = notification_live(bound[line]);
    if (!n)
        drop(line);
    return n;
}

/* The process line is bound to; a binding whose process has been destroyed
 * is dropped (and the line masked) here. */
static struct process *bound_to(unsigned line)
{
    if (cap_is_null(bound[line]) || to_ntfn(line))
        return NULL;
    struct process *p = process_from_cap(bound[line]);
    if (process_is_out(p))
        return NULL; /* cannot happen: bound processes are not exported, nor bound while out */
    if (!p)
        drop(line);
    return p;
}

static bool is_bound(unsigned line) { return bound_ntfn(line) || bound_to(line); }

void interrupt_fire(unsigned line)
{
    if (!is_msi(line))
        ioapic_mask(line, true);
    apic_eoi();
    struct notification *n = bound_ntfn(line);
    if (n) {
        notification_signal(n, bound_bits[line]);
        return;
    }
    struct process *p = bound_to(line);
    if (!p)
        return;
    if (p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_RECV) {
        ipc_deliver_irq(p, line, cap_payload(bound[line]));
    } else if (is_msi(line)) {
        msi_pending |= msi_bit(line);
        p->irq_pending |= MSI_PENDING;
    } else {
        p->irq_pending |= 1u << line;
    }
}

bool interrupt_deliver_pending(struct process *p)
{
    if ((p->irq_pending & NOTIFY_PENDING) && notification_deliver_pending(p))
        return true;
    if ((p->irq_pending & DMA_FAULT_PENDING) && dma_domain_deliver_pending(p))
        return true;
    if (p->irq_pending & MSI_PENDING) {
        for (u32 w = msi_pending; w; w &= w - 1) {
            unsigned line = KEEP_IRQ_LINES + (unsigned)__builtin_ctz(w);
            if (bound_to(line) == p) {
                msi_pending &= ~msi_bit(line);
                ipc_deliver_irq(p, line, cap_payload(bound[line]));
                return true;
            }
        }
        p->irq_pending &= ~MSI_PENDING;
    }
    while (p->irq_pending & IOAPIC_LINES) {
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
    for (unsigned line = 0; line < LINES; line++)
        if (!cap_is_null(bound[line]) && !to_ntfn(line) && process_from_cap(bound[line]) == p)
            return true;
    return false;
}

/* Forget a waiting interrupt of line for p. */
static void forget_pending(struct process *p, unsigned line)
{
    if (is_msi(line))
        msi_pending &= ~msi_bit(line);
    else if (p)
        p->irq_pending &= ~(1u << line);
}

/* BIND (a SENDER) or BIND_NOTIFICATION (a NOTIFICATION and its bits). */
static u64 bind(struct invocation *inv, unsigned line, bool ntfn)
{
    struct cap c;
    if (line == CONSOLE_LINE)
        return KEEP_ERR_IN_USE;
    if (ntfn && !inv->arg[2])
        return KEEP_ERR_INVALID_ARG;
    u64 e = cap_lookup(inv->caller->as, inv->arg[1], ntfn ? KEEP_TYPE_NOTIFICATION : KEEP_TYPE_SENDER,
                       KEEP_RIGHT_WRITE, &c);
    if (e)
        return e;
    if (!ntfn && process_is_out(process_from_cap(c)))
        return KEEP_ERR_BAD_STATE;
    if (is_bound(line))
        return KEEP_ERR_IN_USE;
    bound[line] = c;
    bound_bits[line] = inv->arg[2];
    set_via(&bound_via[line], inv);
    forget_pending(NULL, line); /* one left by a destroyed process */
    if (!is_msi(line))
        ioapic_program(line, IRQ_VECTOR_BASE + line, false);
    return KEEP_ERR_OK;
}

static u64 unbind(unsigned line)
{
    if (!is_bound(line))
        return KEEP_ERR_BAD_STATE;
    forget_pending(bound_to(line), line);
    drop(line);
    return KEEP_ERR_OK;
}

static u64 route_msi(struct invocation *inv, unsigned line)
{
    u16 sid;
    u64 e = devmem_pci_function(inv, inv->arg[1], inv->arg[2], &sid);
    if (e)
        return e;
    if (msi_routed & msi_bit(line))
        return KEEP_ERR_IN_USE;
    msi_routed |= msi_bit(line);
    set_via(&routed_via[line], inv);
    vtd_route_msi(line, IRQ_VECTOR_BASE + line, sid, &inv->res[0], &inv->res[1]);
    return KEEP_ERR_OK;
}

static u64 unroute_msi(unsigned line)
{
    if (!(msi_routed & msi_bit(line)))
        return KEEP_ERR_BAD_STATE;
    vtd_unroute_msi(line);
    msi_routed &= ~msi_bit(line);
    if (is_bound(line))
        unbind(line);
    return KEEP_ERR_OK;
}

void interrupt_wrapper_revoked(u64 w)
{
    for (unsigned line = 0; line < LINES; line++) {
        if (is_msi(line) && (msi_routed & msi_bit(line)) && came_through(&routed_via[line], w))
            unroute_msi(line);
        if (is_bound(line) && came_through(&bound_via[line], w))
            unbind(line);
    }
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
    case KEEP_M_INTERRUPT_ROUTE_MSI:
    case KEEP_M_INTERRUPT_UNROUTE_MSI:
    case KEEP_M_INTERRUPT_BIND_NOTIFICATION:
        if (!range_holds(inv->cap, line, 1) || line >= LINES)
            return KEEP_ERR_INVALID_ARG;
        switch (inv->method) {
        case KEEP_M_INTERRUPT_BIND:
            return bind(inv, (unsigned)line, false);
        case KEEP_M_INTERRUPT_BIND_NOTIFICATION:
            return bind(inv, (unsigned)line, true);
        case KEEP_M_INTERRUPT_UNBIND:
            return unbind((unsigned)line);
        case KEEP_M_INTERRUPT_ACK:
            if (!is_bound((unsigned)line))
                return KEEP_ERR_BAD_STATE;
            if (!is_msi((unsigned)line))
                ioapic_mask((unsigned)line, false);
            return KEEP_ERR_OK;
        }
        if (!is_msi((unsigned)line))
            return KEEP_ERR_INVALID_ARG;
        return inv->method == KEEP_M_INTERRUPT_ROUTE_MSI ? route_msi(inv, (unsigned)line)
                                                          : unroute_msi((unsigned)line);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
