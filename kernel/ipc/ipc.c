/* IPC: send and receive phases, call and return, fault messages.
 *
 * A message goes straight from the sender's registers and IPC buffer into
 * the receiver's: there is no kernel buffer.  A send to a process that is not
 * in an open receive waits in that process's send queue with its invocation
 * rewound; when the receiver next receives, the kernel runs the queued
 * invocation again on the sender's behalf, so nothing ever waits half done.
 * Fault messages are calls made by the kernel for the faulting process. */
#include "ipc.h"
#include "account.h"
#include "arch.h"
#include "device.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "probe.h"
#include "process.h"
#include "sched.h"

/* Built field by field where it is made (an initializer would clear all 22
 * words first): deliver() reads caps only below ncaps and str_* only with
 * string. */
struct msg {
    u64 label, payload, words[4];
    struct cap caps[KEEP_MAX_RECV_SLOTS]; /* a call's return capability first */
    unsigned ncaps;
    bool call, string;
    struct aspace *str_as; /* the string: sender's space, address, length */
    u64 str_va, str_len;
};

/* ---- send queues ---- */
static void sendq_append(struct process *q, struct process *p)
{
    p->q_next = NULL;
    if (q->sendq_tail)
        q->sendq_tail->q_next = p;
    else
        q->sendq_head = p;
    q->sendq_tail = p;
}

void sendq_remove(struct process *q, struct process *p)
{
    struct process **link = &q->sendq_head, *prev = NULL;
    while (*link && *link != p)
        prev = *link, link = &(*link)->q_next;
    ASSERT(*link == p);
    *link = p->q_next;
    if (q->sendq_tail == p)
        q->sendq_tail = prev;
    p->q_next = NULL;
}

/* ---- the IPC buffer ---- */
/* Is p's IPC buffer mapped writable?  The answer stands until a mapping
 * of its space goes away (unmap_generation) or the buffer moves. */
bool ipc_buffer_ok(struct process *p)
{
    if (!p->ipc_buf)
        return false;
    if (p->ipc_buf_checked == p->as->unmap_generation + 1)
        return true;
    if (!user_range_ok(p->as, p->ipc_buf, KEEP_IPC_SIZE, true))
        return false;
    p->ipc_buf_checked = p->as->unmap_generation + 1;
    return true;
}

/* A word of p's IPC buffer (buffer_ok): straight through the MMU when p's
 * space is loaded, else through its page tables. */
static u64 buf_word(struct process *p, u64 off)
{
    u64 v;
    if (p->as == cpu0.loaded_as && user_probe(p->ipc_buf + off, &v))
        return v;
    copy_from_user(p->as, &v, p->ipc_buf + off, sizeof v);
    return v;
}

/* Do receive addresses a and b of p's space, both backed by a cappage,
 * name one slot: the same address, or the same index in one cappage
 * mapped at two places? */
static bool same_slot(struct process *p, u64 a, u64 b)
{
    if (a % KEEP_CAPPAGE_SLOTS != b % KEEP_CAPPAGE_SLOTS)
        return false;
    if (a == b)
        return true;
    u64 *x = user_pte(p->as->pml4_pa, capseg_va(a)), *y = user_pte(p->as->pml4_pa, capseg_va(b));
    return x && y && (*x & PTE_ADDR) == (*y & PTE_ADDR);
}

/* Resolve the first n receive slots named in p's IPC buffer (which must be
 * mapped) and note their addresses in p->recv_addr.  Returns the error of
 * the first that does not exist, or INVALID_ARG if one slot is named twice,
 * by one address or by two that reach one cappage (a capability that came
 * with a call would overwrite its return capability).  Changes nothing
 * else. */
static u64 resolve_slots(struct process *p, unsigned n, struct cap **slots)
{
    bool twice = false;
    for (unsigned i = 0; i < n; i++) {
        p->recv_addr[i] = buf_word(p, KEEP_IPC_RECV_SLOTS + 8 * i);
        u64 e = cspace_slot(p->as, p->recv_addr[i], &slots[i]);
        if (e)
            return e;
        for (unsigned j = 0; j < i; j++)
            twice |= same_slot(p, p->recv_addr[j], p->recv_addr[i]);
    }
    return twice ? KEEP_ERR_INVALID_ARG : KEEP_ERR_OK;
}

/* The receive slots r named when it began to wait, as far as they exist
 * now.  Slots in the cappage of the one before are found without a walk. */
static unsigned recv_slots(struct process *r, struct cap **slots)
{
    unsigned got = 0;
    for (; got < r->recv_n; got++) {
        u64 a = r->recv_addr[got];
        if (got && a / KEEP_CAPPAGE_SLOTS == r->recv_addr[got - 1] / KEEP_CAPPAGE_SLOTS) {
            slots[got] = slots[got - 1] + (a % KEEP_CAPPAGE_SLOTS) - (r->recv_addr[got - 1] % KEEP_CAPPAGE_SLOTS);
            continue;
        }
        if (cspace_slot(r->as, a, &slots[got]) != KEEP_ERR_OK)
            break;
    }
    return got;
}

/* Has r a slot for a call's return capability (the first it named)? */
static bool can_take_call(struct process *r)
{
    struct cap *slot;
    return r->recv_n >= 1 && cspace_slot(r->as, r->recv_addr[0], &slot) == KEEP_ERR_OK;
}


/* End r's wait with a message in its registers (tag, payload, four words)
 * and let it run: first in its priority, which is the direct switch. */
static void wake_with(struct process *r, u64 tag, u64 payload, const u64 words[4])
{
    struct regs *g = &r->regs;
    g->rax = KEEP_ERR_OK;
    g->rsi = tag;
    g->rdi = payload;
    g->rdx = words[0];
    g->r8 = words[1];
    g->r9 = words[2];
    g->r10 = words[3];
    sleep_remove(r);
    r->wait_kind = WAIT_NONE;
    r->wait_target = NULL;
    if (r->state != KEEP_STATE_RUNNABLE) {
        r->state = KEEP_STATE_RUNNABLE;
        sched_enqueue_front(r);
    }
}

/* Finish r's receive phase (or reply wait) with message m. */
static void deliver(struct process *r, const struct msg *m)
{
    struct cap *slots[KEEP_MAX_RECV_SLOTS];
    /* None looked up for a message without capabilities (an interrupt's). */
    unsigned n = m->ncaps ? recv_slots(r, slots) : 0, got = 0;
    for (unsigned i = 0; i < m->ncaps && got < n; i++) {
        return_cap_lost(*slots[got]); /* overwritten: its caller hears NO_REPLY */
        *slots[got++] = m->caps[i];
    }
    u64 tag = m->label | ((u64)got << KEEP_TAG_CAPS_SHIFT) | (m->call ? KEEP_TAG_CALLED : 0);
    if (m->string && ipc_buffer_ok(r)) {
        copy_user_to_user(r->as, r->ipc_buf + KEEP_IPC_STRING, m->str_as, m->str_va, m->str_len);
        copy_to_user(r->as, r->ipc_buf + KEEP_IPC_RECV_LEN, &m->str_len, sizeof m->str_len);
        tag |= KEEP_TAG_STRING;
    }
    wake_with(r, tag, m->payload, m->words);
}

/* p's fault message to h, which waits in an open receive: what deliver()
 * does with a call that carries only its return capability, without
 * building a message (only the first receive slot matters).  False, with nothing changed, when
 * that slot has gone. */
static bool deliver_fault(struct process *h, struct process *p)
{
    struct cap *slot;
    if (h->recv_n < 1 || cspace_slot(h->as, h->recv_addr[0], &slot) != KEEP_ERR_OK)
        return false;
    return_cap_lost(*slot);
    *slot = return_cap(p);
    wake_with(h, p->fault_label | (1ULL << KEEP_TAG_CAPS_SHIFT) | KEEP_TAG_CALLED, cap_payload(p->fault_to),
              p->fault_words);
    p->wait_kind = WAIT_FAULT_REPLY;
    p->wait_target = NULL;
    return true;
}

/* The handler a fault message to `to` must go to now: `to` itself, or,
 * while that process is exported, the kpager that holds it (a KMEM fault,
 * after which the original fault happens again).  False when neither can be
 * reached (a kpager gone, or a chain of exported kpagers). */
static bool fault_route(struct process *p, struct cap *to, u64 *label, u64 words[4])
{
    for (unsigned depth = 0; depth < 4; depth++) {
        struct process *h = process_from_cap(*to);
        if (!h || h == p)
            return false;
        if (!process_is_out(h))
            return true;
        u64 num = cap_pnum(*to);
        struct process_export *x = &process_numbers[num].x;
        *to = x->account->kpager;
        if (cap_is_null(*to) || !cap_live(*to))
            return false;
        words[0] = 0;
        words[1] = x->account->free_count;
        words[2] = KEEP_KMEM_PROCESS;
        words[3] = num | x->gen << CAP_PNUM_BITS;
        *label = KEEP_LABEL_KMEM;
    }
    return false;
}

bool ipc_fault(struct process *p, struct cap to, u64 label, const u64 words_in[4])
{
    u64 words[4] = {words_in[0], words_in[1], words_in[2], words_in[3]};
    u64 first = label;
    if (!fault_route(p, &to, &label, words))
        return false;
    if (label != first && first == KEEP_LABEL_SYSCALL)
        p->regs.rip -= 2; /* the system call is reflected again after the kpager's answer */
    struct process *h = process_from_cap(to);
    p->fault_label = label;
    memcpy(p->fault_words, words, sizeof p->fault_words);
    p->fault_to = to;
    process_wait(p, WAIT_FAULT);
    if (!(h->state == KEEP_STATE_BLOCKED && h->wait_kind == WAIT_RECV && deliver_fault(h, p))) {
        p->wait_target = h;
        sendq_append(h, p);
    }
    return true;
}

void ipc_deliver_irq(struct process *r, u64 line, u64 payload)
{
    struct msg m;
    m.label = KEEP_LABEL_IRQ;
    m.payload = payload;
    m.words[0] = line;
    m.words[1] = m.words[2] = m.words[3] = 0;
    m.ncaps = 0;
    m.call = m.string = false;
    deliver(r, &m);
}

/* A message from the kernel itself (a DMA fault) to r, which receives. */
void ipc_deliver_kernel(struct process *r, u64 label, u64 payload, const u64 words[4])
{
    struct msg m = {.label = label, .payload = payload};
    memcpy(m.words, words, sizeof m.words);
    deliver(r, &m);
}

/* The reply to a fault message: go on, go on with rax set, or stop. */
static u64 fault_reply(struct process *p, u64 label, u64 word0)
{
    if (label > KEEP_REPLY_STOP)
        return KEEP_ERR_INVALID_ARG;
    return_cap_used(p);
    p->wait_kind = WAIT_NONE;
    if (label == KEEP_REPLY_STOP) {
        p->state = KEEP_STATE_STOPPED;
        return KEEP_ERR_OK;
    }
    if (label == KEEP_REPLY_RESUME_SET_RAX && p->fault_label != KEEP_LABEL_KMEM)
        p->regs.rax = word0;
    p->state = KEEP_STATE_RUNNABLE;
    sched_enqueue_front(p);
    return KEEP_ERR_OK;
}

/* Everything the send phase names, resolved and checked; changes nothing. */
static u64 build(struct process *s, u64 tag, struct msg *m)
{
    unsigned nc = (unsigned)tag_caps(tag), ns = (unsigned)tag_slots(tag);
    if (nc > KEEP_MAX_CAPS || ns > KEEP_MAX_RECV_SLOTS)
        return KEEP_ERR_INVALID_ARG;
    if ((nc || ns || (tag & KEEP_TAG_STRING)) && !ipc_buffer_ok(s))
        return KEEP_ERR_FAULT;
    for (unsigned i = 0; i < nc; i++) {
        u64 w = buf_word(s, KEEP_IPC_SEND_CAPS + 8 * i), mask = w >> 32;
        struct cap c;
        if (mask & ~(KEEP_RIGHT_ALL | KEEP_RIGHT_WEAK))
            return KEEP_ERR_INVALID_ARG;
        u64 e = cap_lookup(s->as, w & 0xffffffff, 0, 0, &c);
        if (e)
            return e;
        if (cap_type(c) == KEEP_TYPE_RETURN) /* never copied: one caller, one capability */
            return KEEP_ERR_INVALID_ARG;
        m->caps[m->ncaps++] = cap_mask(c, mask);
    }
    struct cap *slots[KEEP_MAX_RECV_SLOTS]; /* our own, for what comes back */
    u64 e = ns ? resolve_slots(s, ns, slots) : KEEP_ERR_OK; /* a send names none */
    if (e)
        return e;
    if (tag & KEEP_TAG_STRING) {
        m->string = true;
        m->str_as = s->as;
        m->str_va = s->ipc_buf + KEEP_IPC_STRING;
        m->str_len = buf_word(s, KEEP_IPC_SEND_LEN);
        if (m->str_len > KEEP_MAX_STRING)
            return KEEP_ERR_INVALID_ARG;
    }
    m->label = tag & KEEP_TAG_LABEL_MASK;
    m->words[0] = s->regs.rdx;
    m->words[1] = s->regs.r8;
    m->words[2] = s->regs.r9;
    m->words[3] = s->regs.r10;
    return KEEP_ERR_OK;
}

/* A sender waiting in r's queue: run its invocation again, for it.  If it
 * is no longer a send to r (its capability space changed meanwhile), it
 * runs again by itself instead, as the process. */
static void restart_sender(struct process *s, struct process *r)
{
    s->wait_kind = WAIT_NONE;
    s->wait_target = NULL;
    s->state = KEEP_STATE_RUNNABLE;
    sched_enqueue(s);
    s->regs.rip += 2;
    u64 e = invoke_run(s, r);
    if (e == KEEP_ERR_NO_CAPPAGE && kmem_cap_miss_rebuildable())
        e = INV_RESTART; /* it runs again by itself, and rebuilds the tables then */
    if (e == INV_RESTART)
        s->regs.rip -= 2;
    else if (e != INV_BLOCKED && e != INV_DONE)
        s->regs.rax = e;
}

/* w (a wrapper's frame) is being revoked: every sender queued in r's queue
 * through it fails at once with STALE, as its invocation would when run
 * again.  O(queued senders of r), whatever was derived from w. */
void ipc_wrapper_revoked(struct process *r, u64 w)
{
    struct process *s = r->sendq_head;
    while (s) {
        struct process *next = s->q_next;
        bool via = false;
        for (unsigned i = 0; i < s->nvia; i++)
            via |= s->via[i] == w;
        if (via && s->wait_kind == WAIT_SEND) {
            sendq_remove(r, s);
            s->regs.rip += 2; /* past the syscall: the invocation is over */
            s->regs.rax = KEEP_ERR_STALE;
            process_make_runnable(s);
        }
        s = next;
    }
}

u64 ipc_receive(struct process *p, u64 tag, u64 timeout_ms)
{
    unsigned ns = (unsigned)tag_slots(tag);
    if (ns > KEEP_MAX_RECV_SLOTS || tag_caps(tag) || (tag & (KEEP_TAG_STRING | KEEP_TAG_SEND_NONBLOCK)) ||
        timeout_ms > MAX_TIMEOUT_MS)
        return KEEP_ERR_INVALID_ARG;
    if (ns && !ipc_buffer_ok(p))
        return KEEP_ERR_FAULT;
    struct cap *slots[KEEP_MAX_RECV_SLOTS];
    u64 e = resolve_slots(p, ns, slots);
    if (e)
        return e;
    process_wait(p, WAIT_RECV);
    p->recv_n = ns;
    p->regs.rsi = tag;
    if (p->irq_pending && interrupt_deliver_pending(p))
        return INV_DONE;
    struct process *s = p->sendq_head;
    while (s && p->wait_kind == WAIT_RECV) {
        if (s->wait_kind == WAIT_FAULT && !can_take_call(p)) {
            s = s->q_next; /* a fault message needs a slot for its return capability */
            continue;
        }
        sendq_remove(p, s);
        if (s->wait_kind == WAIT_FAULT)
            (void)deliver_fault(p, s); /* can_take_call(p) held */
        else
            restart_sender(s, p);
        s = p->sendq_head;
    }
    if (p->wait_kind != WAIT_RECV)
        return INV_DONE;
    if (tag & KEEP_TAG_RECV_NONBLOCK) {
        p->wait_kind = WAIT_NONE;
        p->state = KEEP_STATE_RUNNABLE;
        sched_enqueue_front(p);
        return KEEP_ERR_WOULD_BLOCK;
    }
    if (timeout_ms)
        sleep_insert(p, deadline_in_ms(timeout_ms));
    return INV_BLOCKED;
}

void ipc_timeout(struct process *p)
{
    if (p->wait_kind == WAIT_REPLY)
        return_cap_used(p); /* a reply that comes later finds its capability stale */
    p->regs.rax = p->wait_kind == WAIT_RECV || p->wait_kind == WAIT_REPLY ? KEEP_ERR_TIMEOUT : KEEP_ERR_OK;
    process_make_runnable(p);
}

u64 ipc_send(struct invocation *inv, u64 mode)
{
    struct process *s = inv->caller, *r;
    u64 tag = inv->tag;
    bool reply = cap_type(inv->cap) == KEEP_TYPE_RETURN;
    struct msg m; /* build() fills label, words and the string */
    m.payload = 0;
    m.ncaps = 0;
    m.call = m.string = false;
    if (reply) {
        if (mode == KEEP_TAG_MODE_CALL)
            return KEEP_ERR_INVALID_METHOD; /* a reply is not a call */
        r = return_target(inv->cap);
        m.ncaps = 0;
    } else {
        if (!inv_has(inv, KEEP_RIGHT_WRITE) ||
            (mode == KEEP_TAG_MODE_CALL && !inv_has(inv, KEEP_RIGHT_CALL)))
            return KEEP_ERR_NO_RIGHTS;
        r = process_from_cap(inv->cap);
        if (mode == KEEP_TAG_MODE_CALL) {
            m.call = true;
            m.caps[m.ncaps++] = return_cap(s);
        }
    }
    /* A process its kpager exported: whoever needs it asks the kpager. */
    if (unlikely(process_is_out(r)))
        return kmem_need_process(inv, cap_pnum(inv->cap));
    u64 e = build(s, tag, &m);
    if (e)
        return e;
    /* The receive phase's own arguments (a call's reply wait too), checked
     * before the send changes anything. */
    if ((mode == KEEP_TAG_MODE_SEND_RECV || m.call) && s->regs.rax > MAX_TIMEOUT_MS)
        return KEEP_ERR_INVALID_ARG;

    if (reply && r->wait_kind == WAIT_FAULT_REPLY) {
        if ((e = fault_reply(r, m.label, m.words[0])))
            return e;
    } else if (reply) {
        if (unlikely(s->passive))
            sched_charge(); /* up to its reply, its time is the caller's */
        return_cap_used(r);
        deliver(r, &m);
    } else {
        if (r->state != KEEP_STATE_BLOCKED || r->wait_kind != WAIT_RECV) {
            if (tag & KEEP_TAG_SEND_NONBLOCK)
                return KEEP_ERR_WOULD_BLOCK;
            process_block(s, WAIT_SEND);
            s->wait_target = r;
            s->nvia = inv->nvia; /* the wrappers it came through: their revocation wakes it */
            memcpy(s->via, inv->via, sizeof s->via);
            sendq_append(r, s);
            return INV_BLOCKED;
        }
        if (m.call && !can_take_call(r))
            return KEEP_ERR_BAD_STATE;
        m.payload = cap_payload(inv->cap);
        if (m.call && unlikely(r->passive))
            sched_lend(r, s); /* its time is s's from now until the reply */
        deliver(r, &m);
        if (m.call) {
            process_wait(s, WAIT_REPLY);
            s->recv_n = (u32)tag_slots(tag); /* build() noted their addresses */
            if (s->regs.rax) /* the reply's time-out */
                sleep_insert(s, deadline_in_ms(s->regs.rax));
            return INV_BLOCKED;
        }
    }
    if (mode != KEEP_TAG_MODE_SEND_RECV)
        return KEEP_ERR_OK;
    /* Receive phase.  On a sender's behalf, let it start again as a pure
     * receive rather than receive from here (which could nest). */
    u64 rtag = tag & ~((KEEP_TAG_COUNT_MASK << KEEP_TAG_CAPS_SHIFT) | KEEP_TAG_STRING |
                       KEEP_TAG_SEND_NONBLOCK | (3ULL << KEEP_TAG_MODE_SHIFT));
    rtag |= KEEP_TAG_MODE_RECV << KEEP_TAG_MODE_SHIFT;
    if (inv->on_behalf) {
        s->regs.rsi = rtag;
        s->regs.rip -= 2;
        return INV_BLOCKED;
    }
    return ipc_receive(s, rtag, s->regs.rax);
}
