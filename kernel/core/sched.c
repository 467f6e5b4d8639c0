/* Scheduling: one circular run queue per priority and a bitmap of the
 * non-empty ones.  The running process stays at the head of its queue;
 * the timer rotates it to the tail when its slice ends. */
#include "sched.h"
#include "arch.h"
#include "keep/abi.h"
#include "lib.h"
#include "paging.h"
#include "process.h"
#include "x86.h"

static struct process *queue[PRIO_LEVELS];
static u32 nonempty; /* bit i: queue[i] is not empty */
static struct aspace *loaded_as;
static struct process *fpu_owner;

void sched_enqueue(struct process *p)
{
    struct process **q = &queue[p->prio];
    if (!*q) {
        p->rq_next = p->rq_prev = p;
        *q = p;
        nonempty |= 1u << p->prio;
    } else {
        p->rq_next = *q;
        p->rq_prev = (*q)->rq_prev;
        (*q)->rq_prev->rq_next = p;
        (*q)->rq_prev = p;
    }
    p->slice = TIME_SLICE_TICKS;
}

void sched_dequeue(struct process *p)
{
    struct process **q = &queue[p->prio];
    if (p->rq_next == p) {
        *q = NULL;
        nonempty &= ~(1u << p->prio);
    } else {
        p->rq_prev->rq_next = p->rq_next;
        p->rq_next->rq_prev = p->rq_prev;
        if (*q == p)
            *q = p->rq_next;
    }
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
    struct process *p = cpu0.current;
    if (p && p->state == KEEP_STATE_RUNNABLE && --p->slice == 0)
        sched_rotate(p);
}

static struct process *pick(void)
{
    if (!nonempty)
        return NULL;
    return queue[31 - __builtin_clz(nonempty)];
}

static void switch_to(struct process *p)
{
    if (fpu_owner != p) {
        if (fpu_owner)
            fpu_save(&fpu_owner->fpu);
        fpu_restore(&p->fpu);
        fpu_owner = p;
    }
    if (loaded_as != p->as || p->as->tlb_stale) {
        switch_address_space(p->as->pml4_pa, p->as->pcid, p->as->tlb_stale);
        p->as->tlb_stale = false;
        loaded_as = p->as;
    }
    cpu_set_kernel_entry_stack(&p->regs);
    cpu0.current = p;
}

NORETURN void kernel_exit(void)
{
    struct process *p;
    while (!(p = pick())) {
        cpu0.current = NULL;
        sti_hlt(); /* interrupts are handled in trap_from_kernel, then we look again */
        cli();
    }
    switch_to(p);
    arch_return_to_user(&p->regs);
}
