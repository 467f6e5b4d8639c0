/* Processes: saved registers and FPU state, an address space, a priority
 * and a state.  A process occupies one frame; its struct regs comes first
 * so that the entry code can save a user context straight into it. */
#ifndef KEEP_PROCESS_H
#define KEEP_PROCESS_H

#include "arch.h"
#include "aspace.h"
#include "cap.h"

enum wait_kind { WAIT_NONE, WAIT_CONSOLE, WAIT_PROCESS };

struct process {
    struct regs regs; /* must stay first: TSS.rsp0 points just past it */
    struct fpu_state fpu;
    struct aspace *as;
    struct process *rq_next, *rq_prev; /* run queue of its priority */
    struct process *all_next;          /* every process, by pid */
    struct process *wait_target;       /* WAIT_PROCESS: whom it waits for */
    u64 pid;
    u64 code, fault_rip, fault_addr; /* exit code or vector; fault details */
    u32 slice;                        /* timer ticks left */
    u8 state, prio, wait_kind;
    char name[16];
};
_Static_assert(sizeof(struct process) <= 4096, "a process fits in one frame");

#define PRIO_DEFAULT 10
#define PRIO_LEVELS 32

extern struct process *all_processes;

u64 process_create(struct aspace *as, u64 *pa_out);
static inline struct process *process_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }
void process_set_name(struct process *p, const char *name);
void process_fault(struct process *p, u64 vector, u64 rip, u64 addr);
void process_make_runnable(struct process *p);
/* Block the caller in its current invocation, which restarts when it wakes. */
void process_block(struct process *p, enum wait_kind kind);
/* Make runnable every process blocked in `kind` on `target` (NULL for the
 * console); each restarts its invocation. */
void process_wake(enum wait_kind kind, struct process *target);

const char *exception_name(u64 vector);

#endif
