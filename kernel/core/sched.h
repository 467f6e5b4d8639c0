/* Fixed-priority preemptive round-robin scheduling. */
#ifndef KEEP_SCHED_H
#define KEEP_SCHED_H

#include "arch.h"
#include "types.h"

struct process;

#define TIME_SLICE_TICKS 5

void sched_enqueue(struct process *p); /* at the tail of its priority */
void sched_enqueue_front(struct process *p); /* to run next in its priority */
void sched_forget(struct process *p);  /* a destroyed process */
/* Time-outs (SLEEP, receive) are whole milliseconds up to a day. */
#define MAX_TIMEOUT_MS 86400000ULL
static inline u64 ms_to_ticks(u64 ms) { return (ms * TIMER_HZ + 999) / 1000; }

/* The timer list: processes sleeping or receiving with a time-out. */
void sleep_insert(struct process *p, u64 deadline_tick);
void sleep_remove(struct process *p); /* no-op when not on the list */
u64 sched_check(u64 *checked);         /* CHECK_INVARIANTS */
void sched_dequeue(struct process *p);
void sched_rotate(struct process *p);  /* to the tail: yield, slice end */
void sched_tick(void);
/* For the IPC fast path: load an address space (and its capability space);
 * is no process runnable above prio once the running process `leaving` has
 * blocked; leave the kernel into p, which must be the process the scheduler
 * would pick. */
struct aspace;
void sched_load_aspace(struct aspace *as);
bool sched_is_highest(unsigned prio, struct process *leaving);
NORETURN void sched_run(struct process *p);
/* Leave the kernel: run the highest-priority runnable process, idling with
 * interrupts on until there is one. */
NORETURN void kernel_exit(void);

/* console.c: the serial receive interrupt. */
void console_irq(void);

#endif
