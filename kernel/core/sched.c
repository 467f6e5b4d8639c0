/* Scheduling: one circular run queue per priority and a bitmap of the
 * non-empty ones.  The running process stays at the head of its queue;
 * the timer rotates it to the tail when its slice ends while others of its
 * priority wait.  A process with a budget is charged the TSC time from
 * when it was last charged at every kernel exit (each switch, each timer
 * interrupt); one that has spent its budget waits in the parked list until
 * its period ends.  The one-shot timer is armed for the nearest event:
 * the first sleeper's deadline, the first parked process's period end, the
 * running process's budget end and its slice end.
 *
 * Lending: a passive process serving a call runs on its caller's budget
 * (its scheduling context: sched_context), found afresh at every charge
 * from the number and reply word of the call it received last, so that no
 * pointer to the caller is kept: the reply, the caller's end or the loss
 * of the return capability changes the reply word, and the lending ends
 * with it. */
#include "latency.h"
#include "sched.h"
#include "budget.h"
#include "arch.h"
#include "ipc.h"
#include "keep/abi.h"
#include "lib.h"
#include "paging.h"
#include "process.h"
#include "x86.h"

/* One ring per priority, through a sentinel that never runs, so that a
 * ring is never empty of links: putting a process in another's place (the
 * IPC fast path) is the same four stores whoever else is runnable. */
struct process sched_ring[PRIO_LEVELS];
u32 sched_nonempty; /* bit i: ring i holds a process */
/* The FPU state the CPU holds belongs to this save area: a process's, or
 * nobody's (at boot, and once its process is destroyed). */
static struct fpu_state fpu_nobody;
struct fpu_state *sched_fpu_live = &fpu_nobody;
u8 sched_bases_live;                /* CR4.FSGSBASE is on */
static struct process *base_owner; /* whose fs/gs bases the registers hold */
static struct process *sleepers; /* ordered by deadline */
/* Runnable processes whose budget is spent, by the end of their period;
 * sched_dequeue takes one out as from a ring (its priority's ring is
 * untouched, so the bitmap stays right). */
static struct process parked;
static u64 run_since;               /* TSC when the running process was last charged */
/* A slice of priority sched_slice_prio is armed (at slice_end) once a process
 * runs with others of its priority runnable; when it ends, the head of
 * that ring (the one that ran there last) goes to its tail, and the next
 * one run there gets a new slice.  A higher priority's process running in
 * between does not restart it. */
bool sched_slice_on;
u8 sched_slice_prio;
static u64 slice_end;

/* Does p, about to run, need a slice that is not armed? */
static bool needs_slice(const struct process *p)
{
    return p->rq_next != p->rq_prev && !(sched_slice_on && sched_slice_prio == p->prio); /* others share its priority */
}
/* The timer fired: the next kernel exit arms it for the nearest event.
 * Otherwise each event arms it when it arises (a sleeper, a parked
 * process, a switch, a peer joining the running process's priority). */
static bool rearm = true;

void sched_init(void)
{
    for (unsigned i = 0; i < PRIO_LEVELS; i++)
        sched_ring[i].rq_next = sched_ring[i].rq_prev = &sched_ring[i];
    parked.rq_next = parked.rq_prev = &parked;
}

/* Put p between a and b, neighbours in a ring. */
static void link_between(struct process *p, struct process *a, struct process *b)
{
    p->rq_prev = a;
    p->rq_next = b;
    a->rq_next = p;
    b->rq_prev = p;
}

static u64 period_end(const struct process *p) { return p->period_start + p->period; }

/* The caller whose call passive p serves, while that call is outstanding. */
static struct process *client_of(const struct process *p)
{
    if (!p->passive || !p->client)
        return NULL;
    const struct process_number *n = &process_numbers[p->client - 1];
    struct process *c = n->p;
    if (!c || process_is_out(c) || c->wait_kind != WAIT_REPLY || n->reply != p->client_reply.w0 ||
        n->reply_hi != p->client_reply.w1)
        return NULL;
    return c;
}

/* Whose budget p runs on: through passive servers' outstanding calls, the
 * furthest caller that has a budget; p itself when none has (a caller
 * without a budget lends nothing).  A chain of calls cannot close on
 * itself (a process waiting for a reply receives no call), and is followed
 * LEND_DEPTH calls at most. */
#define LEND_DEPTH 8
static __attribute__((noinline)) struct process *lender(struct process *p)
{
    struct process *sc = p, *q = p;
    for (unsigned d = 0; d < LEND_DEPTH && (q = client_of(q)); d++)
        if (q->period)
            sc = q;
    return sc;
}

static ALWAYS_INLINE struct process *sched_context(struct process *p)
{
    return likely(!p->passive) ? p : lender(p);
}

void sched_lend(struct process *server, const struct process *caller)
{
    server->client = caller->num + 1;
    server->client_reply = return_cap(caller);
}

/* A new period for sc if its own has ended. */
static void renew(struct process *sc, u64 now)
{
    if (now - sc->period_start >= sc->period) { /* also a TSC of another boot (a restored process) */
        sc->period_start = now;
        sc->used = 0;
    }
}

/* A process with a budget about to be queued: a new period if its own has
 * ended; parked (true) if its budget for this one is spent. */
static bool park_if_spent(struct process *p)
{
    struct process *sc = p; /* timed: a budget, or passive */
    if (unlikely(p->passive) && !(sc = lender(p))->period)
        return false;
    renew(sc, rdtsc());
    if (sc->used < sc->budget)
        return false;
    p->park_end = period_end(sc);
    struct process *q = parked.rq_next;
    while (q != &parked && q->park_end <= p->park_end)
        q = q->rq_next;
    link_between(p, q->rq_prev, q);
    apic_arm(p->park_end);
    return true;
}

static void start_slice(u64 now, unsigned prio)
{
    sched_slice_on = true;
    sched_slice_prio = (u8)prio;
    slice_end = now + TIME_SLICE_MS * cpu0.tsc_khz;
    apic_arm(slice_end);
}

/* p joins a ring: a slice begins if the running process has a peer now. */
static void joined(struct process *p)
{
    sched_nonempty |= 1u << p->prio;
    struct process *c = cpu0.current;
    if (c && c != p && c->prio == p->prio && !(sched_slice_on && sched_slice_prio == p->prio))
        start_slice(rdtsc(), p->prio);
}

void sched_enqueue(struct process *p)
{
    if (unlikely(p->timed) && park_if_spent(p))
        return;
    struct process *s = &sched_ring[p->prio];
    link_between(p, s->rq_prev, s);
    joined(p);
}

void sched_enqueue_front(struct process *p)
{
    if (unlikely(p->timed) && park_if_spent(p))
        return;
    struct process *s = &sched_ring[p->prio];
    link_between(p, s, s->rq_next);
    joined(p);
}

void sched_forget(struct process *p)
{
    if (sched_fpu_live == &p->fpu)
        sched_fpu_live = &fpu_nobody;
    if (base_owner == p)
        base_owner = NULL;
    if (cpu0.current == p)
        cpu0.current = NULL;
}

void sched_save(struct process *p)
{
    if (sched_fpu_live == &p->fpu) {
        fpu_save(&p->fpu);
        sched_fpu_live = &fpu_nobody;
    }
    if (base_owner == p) {
        if (sched_bases_live) {
            p->fs_base = rdfsbase();
            p->gs_base = rdgsbase();
        }
        base_owner = NULL;
    }
}

void sched_flush_live(bool (*whose)(const struct process *p))
{
    if (sched_fpu_live != &fpu_nobody) {
        struct process *p = (struct process *)((char *)sched_fpu_live - __builtin_offsetof(struct process, fpu));
        if (whose(p) && p != cpu0.current) {
            fpu_save(&p->fpu);
            sched_fpu_live = &fpu_nobody;
        }
    }
    if (base_owner && whose(base_owner) && base_owner != cpu0.current)
        sched_save(base_owner);
}

void sleep_insert(struct process *p, u64 deadline)
{
    struct process **link = &sleepers;
    while (*link && (*link)->deadline <= deadline)
        link = &(*link)->sleep_next;
    p->deadline = deadline ? deadline : 1;
    p->sleep_next = *link;
    *link = p;
    apic_arm(p->deadline);
}

void sleep_remove(struct process *p)
{
    if (!p->deadline)
        return;
    struct process **link = &sleepers;
    while (*link != p)
        link = &(*link)->sleep_next;
    *link = p->sleep_next;
    p->sleep_next = NULL;
    p->deadline = 0;
}

void sched_dequeue(struct process *p)
{
    p->rq_prev->rq_next = p->rq_next;
    p->rq_next->rq_prev = p->rq_prev;
    struct process *s = &sched_ring[p->prio];
    if (s->rq_next == s)
        sched_nonempty &= ~(1u << p->prio);
    p->rq_next = p->rq_prev = NULL;
}

/* To the tail of its ring, which it stays in: the bitmap, its budget and
 * the slice are as they were. */
void sched_rotate(struct process *p)
{
    struct process *s = &sched_ring[p->prio];
    p->rq_prev->rq_next = p->rq_next;
    p->rq_next->rq_prev = p->rq_prev;
    link_between(p, s->rq_prev, s);
}

/* The timer: wake the sleepers whose deadline has come, give the parked
 * processes whose period has ended a new one, end the slice if it is over.
 * The running process's budget is charged on the way out (kernel_exit). */
void sched_timer(void)
{
    apic_timer_fired();
    rearm = true;
    u64 now = rdtsc();
    while (sleepers && sleepers->deadline <= now) {
        struct process *s = sleepers;
        sleep_remove(s);
        ipc_timeout(s);
    }
    while (parked.rq_next != &parked && parked.rq_next->park_end <= now) {
        struct process *q = parked.rq_next;
        sched_dequeue(q);
        sched_enqueue(q); /* a new period: runnable again */
    }
    /* The slice is its ring's: the IPC fast path hands it on. */
    if (sched_slice_on && now >= slice_end) {
        sched_slice_on = false;
        struct process *s = &sched_ring[sched_slice_prio];
        if (s->rq_next != s)
            sched_rotate(s->rq_next);
    }
}

/* Charge the running process, leaving the kernel, for its time since it
 * was last charged; park it if that spends its budget (or the one it runs
 * on: sched_context), or if that was spent already.  What it runs past
 * its budget before the interrupt comes is not charged.  Its budget's end
 * stays where it was armed (run_since and used move together). */
static void charge(void)
{
    struct process *p = cpu0.current;
    if (likely(!p || !p->timed))
        return;
    u64 now = rdtsc(), ran = now - run_since;
    run_since = now;
    struct process *sc = p; /* timed: a budget, or passive */
    if (unlikely(p->passive) && !(sc = lender(p))->period) /* or the caller it serves */
        return;
    if (now - sc->period_start >= sc->period) { /* its period ended while it ran */
        sc->period_start = now;
        sc->used = 0;
        apic_arm(now + sc->budget);
        return;
    }
    /* Spent already: a passive server woken by a call whose caller's
     * budget the call's own exit then spent. */
    if (sc->used < sc->budget) {
        sc->used += ran;
        if (sc->used < sc->budget)
            return;
        sc->used = sc->budget;
        sc->ran_out++;
    }
    if (p->state == KEEP_STATE_RUNNABLE) {
        sched_dequeue(p);
        sched_enqueue(p); /* parks it */
    }
}

void sched_charge(void) { charge(); }

/* Arm the timer for the nearest event once p runs (NULL: idle). */
static void arm(u64 now, struct process *p)
{
    rearm = false;
    u64 next = sleepers ? sleepers->deadline : ~0ULL;
    if (parked.rq_next != &parked && parked.rq_next->park_end < next)
        next = parked.rq_next->park_end;
    struct process *sc = p && p->timed ? sched_context(p) : NULL;
    if (sc && sc->period && now + (sc->budget - sc->used) < next)
        next = now + (sc->budget - sc->used);
    if (p && needs_slice(p)) {
        sched_slice_on = true;
        sched_slice_prio = p->prio;
        slice_end = now + TIME_SLICE_MS * cpu0.tsc_khz;
    }
    if (sched_slice_on && slice_end < next)
        next = slice_end;
    apic_arm(next);
}

void sched_budget_reset(struct process *p)
{
    p->budget = p->budget_us * cpu0.tsc_khz / 1000;
    p->period = p->period_us * cpu0.tsc_khz / 1000;
    if (p->period_us && !p->budget)
        p->budget = 1;
    p->used = 0;
    p->period_start = rdtsc();
}

u64 sched_set_budget(struct process *p, const struct process *caller, u64 budget_us, u64 period_us)
{
    u64 e = budget_refusal(budget_us, period_us, caller->budget_us, caller->period_us);
    if (e)
        return e;
    p->budget_us = (u32)budget_us;
    p->period_us = (u32)period_us;
    p->ran_out = 0;
    sched_budget_reset(p);
    p->timed = p->period | p->passive;
    if (p == cpu0.current) {
        run_since = p->period_start;
        if (p->period)
            apic_arm(run_since + p->budget);
    } else if (p->state == KEEP_STATE_RUNNABLE) { /* out of the parked list, if there */
        sched_dequeue(p);
        sched_enqueue(p);
    }
    return KEEP_ERR_OK;
}

u64 sched_set_passive(struct process *p, const struct process *caller, u64 on, u64 *was)
{
    u64 e = passive_refusal(on, caller->period_us);
    if (e)
        return e;
    if (p == cpu0.current)
        charge(); /* what it ran so far, to whom it ran for */
    *was = p->passive;
    p->passive = (u8)on;
    p->timed = p->period | p->passive;
    p->client = 0; /* it lends from the next call it receives */
    if (p->state == KEEP_STATE_RUNNABLE) { /* out of the parked list, if there */
        sched_dequeue(p);
        if (p == cpu0.current)
            sched_enqueue_front(p);
        else
            sched_enqueue(p);
    }
    return KEEP_ERR_OK;
}

void sched_budget(const struct process *p, u64 res[4])
{
    res[0] = p->budget_us;
    res[1] = p->period_us;
    res[2] = p->period && rdtsc() - p->period_start < p->period ? p->used * 1000 / cpu0.tsc_khz : 0;
    res[3] = p->ran_out;
}

u64 sched_cpu_ns(const struct process *p)
{
    u64 t = p->cpu_time, khz = cpu0.tsc_khz;
    if (p == cpu0.current)
        t += rdtsc();
    return t / khz * 1000000 + t % khz * 1000000 / khz;
}

static struct process *pick(void)
{
    if (!sched_nonempty)
        return NULL;
    return sched_ring[31 - __builtin_clz(sched_nonempty)].rq_next;
}

/* The fs/gs bases (seed 004's SFI points %gs at a fault domain).  CR4.FSGSBASE
 * is on only while a process that uses the instructions runs (trap.c marks
 * it on its first one), so the bases are saved and written only when such
 * a process comes or goes: every other switch pays one test.  Others run
 * with both bases 0 and the instructions off, so they can neither see nor
 * change anybody's bases unnoticed. */
void sched_switch_bases(struct process *p)
{
    if (sched_bases_live && base_owner) {
        base_owner->fs_base = rdfsbase();
        base_owner->gs_base = rdgsbase();
    }
    if (p->uses_bases) {
        if (!sched_bases_live)
            write_cr4(read_cr4() | CR4_FSGSBASE);
        wrfsbase(p->fs_base);
        wrgsbase(p->gs_base);
        sched_bases_live = 1;
        base_owner = p;
    } else {
        wrfsbase(0);
        wrgsbase(0);
        write_cr4(read_cr4() & ~CR4_FSGSBASE);
        sched_bases_live = 0;
        base_owner = NULL;
    }
}

static void switch_to(struct process *p)
{
    sched_switch_time(cpu0.current, p);
    sched_switch_to(p);
}

bool sched_is_highest(unsigned prio, struct process *leaving)
{
    u32 runnable = sched_nonempty;
    if (leaving->rq_next == leaving->rq_prev) /* alone in its ring: both are the sentinel */
        runnable &= ~(1u << leaving->prio);
    return (runnable >> prio) <= 1;
}

/* p is to run after another, or after the timer fired, and has a budget,
 * or a peer and no slice armed (or the timer fired): its charge starts
 * now, and the timer is armed for its budget's and its slice's end. */
static __attribute__((noinline)) void start_running(struct process *p)
{
    u64 now = rdtsc();
    run_since = now;
    if (rearm) {
        arm(now, p);
        return;
    }
    struct process *sc = sched_context(p);
    if (sc->period)
        apic_arm(now + (sc->budget - sc->used));
    if (needs_slice(p))
        start_slice(now, p->prio);
}

NORETURN void kernel_exit(void)
{
    charge();
    struct process *p;
    while (!(p = pick())) {
        if (cpu0.current) /* it has left: its CPU time is whole (sched_switch_cpu) */
            cpu0.current->cpu_time += rdtsc();
        cpu0.current = NULL;
        arm(rdtsc(), NULL);
        LAT_EXIT(); /* interrupts come in from here */
        sti_hlt(); /* interrupts are handled in trap_from_kernel, then we look again */
        cli();
    }
    /* A passive process may run on another budget than when it entered
     * (a reply, a call received): its budget's end is armed again. */
    if (unlikely(p != cpu0.current || rearm || p->passive) &&
        (rearm || p->timed || needs_slice(p)))
        start_running(p);
    /* Still the same process: nothing to switch (a null invocation's exit). */
    if (p != cpu0.current || &p->fpu != sched_fpu_live || p->as != cpu0.loaded_as)
        switch_to(p);
    LAT_EXIT();
    arch_return_to_user(&p->regs);
}

u64 sched_check(u64 *checked)
{
    u64 bad = 0;
    for (unsigned prio = 0; prio < PRIO_LEVELS; prio++) {
        struct process *h = &sched_ring[prio];
        if ((h->rq_next != h) != !!(sched_nonempty & (1u << prio))) {
            kprintf("invariant: run queue %u and the bitmap disagree\n", prio);
            bad++;
        }
        unsigned n = 0;
        for (struct process *p = h->rq_next; p != h && n < 100000; p = p->rq_next, n++) {
            (*checked)++;
            if (p->state != KEEP_STATE_RUNNABLE || p->prio != prio || p->rq_next->rq_prev != p) {
                kprintf("invariant: pid %lu in run queue %u: state %u prio %u\n", p->pid, prio, p->state,
                        p->prio);
                bad++;
            }
        }
    }
    for (struct process *p = parked.rq_next; p != &parked; p = p->rq_next) {
        (*checked)++;
        /* A passive process parked on a caller's budget may outlive the
         * call (the caller gone): it waits out that period all the same. */
        if (p->state != KEEP_STATE_RUNNABLE || !p->timed ||
            (!p->passive && (p->used < p->budget || p->park_end != period_end(p))) ||
            p->rq_next->rq_prev != p || (p->rq_next != &parked && p->rq_next->park_end < p->park_end)) {
            kprintf("invariant: pid %lu parked: state %u\n", p->pid, p->state);
            bad++;
        }
    }
    for (struct process *p = sleepers; p; p = p->sleep_next) {
        (*checked)++;
        /* A sleep, a receive with a time-out, a call's reply wait with one. */
        bool timed = p->wait_kind == WAIT_SLEEP || p->wait_kind == WAIT_RECV || p->wait_kind == WAIT_REPLY;
        if (p->state != KEEP_STATE_BLOCKED || !timed ||
            (p->sleep_next && p->sleep_next->deadline < p->deadline)) {
            kprintf("invariant: pid %lu on the timer list: state %u wait %u\n", p->pid, p->state, p->wait_kind);
            bad++;
        }
    }
    return bad;
}
