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
    if (inv->method == KEEP_M_TIMER_NOW) {
        inv->res[0] = cpu0.ticks * 1000 / TIMER_HZ;
        inv->res[1] = cpu0.ticks;
        return KEEP_ERR_OK;
    }
    u64 ms = inv->arg[0];
    if (ms == 0 || ms > MAX_TIMEOUT_MS)
        return KEEP_ERR_INVALID_ARG;
    process_wait(inv->caller, WAIT_SLEEP);
    /* +1: the current tick is already partly over, so "at least ms" holds. */
    sleep_insert(inv->caller, cpu0.ticks + ms_to_ticks(ms) + 1);
    return INV_BLOCKED;
}
