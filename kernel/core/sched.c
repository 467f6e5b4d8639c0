/* Scheduling: one circular run queue per priority and a bitmap of the
 * non-empty ones.  The running process stays at the head of its queue;
 * the timer rotates it to the tail when its slice ends. */
#include "sched.h"
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
static struct process ring[PRIO_LEVELS];
u32 sched_nonempty; /* bit i: ring i holds a process */
/* The FPU state the CPU holds belongs to this save area: a process's, or
 * nobody's (at boot, and once its process is destroyed). */
static struct fpu_state fpu_nobody;
struct fpu_state *sched_fpu_live = &fpu_nobody;
u8 sched_bases_live;                /* CR4.FSGSBASE is on */
static struct process *base_owner; /* whose fs/gs bases the registers hold */
static struct process *sleepers; /* ordered by deadline */

void sched_init(void)
{
    for (unsigned i = 0; i < PRIO_LEVELS; i++)
        ring[i].rq_next = ring[i].rq_prev = &ring[i];
}

/* Put p between a and b, neighbours in a ring. */
static void link_between(struct process *p, struct process *a, struct process *b)
{
    p->rq_prev = a;
    p->rq_next = b;
    a->rq_next = p;
    b->rq_prev = p;
    sched_nonempty |= 1u << p->prio;
    p->slice = TIME_SLICE_TICKS;
}

void sched_enqueue(struct process *p)
{
    struct process *s = &ring[p->prio];
    link_between(p, s->rq_prev, s);
}

void sched_enqueue_front(struct process *p)
{
    struct process *s = &ring[p->prio];
    link_between(p, s, s->rq_next);
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
    struct process *s = &ring[p->prio];
    if (s->rq_next == s)
        sched_nonempty &= ~(1u << p->prio);
    p->rq_next = p->rq_prev = NULL;
}

void sched_rotate(struct process *p)
{
    sched_dequeue(p);
    sched_enqueue(p);
}

void sched_tick(void)
{
    cpu0.ticks++;
    while (sleepers && sleepers->deadline <= cpu0.ticks) {
        struct process *s = sleepers;
        sleep_remove(s);
        ipc_timeout(s);
    }
    struct process *p = cpu0.current;
    if (p && p->state == KEEP_STATE_RUNNABLE && --p->slice == 0)
        sched_rotate(p);
}

static struct process *pick(void)
{
    if (!sched_nonempty)
        return NULL;
    return ring[31 - __builtin_clz(sched_nonempty)].rq_next;
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

static void switch_to(struct process *p) { sched_switch_to(p); }

bool sched_is_highest(unsigned prio, struct process *leaving)
{
    u32 runnable = sched_nonempty;
    if (leaving->rq_next == leaving->rq_prev) /* alone in its ring: both are the sentinel */
        runnable &= ~(1u << leaving->prio);
    return (runnable >> prio) <= 1;
}

NORETURN void kernel_exit(void)
{
    struct process *p;
    while (!(p = pick())) {
        cpu0.current = NULL;
        sti_hlt(); /* interrupts are handled in trap_from_kernel, then we look again */
        cli();
    }
    /* Still the same process: nothing to switch (a null invocation's exit). */
    if (p != cpu0.current || &p->fpu != sched_fpu_live || p->as != cpu0.loaded_as)
        switch_to(p);
    arch_return_to_user(&p->regs);
}

u64 sched_check(u64 *checked)
{
    u64 bad = 0;
    for (unsigned prio = 0; prio < PRIO_LEVELS; prio++) {
        struct process *h = &ring[prio];
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
