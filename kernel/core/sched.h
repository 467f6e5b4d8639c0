/* Fixed-priority preemptive round-robin scheduling. */
#ifndef KEEP_SCHED_H
#define KEEP_SCHED_H

#include "types.h"

struct process;

#define TIME_SLICE_TICKS 5

void sched_enqueue(struct process *p); /* at the tail of its priority */
void sched_dequeue(struct process *p);
void sched_rotate(struct process *p);  /* to the tail: yield, slice end */
void sched_tick(void);
/* Leave the kernel: run the highest-priority runnable process, idling with
 * interrupts on until there is one. */
NORETURN void kernel_exit(void);

/* console.c: the serial receive interrupt. */
void console_irq(void);

#endif
