/* The IPC fast path: a call to a process waiting in an open receive, and a
 * reply-and-receive through a return capability to the caller waiting for
 * it, carrying data words, and on the call at most one capability and a
 * string or not; and a notification's SIGNAL and WAIT, straight back to
 * the caller or to the process that runs next.
 *
 * It handles only what needs none of the general path's machinery: no
 * string on a reply, no wrapper, no queued sender or interrupt for the
 * server, a receiver the scheduler would run next, neither with a budget
 * nor passive (timed: whose time kernel_exit charges), no slice to arm for a receiver at
 * another priority.  Each case (the
 * receiver's priority the caller's or another, a capability or none, a
 * string or none) is compiled for itself, so that the common one keeps
 * nothing it does not need.  It checks everything
 * first, and if anything does not hold it returns and the general path
 * (ipc.c) does the same invocation, or reports its error; once it starts to
 * change state it cannot fail.  Every capability is found by the MMU
 * lookup: the caller's in its own space, the receiver's slots in the
 * receiver's space after switching to it (which is undone if a slot has
 * gone).  The result is what ipc.c would produce: the same registers, the
 * same return capability, the same states and queues. */
#include "latency.h"
#include "arch.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "notification.h"
#include "probe.h"
#include "process.h"
#include "sched.h"

#define SLOTS_FIELD ((u64)KEEP_TAG_COUNT_MASK << KEEP_TAG_SLOTS_SHIFT)
#define MODE_FIELD (3ULL << KEEP_TAG_MODE_SHIFT)
/* A call: mode CALL (0), a label, no or one capability, nothing else (or
 * a string too: STRING_CALL_BITS). */
#define CALL_BITS (KEEP_TAG_LABEL_MASK | (1ULL << KEEP_TAG_CAPS_SHIFT))
#define STRING_CALL_BITS (CALL_BITS | KEEP_TAG_STRING)
/* A reply-and-receive: a label and receive slots; no capability or string. */
#define REPLY_RECV_BITS (KEEP_TAG_LABEL_MASK | SLOTS_FIELD | MODE_FIELD)

_Static_assert(KEEP_TAG_MODE_SEND_RECV - 1 == KEEP_TAG_MODE_RECV, "fast_reply_recv");
_Static_assert(KEEP_CAP_SPACE_SLOTS == 1ULL << 32, "a send_caps address is 32 bits");

/* Whether r, at s's priority, is what the scheduler picks once s has
 * blocked: nothing runnable above that priority (the common case; another
 * priority is decided out of line, by sched_is_highest). */
static ALWAYS_INLINE bool may_switch_same_prio(const struct process *r)
{
    return !(sched_nonempty >> r->prio >> 1);
}

/* One word of s's IPC buffer (mapped, or the fast path gives up). */
static ALWAYS_INLINE bool buffer_word(struct process *s, u64 off, u64 *out)
{
    return s->ipc_buf && user_probe(s->ipc_buf + off, out);
}

/* p's state and wait kind in one store of a constant (GCC merges the two
 * byte stores, but loads the merged value from memory). */
static ALWAYS_INLINE void set_state_wait(struct process *p, u8 state, enum wait_kind kind)
{
    typedef u16 __attribute__((may_alias)) u16_alias;
    _Static_assert(offsetof(struct process, wait_kind) == offsetof(struct process, state) + 1, "side by side");
    *(u16_alias *)&p->state = (u16)(state | (unsigned)kind << 8);
}

/* s stops for `kind`; r, which waited, runs now, first in its priority,
 * with the message: rax OK, rsi the tag, rdi the payload and the four
 * words of s's registers; or, when r waited for the reply to a fault
 * (resumed), with its own registers. */
static ALWAYS_INLINE NORETURN void hand_over_words(struct process *s, enum wait_kind kind, struct process *r,
                                                   u64 tag, u64 payload, bool same_prio, bool resumed,
                                                   const u64 *words)
{
    cpu0.fastpath_ipc++;
    set_state_wait(s, KEEP_STATE_BLOCKED, kind);
    set_state_wait(r, KEEP_STATE_RUNNABLE, WAIT_NONE);
    r->wait_target = NULL;
    if (same_prio) {
        /* s runs, so it heads its ring: r takes its place, which is what
         * dequeuing s and enqueuing r at the front gives.  The ring's
         * sentinel makes this the same stores whether or not others are
         * runnable at this priority: what an IPC costs does not depend on
         * them, so no neighbour can slow another's IPC. */
        struct process *next = s->rq_next, *prev = s->rq_prev;
        r->rq_next = next;
        r->rq_prev = prev;
        next->rq_prev = r;
        prev->rq_next = r;
        s->rq_next = s->rq_prev = NULL;
    } else {
        sched_dequeue(s);
        sched_enqueue_front(r);
    }
    sched_switch_time(s, r);
    sched_switch_cpu(r); /* the caller has loaded r's address space */
    LAT_EXIT(); /* what is left is the few instructions out */
    if (resumed)
        arch_return_to_user(&r->regs);
    /* r waited in a system call: the message goes straight into the CPU's
     * registers on the way out (unless WRITE_REGS has made r leave by iretq) */
    if (likely(r->regs.vector == VEC_SYSCALL)) {
        if (words)
            fastpath_exit_words(payload, tag, words, &r->regs);
        fastpath_exit(payload, tag, &s->regs, &r->regs);
    }
    struct regs *d = &r->regs;
    d->rax = KEEP_ERR_OK;
    d->rsi = tag;
    d->rdi = payload;
    d->rdx = words ? words[0] : s->regs.rdx;
    d->r8 = words ? words[1] : s->regs.r8;
    d->r9 = words ? words[2] : s->regs.r9;
    d->r10 = words ? words[3] : s->regs.r10;
    arch_return_to_user(d);
}

/* The message's words from s's registers (a call), or none (a reply that
 * resumes r). */
static ALWAYS_INLINE NORETURN void hand_over(struct process *s, enum wait_kind kind, struct process *r, u64 tag,
                                             u64 payload, bool same_prio, bool resumed)
{
    hand_over_words(s, kind, r, tag, payload, same_prio, resumed, NULL);
}

/* Might a slot whose first word is w0 hold a return capability a caller
 * still waits on?  w0 is then its number's reply word exactly (number 0's
 * matches nothing; the second word, not read here, may still differ, and
 * the general path tells).  Overwriting it would leave that caller waiting
 * for nothing: the general path ends that call with NO_REPLY. */
static ALWAYS_INLINE bool holds_live_return(u64 w0)
{
    return unlikely(process_numbers[cap_pnum((struct cap){w0, 0})].reply == w0);
}

/* The rest of a call (tag: CALL_BITS, or STRING_CALL_BITS with str)
 * through the SENDER c to r, which waits to receive and runs next; same_prio
 * and str are constants, so that each case is compiled for itself. */
static ALWAYS_INLINE void call_to(struct process *s, u64 tag, struct cap c, struct process *r, unsigned ncaps,
                                  bool str, bool same_prio)
{
    struct cap xfer;
    if (ncaps) {
        u64 w, a, w0;
        struct cap *x;
        if (!buffer_word(s, KEEP_IPC_SEND_CAPS, &w) || ((w >> 32) & ~(KEEP_RIGHT_ALL | KEEP_RIGHT_WEAK)))
            return;
        /* The address: bits 0-31, all of them valid (CAP_SPACE_SLOTS is
         * 2^32), taken with one 32-bit move (GCC masks after the shift). */
        __asm__("mov %k1, %k0" : "=r"(a) : "r"(w));
        if (cspace_loaded_slot_w0(a, &x, &w0)) /* s's space is loaded */
            return;
        xfer = (struct cap){w0, x->w1};
        /* null or stale, or a return capability (never copied): the general
         * path reports it */
        if (cap_type(xfer) == KEEP_TYPE_RETURN || !cap_live_quick(xfer))
            return;
        xfer = cap_mask(xfer, w >> 32);
    }
    /* A string: both buffers mapped writable, its length in bounds. */
    u64 len = 0;
    if (str && (!ipc_buffer_ok(s) || !ipc_buffer_ok(r) || !buffer_word(s, KEEP_IPC_SEND_LEN, &len) ||
                len > KEEP_MAX_STRING))
        return;
    /* The receiver's slots, in its own capability space (their addresses
     * were checked when its receive began). */
    struct cap *rs[2];
    u64 old0, old1 = 0; /* what the slots hold now (the probes load it) */
    aspace_load(r->as);
    if (cspace_loaded_slot_w0(r->recv_addr[0], &rs[0], &old0) ||
        (ncaps && cspace_loaded_slot_w0(r->recv_addr[1], &rs[1], &old1)) || holds_live_return(old0) ||
        (ncaps && holds_live_return(old1))) {
        aspace_load(s->as);
        return;
    }
    *rs[0] = return_cap(s);
    if (ncaps)
        *rs[1] = xfer;
    if (str) { /* through the physical window: r's space is loaded now */
        copy_user_to_user(r->as, r->ipc_buf + KEEP_IPC_STRING, s->as, s->ipc_buf + KEEP_IPC_STRING, len);
        copy_to_user(r->as, r->ipc_buf + KEEP_IPC_RECV_LEN, &len, sizeof len);
    }
    if (r->deadline)
        sleep_remove(r);
    s->recv_n = 0;
    hand_over(s, WAIT_REPLY, r,
              (tag & KEEP_TAG_LABEL_MASK) | ((u64)(1 + ncaps) << KEEP_TAG_CAPS_SHIFT) | KEEP_TAG_CALLED |
                  (str ? KEEP_TAG_STRING : 0),
              cap_payload(c), same_prio, false);
}

/* The same to a receiver at another priority, out of line. */
static __attribute__((noinline)) void call_other_prio(struct process *s, u64 tag, struct cap c, struct process *r,
                                                      unsigned ncaps, bool str)
{
    if (!sched_is_highest(r->prio, s) || (sched_nonempty >> r->prio & 1)) /* a slice to arm */
        return;
    /* A case that gives up returns, and the general path takes the call:
     * never the case without the string, which would send it without. */
    if (str)
        call_to(s, tag, c, r, ncaps, true, false);
    else
        call_to(s, tag, c, r, ncaps, false, false);
}

/* A call (tag: CALL_BITS, or STRING_CALL_BITS with str) through the SENDER
 * c; str is a constant. */
static ALWAYS_INLINE void fast_call(struct process *s, u64 tag, struct cap c, bool str)
{
    /* A time-out for the reply (rax) is the general path's. */
    if ((~cap_rights(c) & (KEEP_RIGHT_WRITE | KEEP_RIGHT_CALL)) | s->regs.rax)
        return;
    struct process *r = process_from_cap(c);
    unsigned ncaps = (tag >> KEEP_TAG_CAPS_SHIFT) & 1; /* CALL_BITS: no more than one */
    if (!r || r->state != KEEP_STATE_BLOCKED || r->wait_kind != WAIT_RECV || r->recv_n <= ncaps ||
        (r->timed | s->timed))
        return;
    if (likely(r->prio == s->prio)) {
        if (!may_switch_same_prio(r))
            return;
        if (ncaps) /* a constant in each; nor the case without the capability */
            call_to(s, tag, c, r, 1, str, true);
        else
            call_to(s, tag, c, r, 0, str, true);
    } else {
        call_other_prio(s, tag, c, r, ncaps, str);
    }
}

/* Receive slot i that s's IPC buffer (mapped) names: true and its address
 * if the slot exists in s's capability space, which is loaded. */
static ALWAYS_INLINE bool named_recv_slot(struct process *s, unsigned i, u64 *a)
{
    struct cap *x;
    return user_probe(s->ipc_buf + KEEP_IPC_RECV_SLOTS + 8 * i, a) && *a < KEEP_CAP_SPACE_SLOTS &&
           !cspace_loaded_slot(*a, &x);
}

/* Do two receive addresses have one index in their cappages?  Then they
 * may name one slot (the same address, or one cappage mapped at both),
 * and the general path decides (it refuses a slot named twice).  The low
 * byte alone: one compare, as for equal addresses. */
_Static_assert(KEEP_CAPPAGE_SLOTS == 256, "a slot's index in its cappage is the address's low byte");
static ALWAYS_INLINE bool same_index(u64 a, u64 b) { return (u8)a == (u8)b; }

/* The rest of a reply-and-receive by s to p, which waits for the reply to
 * a call (fault false) or to a fault message (fault true: p resumes) and
 * runs next; same_prio is a constant. */
static ALWAYS_INLINE void reply_recv_to(struct process *s, u64 tag, struct process *p, bool fault, bool same_prio)
{
    struct regs *g = &s->regs;
    unsigned ns = (unsigned)tag_slots(tag);
    /* The server's next receive slots, named in its IPC buffer, in its own
     * capability space (loaded: the invoked capability was found there). */
    if (ns) {
        if (!s->ipc_buf)
            return;
        if (likely(ns == 1)) { /* the return capability's */
            u64 a;
            if (!named_recv_slot(s, 0, &a))
                return;
            s->recv_addr[0] = a;
        } else if (ns == 2) { /* and one more: both words in one probe */
            u64 a0, a1;
            struct cap *x;
            if (!user_probe2(s->ipc_buf + KEEP_IPC_RECV_SLOTS, &a0, &a1) || (a0 | a1) >= KEEP_CAP_SPACE_SLOTS ||
                same_index(a0, a1) || cspace_loaded_slot(a0, &x) || cspace_loaded_slot(a1, &x))
                return;
            s->recv_addr[0] = a0;
            s->recv_addr[1] = a1;
        } else {
            if (ns > KEEP_MAX_RECV_SLOTS)
                return;
            for (unsigned i = 0; i < ns; i++) {
                u64 a;
                if (!named_recv_slot(s, i, &a))
                    return;
                for (unsigned j = 0; j < i; j++)
                    if (same_index(s->recv_addr[j], a))
                        return;
                s->recv_addr[i] = a;
            }
        }
    }
    return_cap_used(p);
    if (unlikely(p->deadline)) /* a call with a time-out: its wait is over */
        sleep_remove(p);
    s->recv_n = ns;
    if (g->rax)
        sleep_insert(s, deadline_in_ms(g->rax));
    /* As ipc.c leaves it: the same tag in RECV mode (SEND_RECV - 1). */
    g->rsi = tag - (1ULL << KEEP_TAG_MODE_SHIFT);
    if (fault && (tag & KEEP_TAG_LABEL_MASK) == KEEP_REPLY_RESUME_SET_RAX && p->fault_label != KEEP_LABEL_KMEM)
        p->regs.rax = g->rdx;
    aspace_load(p->as);
    hand_over(s, WAIT_RECV, p, tag & KEEP_TAG_LABEL_MASK, 0, same_prio, fault);
}

/* The same to a process at another priority, out of line. */
static __attribute__((noinline)) void reply_recv_other_prio(struct process *s, u64 tag, struct process *p, bool fault)
{
    if (!sched_is_highest(p->prio, s) || (sched_nonempty >> p->prio & 1)) /* a slice to arm */
        return;
    if (fault)
        reply_recv_to(s, tag, p, true, false);
    else
        reply_recv_to(s, tag, p, false, false);
}

/* A reply-and-receive by s to p (fault: as reply_recv_to). */
static ALWAYS_INLINE void reply_recv(struct process *s, u64 tag, struct process *p, bool fault)
{
    if (likely(p->prio == s->prio)) {
        if (may_switch_same_prio(p))
            reply_recv_to(s, tag, p, fault, true);
    } else {
        reply_recv_other_prio(s, tag, p, fault);
    }
}

/* A system call by s in emulation mode: the SYSCALL fault message (rax,
 * rdi, rsi, rdx) to its handler, when the handler waits in an open receive
 * at s's priority and would run next, and the slot for the fault's return
 * capability holds none that a caller still waits on.  What ipc_fault and
 * deliver_fault do then; an exported, stale or missing handler, or any
 * other case, is the general path's (every Linux system call of the
 * workhorse's processes comes this way, so this path is hot). */
static ALWAYS_INLINE void fast_reflect(struct process *s)
{
    struct cap c = s->fault_handler;
    if (cap_type(c) != KEEP_TYPE_SENDER)
        return;
    struct process *h = process_from_cap(c); /* an exported one waits in WAIT_OUT */
    if (!h || h == s || h->state != KEEP_STATE_BLOCKED || h->wait_kind != WAIT_RECV || !h->recv_n ||
        h->prio != s->prio || !may_switch_same_prio(h) || (h->timed | s->timed))
        return;
    struct cap *slot;
    u64 old;
    aspace_load(h->as);
    if (cspace_loaded_slot_w0(h->recv_addr[0], &slot, &old) || holds_live_return(old)) {
        aspace_load(s->as);
        return;
    }
    u64 *w = s->fault_words;
    w[0] = s->regs.rax;
    w[1] = s->regs.rdi;
    w[2] = s->regs.rsi;
    w[3] = s->regs.rdx;
    s->fault_label = KEEP_LABEL_SYSCALL;
    s->fault_to = c;
    s->wait_target = NULL;
    *slot = return_cap(s);
    if (h->deadline)
        sleep_remove(h);
    hand_over_words(s, WAIT_FAULT_REPLY, h, KEEP_LABEL_SYSCALL | (1ULL << KEEP_TAG_CAPS_SHIFT) | KEEP_TAG_CALLED,
                    cap_payload(c), true, false, w);
}

/* A system call in emulation mode, or with another space loaded: out of
 * line, so that the invocations' fast paths keep their registers. */
static NORETURN __attribute__((noinline)) void syscall_other(struct process *s)
{
    if (s->emulate && s->as == cpu0.loaded_as)
        fast_reflect(s);
    syscall_general(s);
}

/* The lookup of the invoked capability (rdi) that both paths use: OK, the
 * slot and its first word, or the lookup's error. */
static ALWAYS_INLINE u64 invoked_slot(struct process *s, struct cap **slot, u64 *w0)
{
    *w0 = 0;
    return s->regs.rdi >= KEEP_CAP_SPACE_SLOTS ? KEEP_ERR_OUT_OF_RANGE : cspace_loaded_slot_w0(s->regs.rdi, slot, w0);
}

/* A call with a string (tag: STRING_CALL_BITS), compiled apart so that
 * calls without one keep their registers: the lookup, the fast path if it
 * applies, else the general path. */
static NORETURN __attribute__((noinline)) void fast_call_string(struct process *s, u64 tag)
{
    struct cap *slot = NULL;
    u64 w0, e = invoked_slot(s, &slot, &w0);
    if (!e && (w0 & CAP_TYPE_MASK) == KEEP_TYPE_SENDER)
        fast_call(s, tag, (struct cap){w0, slot->w1}, true);
    syscall_general_slot(s, e, slot);
}

/* The notification fast path leaves s (which is running, neither with a
 * budget nor passive) by sysretq with its answer: rax OK, the word in
 * rdx, r8-r10 0, as invoke.c writes a kernel object's results. */
static ALWAYS_INLINE NORETURN void ntfn_answer(struct process *s, u64 word)
{
    cpu0.fastpath_ntfn++;
    LAT_EXIT();
    fastpath_exit_word(s->regs.rdi, s->regs.rsi, word, &s->regs);
}

/* p, runnable and first in its ring, runs now (what kernel_exit does when
 * it has nothing to arm: the caller has checked that). */
static ALWAYS_INLINE NORETURN void ntfn_switch(struct process *p)
{
    cpu0.fastpath_ntfn++;
    aspace_load(p->as);
    sched_switch_time(cpu0.current, p);
    sched_switch_cpu(p);
    LAT_EXIT();
    arch_return_to_user(&p->regs);
}

/* SIGNAL of n by s with bits in rdx.  Without a waiter or a binding: the
 * bits OR in and s goes on.  To a waiter that is not timed: its WAIT ends
 * where it waits (as complete_waiter in notification.c), and it joins its
 * ring at the tail (sched_enqueue); above s's priority it runs at once (s
 * stays first in its own ring), else s goes on.  Nothing to arm either way:
 * a waiter at s's priority joining it with no slice armed, which starts
 * one, is the general path's; a waiter above s finds its ring empty (s is
 * what the scheduler picked), so it has no peer to slice with, and no
 * process above it.  Anything else returns, nothing changed. */
static ALWAYS_INLINE void fast_signal(struct process *s, struct notification *n)
{
    u64 bits = s->regs.rdx;
    struct process *w = n->waiter;
    if (!bits) /* INVALID_ARG */
        return;
    if (!w) {
        if (!cap_is_null(n->bound)) /* a bound process's receive: notification_signal */
            return;
        n->word |= bits;
        ntfn_answer(s, 0);
    }
    if (w->timed || (w->prio == s->prio && !sched_slice_armed(s->prio)))
        return;
    struct regs *r = &w->regs;
    r->rip += 2; /* process_block rewound it onto the syscall */
    r->rax = KEEP_ERR_OK;
    r->rdx = n->word | bits;
    r->r8 = r->r9 = r->r10 = 0;
    n->word = 0;
    n->waiter = NULL;
    w->ntfn_wait = NULL;
    set_state_wait(w, KEEP_STATE_RUNNABLE, WAIT_NONE);
    w->wait_target = NULL;
    struct process *ring = &sched_ring[w->prio];
    w->rq_prev = ring->rq_prev;
    w->rq_next = ring;
    ring->rq_prev->rq_next = w;
    ring->rq_prev = w;
    sched_nonempty |= 1u << w->prio;
    if (w->prio > s->prio) {
        struct regs *g = &s->regs;
        g->rax = KEEP_ERR_OK;
        g->rdx = g->r8 = g->r9 = g->r10 = 0;
        ntfn_switch(w);
    }
    ntfn_answer(s, 0);
}

/* WAIT on n by s: the word if it has bits; else s blocks as wait() in
 * notification.c blocks it and the process kernel_exit would pick runs at
 * once: the next in s's ring, or the first of the highest ring below it.
 * None (the idle loop), one that is timed (its budget's end to arm), or
 * one with a peer and no slice of its priority armed, is the general
 * path's, and so is a WAIT beside another waiter (IN_USE). */
static ALWAYS_INLINE void fast_wait(struct process *s, struct notification *n)
{
    if (n->word) {
        u64 bits = n->word;
        n->word = 0;
        ntfn_answer(s, bits);
    }
    struct process *ring = &sched_ring[s->prio], *p = s->rq_next;
    bool peer;
    if (n->waiter || s->rq_prev != ring) /* s runs first in its ring */
        return;
    if (p != ring) {
        peer = p->rq_next != ring;
    } else {
        u32 below = sched_nonempty & ~(1u << s->prio);
        if (!below)
            return;
        p = sched_ring[31 - __builtin_clz(below)].rq_next;
        peer = p->rq_next != p->rq_prev;
    }
    if (p->timed || (peer && !sched_slice_armed(p->prio)))
        return;
    n->waiter = s;
    s->ntfn_wait = n;
    s->regs.rip -= 2; /* WAIT restarts unless a signal completes it */
    set_state_wait(s, KEEP_STATE_BLOCKED, WAIT_NOTIFY);
    ring->rq_next = s->rq_next;
    s->rq_next->rq_prev = ring;
    s->rq_next = s->rq_prev = NULL;
    if (ring->rq_next == ring)
        sched_nonempty &= ~(1u << s->prio);
    ntfn_switch(p);
}

/* An invocation of the NOTIFICATION in slot (tag: CALL_BITS): SIGNAL and
 * WAIT with the label alone, by a process that is not timed, through a
 * live capability with the method's right, straight to the process that
 * runs next (fast_signal, fast_wait); what they leave, and SIGNAL and WAIT
 * by a timed process, through notification_fast and kernel_exit; anything
 * else the general path's. */
static NORETURN __attribute__((noinline)) void fast_notification(struct process *s, u64 tag, const struct cap *slot)
{
    struct cap c = *slot;
    /* Live: a notification is kept in a frame (cap_live_inline's test for
     * its type, which the caller has checked). */
    const struct frame *f = frame_info(cap_pa(c));
    bool live = f && (f->version & CAP_VERSION_MASK) == cap_version(c) && !s->timed;
    struct notification *n = phys_to_virt(cap_pa(c));
    /* The right abi/keep.toml gives the method (constant indices: GCC folds
     * the table's entries to constants). */
    u64 sig = keep_method_rights(KEEP_TYPE_NOTIFICATION, KEEP_M_NOTIFICATION_SIGNAL);
    u64 wai = keep_method_rights(KEEP_TYPE_NOTIFICATION, KEEP_M_NOTIFICATION_WAIT);
    if (tag == KEEP_M_NOTIFICATION_SIGNAL) {
        if (live && (cap_rights(c) & sig) == sig)
            fast_signal(s, n);
    } else if (tag == KEEP_M_NOTIFICATION_WAIT) {
        if (live && (cap_rights(c) & wai) == wai)
            fast_wait(s, n);
    } else {
        syscall_general_slot(s, KEEP_ERR_OK, slot);
    }
    if (notification_fast(s, c, tag))
        kernel_exit(); /* s, or a waiter it woke that is to run first */
    syscall_general_slot(s, KEEP_ERR_OK, slot);
}

/* A reply-and-receive (tag: REPLY_RECV_BITS only, mode SEND_RECV) through
 * the RETURN capability c. */
static ALWAYS_INLINE void fast_reply_recv(struct process *s, u64 tag, struct cap c)
{
    if (s->regs.rax > MAX_TIMEOUT_MS || s->sendq_head || s->irq_pending)
        return;
    /* The caller it answers: the whole first word matches (the version,
     * and the WRITE right) while the caller waits for this reply. */
    struct process_number *n = &process_numbers[cap_pnum(c)];
    struct process *p = n->p;
    if (!p || n->reply != c.w0 || n->reply_hi != c.w1 || (p->timed | s->timed))
        return;
    if (likely(p->wait_kind == WAIT_REPLY))
        reply_recv(s, tag, p, false);
    /* A reply to a fault message resumes the process (RESUME, or
     * RESUME_SET_RAX: rax from word 0 unless it was a kernel-memory fault,
     * whose invocation restarts); STOP goes the general way. */
    else if (p->wait_kind == WAIT_FAULT_REPLY && (tag & KEEP_TAG_LABEL_MASK) <= KEEP_REPLY_RESUME_SET_RAX)
        reply_recv(s, tag, p, true);
}

/* The system call's C entry (entry.S): the fast path when it applies, with
 * the one lookup of the invoked capability that both paths use. */
NORETURN void syscall_dispatch(void)
{
    LAT_ENTER(LAT_SYSCALL);
    struct process *s = cpu0.current;
    u64 tag = s->regs.rsi, w0, e;
    struct cap *slot = NULL;
    /* The running process's address space is loaded (entering by syscall
     * needs its code mapped), so its capabilities are found through the
     * MMU; the fast path relies on that, so it checks. */
    if (s->emulate || s->as != cpu0.loaded_as)
        syscall_other(s);
    /* Which fast path the tag alone allows (any other tag has some bit
     * outside these, which also covers the reserved bits); each case has
     * its own copy of the lookup, so that the type it wants is a constant. */
    if (!(tag & ~CALL_BITS)) {
        e = invoked_slot(s, &slot, &w0);
        if (!e && (w0 & CAP_TYPE_MASK) == KEEP_TYPE_SENDER)
            fast_call(s, tag, (struct cap){w0, slot->w1}, false);
        if (!e && (w0 & CAP_TYPE_MASK) == KEEP_TYPE_NOTIFICATION)
            fast_notification(s, tag, slot);
    } else if (!(tag & ~REPLY_RECV_BITS) && tag_mode(tag) == KEEP_TAG_MODE_SEND_RECV) {
        e = invoked_slot(s, &slot, &w0);
        if (!e && (w0 & CAP_TYPE_MASK) == KEEP_TYPE_RETURN)
            fast_reply_recv(s, tag, (struct cap){w0, slot->w1});
    } else if (!(tag & ~STRING_CALL_BITS)) {
        fast_call_string(s, tag);
    } else if (!(tag & TAG_RESERVED) && tag_mode(tag) != KEEP_TAG_MODE_RECV) {
        e = invoked_slot(s, &slot, &w0); /* any other invocation of a capability */
    } else {
        syscall_general(s); /* an open receive, or reserved bits */
    }
    syscall_general_slot(s, e, slot);
}
