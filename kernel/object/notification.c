/* Notifications (notification.h).  One frame each, from the account that
 * made it.  A waiter blocks in WAIT_NOTIFY with its system call rewound, as
 * every restarting wait: a signal completes its WAIT in place (the word in
 * its result registers, the call stepped over), so that the wake-up costs
 * no second invocation; anything else that ends the wait (destruction, an
 * export, kernel memory taken back) leaves it rewound, and WAIT, started
 * again, decides (STALE for a destroyed notification).  The binding is a
 * SENDER capability: a bound process that is destroyed makes it stale, and
 * nothing points at a dead process. */
#include "notification.h"
#include "account.h"
#include "frame.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"

static struct notification *from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

u64 notification_create(struct invocation *inv, struct account *a)
{
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[0], &dest);
    if (e)
        return e;
    if ((e = kmem_need(inv, a, 1)))
        return e;
    u64 pa = kmem_alloc(a, FRAME_NOTIFICATION);
    struct notification *n = phys_to_virt(pa);
    n->account = a;
    n->next = a->notifications;
    if (a->notifications)
        a->notifications->prev = n;
    a->notifications = n;
    *dest = cap_make(KEEP_TYPE_NOTIFICATION, KEEP_RIGHT_ALL, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

/* The bound process, while it lives and is in the kernel. */
static struct process *bound_process(struct notification *n)
{
    if (cap_is_null(n->bound))
        return NULL;
    struct process *p = process_from_cap(n->bound);
    return p && !process_is_out(p) && p->bound_ntfn == n ? p : NULL;
}

static void unbind(struct notification *n)
{
    struct process *p = bound_process(n);
    if (p) {
        p->bound_ntfn = NULL;
        p->irq_pending &= ~NOTIFY_PENDING;
    }
    n->bound = (struct cap){0, 0};
}

/* The waiter, if any, runs again: its WAIT starts again (destruction). */
static void wake_waiter(struct notification *n)
{
    struct process *w = n->waiter;
    if (w) {
        notification_unwait(w);
        process_make_runnable(w);
    }
}

/* The waiter's WAIT ends now with the word, as notification_invoke would
 * end it started again: OK, the bits as its result, past its syscall. */
static void complete_waiter(struct notification *n)
{
    struct process *w = n->waiter;
    struct regs *r = &w->regs;
    notification_unwait(w);
    r->rip += 2; /* process_block rewound it onto the syscall */
    r->rax = KEEP_ERR_OK;
    r->rdx = n->word;
    r->r8 = r->r9 = r->r10 = 0;
    n->word = 0;
    process_make_runnable(w);
}

static void destroy(struct notification *n)
{
    u64 pa = virt_to_phys_window(n);
    frame_info(pa)->version++; /* the waiter's WAIT, started again, is STALE */
    wake_waiter(n);
    unbind(n);
    if (n->prev)
        n->prev->next = n->next;
    else
        n->account->notifications = n->next;
    if (n->next)
        n->next->prev = n->prev;
    kmem_free(n->account, pa);
}

u64 notification_destroy(struct cap c, struct account *a)
{
    struct notification *n = from_cap(c);
    if (n->account != a)
        return KEEP_ERR_INVALID_ARG;
    destroy(n);
    return KEEP_ERR_OK;
}

void notification_destroy_all(struct account *a)
{
    while (a->notifications)
        destroy(a->notifications);
}

void notification_unwait(struct process *p)
{
    if (p->ntfn_wait)
        p->ntfn_wait->waiter = NULL;
    p->ntfn_wait = NULL;
}

void notification_unbind_process(struct process *p)
{
    if (p->bound_ntfn)
        unbind(p->bound_ntfn);
}

static void deliver(struct process *p, struct notification *n)
{
    u64 w[4] = {n->word, 0, 0, 0};
    n->word = 0;
    p->irq_pending &= ~NOTIFY_PENDING;
    ipc_deliver_kernel(p, KEEP_LABEL_NOTIFY, cap_payload(n->bound), w);
}

bool notification_deliver_pending(struct process *p)
{
    struct notification *n = p->bound_ntfn;
    if (!n || !n->word || bound_process(n) != p) {
        p->irq_pending &= ~NOTIFY_PENDING;
        return false;
    }
    deliver(p, n);
    return true;
}

struct notification *notification_live(struct cap c)
{
    return cap_type(c) == KEEP_TYPE_NOTIFICATION && cap_live_inline(c) ? from_cap(c) : NULL;
}

void notification_signal(struct notification *n, u64 bits)
{
    n->word |= bits;
    if (n->waiter) {
        complete_waiter(n);
        return;
    }
    struct process *p = bound_process(n);
    if (!p)
        return;
    if (p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_RECV)
        deliver(p, n);
    else
        p->irq_pending |= NOTIFY_PENDING;
}

/* WAIT by p: the word, or p blocks (INV_BLOCKED) until a signal completes
 * the wait; IN_USE while another process waits. */
static u64 wait(struct process *p, struct notification *n, u64 *bits)
{
    if (!n->word) {
        if (n->waiter && n->waiter != p)
            return KEEP_ERR_IN_USE;
        n->waiter = p;
        p->ntfn_wait = n;
        process_block(p, WAIT_NOTIFY);
        return INV_BLOCKED;
    }
    *bits = n->word;
    n->word = 0;
    return KEEP_ERR_OK;
}

bool notification_fast(struct process *s, struct cap c, u64 method)
{
    struct regs *g = &s->regs;
    /* The rights abi/keep.toml gives the method, as the general path checks
     * (constant indices: GCC folds the table's entries to constants). */
    u64 need = method == KEEP_M_NOTIFICATION_SIGNAL
                   ? keep_method_rights(KEEP_TYPE_NOTIFICATION, KEEP_M_NOTIFICATION_SIGNAL)
                   : keep_method_rights(KEEP_TYPE_NOTIFICATION, KEEP_M_NOTIFICATION_WAIT);
    if ((method != KEEP_M_NOTIFICATION_SIGNAL && method != KEEP_M_NOTIFICATION_WAIT) ||
        (cap_rights(c) & need) != need || !cap_live_inline(c))
        return false;
    struct notification *n = from_cap(c);
    u64 bits = 0;
    if (method == KEEP_M_NOTIFICATION_SIGNAL) {
        if (!g->rdx)
            return false; /* INVALID_ARG, the general path's */
        notification_signal(n, g->rdx);
    } else {
        u64 e = wait(s, n, &bits);
        if (e == INV_BLOCKED)
            return true;
        if (e)
            return false; /* IN_USE, the general path's */
    }
    g->rax = KEEP_ERR_OK;
    g->rdx = bits;
    g->r8 = g->r9 = g->r10 = 0;
    return true;
}

static u64 bind(struct invocation *inv, struct notification *n)
{
    struct cap s;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_SENDER, KEEP_RIGHT_WRITE, &s);
    if (e)
        return e;
    struct process *p = process_from_cap(s);
    if (!p)
        return KEEP_ERR_STALE;
    if (process_is_out(p))
        return KEEP_ERR_BAD_STATE;
    if (bound_process(n) || p->bound_ntfn)
        return KEEP_ERR_IN_USE;
    n->bound = s;
    p->bound_ntfn = n;
    if (n->word)
        p->irq_pending |= NOTIFY_PENDING; /* at its next receive */
    return KEEP_ERR_OK;
}

u64 notification_invoke(struct invocation *inv)
{
    struct notification *n = from_cap(inv->cap);
    if (inv->method < KEEP_M_NOTIFICATION_SIGNAL || inv->method > KEEP_M_NOTIFICATION_INFO)
        return KEEP_ERR_INVALID_METHOD;
    switch (inv->method) {
    case KEEP_M_NOTIFICATION_SIGNAL:
        if (!inv->arg[0])
            return KEEP_ERR_INVALID_ARG;
        notification_signal(n, inv->arg[0]);
        return KEEP_ERR_OK;
    case KEEP_M_NOTIFICATION_WAIT:
        return wait(inv->caller, n, &inv->res[0]);
    case KEEP_M_NOTIFICATION_POLL:
        inv->res[0] = n->word;
        n->word = 0;
        return KEEP_ERR_OK;
    case KEEP_M_NOTIFICATION_BIND:
        return bind(inv, n);
    case KEEP_M_NOTIFICATION_UNBIND:
        if (!bound_process(n))
            return KEEP_ERR_NOT_MAPPED;
        unbind(n);
        return KEEP_ERR_OK;
    default:
        inv->res[0] = n->word;
        inv->res[1] = n->waiter != NULL;
        inv->res[2] = bound_process(n) != NULL;
        return KEEP_ERR_OK;
    }
}
