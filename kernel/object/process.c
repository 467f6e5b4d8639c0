/* Process objects: SET_REGS, START, STOP, STATUS, WAIT, EXIT, YIELD,
 * SET_NAME, SET_PRIORITY; faults of processes without a handler. */
#include "process.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "sched.h"
#include "x86.h"

struct process *all_processes;
static u64 next_pid = 1;

u64 process_create(struct aspace *as, u64 *pa_out)
{
    u64 pa = frame_alloc(FRAME_PROCESS);
    if (!pa)
        return KEEP_ERR_NO_MEMORY;
    struct process *p = phys_to_virt(pa);
    p->as = as;
    p->pid = next_pid++;
    p->prio = PRIO_DEFAULT;
    p->state = KEEP_STATE_CREATED;
    p->regs.cs = SEL_UCODE;
    p->regs.ss = SEL_UDATA;
    p->regs.rflags = RFLAGS_IF;
    fpu_init_state(&p->fpu);
    /* Keep the list sorted by pid: new pids are the largest, so append. */
    struct process **link = &all_processes;
    while (*link)
        link = &(*link)->all_next;
    *link = p;
    *pa_out = pa;
    return KEEP_ERR_OK;
}

void process_set_name(struct process *p, const char *name)
{
    memset(p->name, 0, sizeof p->name);
    memcpy(p->name, name, strnlen(name, sizeof p->name));
}

void process_make_runnable(struct process *p)
{
    p->state = KEEP_STATE_RUNNABLE;
    p->wait_kind = WAIT_NONE;
    p->wait_target = NULL;
    sched_enqueue(p);
}

void process_block(struct process *p, enum wait_kind kind)
{
    sched_dequeue(p);
    p->state = KEEP_STATE_BLOCKED;
    p->wait_kind = (u8)kind;
    p->regs.rip -= 2; /* back onto the syscall instruction: restart when woken */
}

/* Leave the run queue or a wait, without restarting anything. */
static void take_off_cpu(struct process *p)
{
    if (p->state == KEEP_STATE_RUNNABLE)
        sched_dequeue(p);
    p->wait_kind = WAIT_NONE;
    p->wait_target = NULL;
}

void process_wake(enum wait_kind kind, struct process *target)
{
    for (struct process *q = all_processes; q; q = q->all_next)
        if (q->state == KEEP_STATE_BLOCKED && q->wait_kind == kind && q->wait_target == target)
            process_make_runnable(q);
}

static void finish(struct process *p, u8 state, u64 code, u64 rip, u64 addr)
{
    take_off_cpu(p);
    p->state = state;
    p->code = code;
    p->fault_rip = rip;
    p->fault_addr = addr;
    process_wake(WAIT_PROCESS, p);
}

void process_fault(struct process *p, u64 vector, u64 rip, u64 addr)
{
    kprintf("keep: process '%.16s' (pid %lu) stopped: %s (vector %lu) at rip %p, %s %p\n", p->name,
            p->pid, exception_name(vector), vector, (void *)(uptr)rip,
            vector == 14 ? "address" : "error code", (void *)(uptr)addr);
    finish(p, KEEP_STATE_FAULTED, vector, rip, addr);
}

static bool user_addr(u64 va) { return va < KEEP_USER_TOP; }

static void status(struct process *p, u64 *res)
{
    res[0] = p->state;
    res[1] = p->code;
    res[2] = p->fault_rip;
    res[3] = p->fault_addr;
}

u64 process_invoke(struct invocation *inv)
{
    struct process *p = process_from_cap(inv->cap);
    struct process *me = inv->caller;
    const u64 *a = inv->arg;
    bool w = inv_has(inv, KEEP_RIGHT_WRITE), r = inv_has(inv, KEEP_RIGHT_READ);

    switch (inv->method) {
    case KEEP_M_PROCESS_SET_REGS:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        if (p->state != KEEP_STATE_CREATED && p->state != KEEP_STATE_STOPPED)
            return KEEP_ERR_BAD_STATE;
        if (!user_addr(a[0]) || !user_addr(a[1]))
            return KEEP_ERR_INVALID_ARG;
        p->regs.rip = a[0];
        p->regs.rsp = a[1];
        p->regs.rdi = a[2];
        p->regs.rsi = a[3];
        p->regs.vector = 0; /* leave through iretq: restore every register */
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_START:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        if (p->state != KEEP_STATE_CREATED && p->state != KEEP_STATE_STOPPED)
            return KEEP_ERR_BAD_STATE;
        process_make_runnable(p);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_STOP:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        if (p->state != KEEP_STATE_RUNNABLE && p->state != KEEP_STATE_BLOCKED)
            return KEEP_ERR_BAD_STATE;
        take_off_cpu(p);
        p->state = KEEP_STATE_STOPPED;
        return KEEP_ERR_OK; /* if p is the caller, kernel_exit runs another */
    case KEEP_M_PROCESS_STATUS:
        if (!r)
            return KEEP_ERR_NO_RIGHTS;
        status(p, inv->res);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_WAIT:
        if (!r)
            return KEEP_ERR_NO_RIGHTS;
        if (p == me)
            return KEEP_ERR_BAD_STATE;
        if (p->state == KEEP_STATE_EXITED || p->state == KEEP_STATE_FAULTED) {
            status(p, inv->res);
            return KEEP_ERR_OK;
        }
        process_block(me, WAIT_PROCESS);
        me->wait_target = p;
        return INV_BLOCKED;
    case KEEP_M_PROCESS_EXIT:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        if (p->state == KEEP_STATE_EXITED || p->state == KEEP_STATE_FAULTED)
            return KEEP_ERR_BAD_STATE;
        finish(p, KEEP_STATE_EXITED, a[0], 0, 0);
        return KEEP_ERR_OK; /* if p is the caller, kernel_exit runs another */
    case KEEP_M_PROCESS_YIELD:
        if (!r)
            return KEEP_ERR_NO_RIGHTS;
        if (p != me)
            return KEEP_ERR_INVALID_ARG;
        sched_rotate(me);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_NAME:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        memcpy(p->name, &a[0], 8);
        memcpy(p->name + 8, &a[1], 8);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_PRIORITY:
        if (!w)
            return KEEP_ERR_NO_RIGHTS;
        if (a[0] >= PRIO_LEVELS)
            return KEEP_ERR_INVALID_ARG;
        if (p->state == KEEP_STATE_RUNNABLE) {
            sched_dequeue(p);
            p->prio = (u8)a[0];
            sched_enqueue(p);
        } else {
            p->prio = (u8)a[0];
        }
        return KEEP_ERR_OK;
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
