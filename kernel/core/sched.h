/* Fixed-priority preemptive round-robin scheduling, with budgets: a
 * process given BUDGET_US of every PERIOD_US runs no more than that, and
 * waits parked, whatever its priority, for its next period once it has
 * spent it.  Time is the TSC's; the timer is one-shot (apic_arm). */
#ifndef KEEP_SCHED_H
#define KEEP_SCHED_H

#include "arch.h"
#include "aspace.h"
#include "process.h"
#include "types.h"
#include "x86.h"

#define TIME_SLICE_MS 50 /* among equals of one priority */

void sched_enqueue(struct process *p); /* at the tail of its priority */
void sched_enqueue_front(struct process *p); /* to run next in its priority */
void sched_forget(struct process *p);  /* a destroyed process */
/* Time-outs (SLEEP, receive) are whole milliseconds up to a day. */
#define MAX_TIMEOUT_MS 86400000ULL
/* The TSC value ms milliseconds from now. */
static inline u64 deadline_in_ms(u64 ms) { return rdtsc() + ms * cpu0.tsc_khz; }
/* Time since the timer started, in TSC ticks. */
static inline u64 time_now(void) { return rdtsc() - cpu0.tsc_boot; }

/* The timer list: processes sleeping or receiving with a time-out, by
 * deadline (a TSC value). */
void sleep_insert(struct process *p, u64 deadline);
void sleep_remove(struct process *p); /* no-op when not on the list */
u64 sched_check(u64 *checked);         /* CHECK_INVARIANTS */
void sched_dequeue(struct process *p);
void sched_rotate(struct process *p);  /* to the tail: yield, slice end */
void sched_timer(void); /* the timer interrupt */
/* PROCESS.SET_BUDGET by caller on p, and BUDGET's four results. */
u64 sched_set_budget(struct process *p, const struct process *caller, u64 budget_us, u64 period_us);
void sched_budget(const struct process *p, u64 res[4]);
/* PROCESS.SET_PASSIVE by caller on p (*was: what it was). */
u64 sched_set_passive(struct process *p, const struct process *caller, u64 on, u64 *was);
/* Passive server has received caller's call: it runs on the caller's
 * budget until that call's return capability is used or lost. */
void sched_lend(struct process *server, const struct process *caller);
/* Charge the running process now (a passive server about to reply: its
 * time so far is still the caller's). */
void sched_charge(void);
/* Budget and period in this boot's TSC ticks, a new period begun. */
void sched_budget_reset(struct process *p);
/* The nanoseconds p has run (the time the CPU was its, in user mode and
 * in the kernel on its behalf), to now if it runs. */
u64 sched_cpu_ns(const struct process *p);
void sched_init(void); /* empty rings, before the first process */
/* Move p's state out of the CPU (FPU, fs/gs bases) into p: p leaves the kernel. */
void sched_save(struct process *p);
/* Save the FPU state and fs/gs bases the CPU holds for a process other than
 * the current one for which whose() is true (a checkpoint's capture). */
void sched_flush_live(bool (*whose)(const struct process *p));
/* What the IPC fast path inlines (sched.c owns these): the run queues,
 * the bitmap of the non-empty ones and the process whose FPU state the CPU
 * holds; sched_is_highest: is no process runnable above prio once the
 * running process `leaving` has blocked? */
extern u32 sched_nonempty;
extern struct fpu_state *sched_fpu_live; /* where the CPU's FPU state belongs */
extern u8 sched_bases_live;
bool sched_is_highest(unsigned prio, struct process *leaving);
/* The rings' sentinels (ring i's first process is sched_ring[i].rq_next,
 * the sentinel itself when it is empty) and the slice armed, if any: the
 * notification fast path queues and picks as sched.c would. */
extern struct process sched_ring[PRIO_LEVELS];
extern bool sched_slice_on;
extern u8 sched_slice_prio;
static ALWAYS_INLINE bool sched_slice_armed(unsigned prio) { return sched_slice_on && sched_slice_prio == prio; }

/* Give the CPU's fs/gs bases to p (saving the previous owner's). */
void sched_switch_bases(struct process *p);

/* CPU time (cpu_time), before every switch from the running process
 * `from` (NULL: the CPU idled) to p: the one leaving gains the TSC value
 * now and the one coming loses it, so that each has its time run once it
 * has left (the same process again: nothing).  Nobody is charged while the
 * CPU idles (kernel_exit). */
static ALWAYS_INLINE void sched_switch_time(struct process *from, struct process *p)
{
    u64 now = rdtsc();
    if (from)
        from->cpu_time += now;
    p->cpu_time -= now;
}

/* Make p the running process once its address space is loaded: its FPU
 * state, fs/gs bases and entry stack.  The FPU and the bases change hands
 * together: a switch to the process that last ran changes neither. */
static ALWAYS_INLINE void sched_switch_cpu(struct process *p)
{
    if (sched_fpu_live != &p->fpu) {
        fpu_switch(sched_fpu_live, &p->fpu);
        sched_fpu_live = &p->fpu;
        if (unlikely(p->uses_bases | sched_bases_live))
            sched_switch_bases(p);
    }
    cpu_set_kernel_entry_stack(&p->regs);
    cpu0.current = p;
}

/* Make p the running process. */
static ALWAYS_INLINE void sched_switch_to(struct process *p)
{
    aspace_load(p->as);
    sched_switch_cpu(p);
}

/* Leave the kernel: run the highest-priority runnable process, idling with
 * interrupts on until there is one. */
NORETURN void kernel_exit(void);

/* console.c: the serial receive interrupt. */
void console_irq(void);

#endif
