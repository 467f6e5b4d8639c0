/* What PROCESS.SET_BUDGET and SET_PASSIVE refuse, apart from the objects (host-tested):
 * the error for giving budget_us of every period_us when the caller has
 * caller_budget_us of every caller_period_us (0 and 0: none), or OK. */
#ifndef KEEP_BUDGET_H
#define KEEP_BUDGET_H

#include "keep/abi.h"
#include "types.h"

static inline u64 budget_refusal(u64 budget_us, u64 period_us, u64 caller_budget_us, u64 caller_period_us)
{
    if ((budget_us || period_us) &&
        (period_us < KEEP_BUDGET_MIN_PERIOD_US || period_us > KEEP_BUDGET_MAX_PERIOD_US ||
         budget_us < KEEP_BUDGET_MIN_US || budget_us > period_us))
        return KEEP_ERR_INVALID_ARG;
    /* Within the caller's own share: no more of the CPU than it has.  Both
     * products are below 10^14: the periods are at most 10^7. */
    if (caller_period_us && (!period_us || budget_us * caller_period_us > caller_budget_us * period_us))
        return KEEP_ERR_NO_RIGHTS;
    return KEEP_ERR_OK;
}

/* What PROCESS.SET_PASSIVE refuses: the error for setting passive to on
 * when the caller has a budget of every caller_period_us (0: none), or OK. */
static inline u64 passive_refusal(u64 on, u64 caller_period_us)
{
    if (on > 1)
        return KEEP_ERR_INVALID_ARG;
    /* Not passive, a server's calls run on its own terms: a caller bound
     * by a budget may not lift that bound, as it may remove no budget. */
    if (caller_period_us && !on)
        return KEEP_ERR_NO_RIGHTS;
    return KEEP_ERR_OK;
}

#endif
