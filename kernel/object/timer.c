/* The timer object: NOW, SLEEP and SLEEP_UNTIL. */
#include "arch.h"
#include "invoke.h"
#include "keep/abi.h"
#include "process.h"
#include "sched.h"

u64 timer_invoke(struct invocation *inv)
{
    if (inv->method != KEEP_M_TIMER_NOW && inv->method != KEEP_M_TIMER_SLEEP &&
        inv->method != KEEP_M_TIMER_SLEEP_UNTIL)
        return KEEP_ERR_INVALID_METHOD;
    if (inv->method == KEEP_M_TIMER_NOW) {
        u64 t = time_now();
        inv->res[0] = t / cpu0.tsc_khz;
        inv->res[1] = t / (cpu0.tsc_hz / TIMER_HZ);
        return KEEP_ERR_OK;
    }
    /* An absolute deadline (raw TSC) lets periodic work keep its release
     * times: a relative sleep would add each period's own work to the next. */
    if (inv->method == KEEP_M_TIMER_SLEEP_UNTIL) {
        u64 now = rdtsc(), at = inv->arg[0];
        if (at <= now)
            return KEEP_ERR_OK;
        if (at - now > MAX_TIMEOUT_MS * cpu0.tsc_khz)
            return KEEP_ERR_INVALID_ARG;
        process_wait(inv->caller, WAIT_SLEEP);
        sleep_insert(inv->caller, at);
        return INV_BLOCKED;
    }
    u64 ms = inv->arg[0];
    if (ms == 0 || ms > MAX_TIMEOUT_MS)
        return KEEP_ERR_INVALID_ARG;
    process_wait(inv->caller, WAIT_SLEEP);
    sleep_insert(inv->caller, deadline_in_ms(ms));
    return INV_BLOCKED;
}
