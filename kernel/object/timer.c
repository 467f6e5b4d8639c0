/* The timer object: NOW and SLEEP. */
#include "arch.h"
#include "invoke.h"
#include "keep/abi.h"
#include "process.h"
#include "sched.h"

u64 timer_invoke(struct invocation *inv)
{
    if (inv->method != KEEP_M_TIMER_NOW && inv->method != KEEP_M_TIMER_SLEEP)
        return KEEP_ERR_INVALID_METHOD;
    if (!inv_has(inv, KEEP_RIGHT_READ))
        return KEEP_ERR_NO_RIGHTS;
    if (inv->method == KEEP_M_TIMER_NOW) {
        inv->res[0] = cpu0.ticks * 1000 / TIMER_HZ;
        inv->res[1] = cpu0.ticks;
        return KEEP_ERR_OK;
    }
    u64 ms = inv->arg[0];
    if (ms == 0 || ms > 86400000)
        return KEEP_ERR_INVALID_ARG;
    struct process *p = inv->caller;
    if (p->state == KEEP_STATE_RUNNABLE)
        sched_dequeue(p);
    p->state = KEEP_STATE_BLOCKED;
    p->wait_kind = WAIT_SLEEP;
    /* +1: the current tick is already partly over, so "at least ms" holds. */
    sleep_insert(p, cpu0.ticks + (ms * TIMER_HZ + 999) / 1000 + 1);
    return INV_BLOCKED;
}
