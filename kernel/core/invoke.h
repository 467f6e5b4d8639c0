/* One capability invocation as the object methods see it.  Methods follow
 * "decode, then act": they check every capability, right and argument first
 * and return an error before changing anything; only then do they act. */
#ifndef KEEP_INVOKE_H
#define KEEP_INVOKE_H

#include "cap.h"
#include "types.h"

struct invocation {
    struct process *caller;
    struct cap cap; /* the invoked capability, already validated */
    u64 method;
    u64 arg[4];
    u64 res[4];
};

/* Beyond the error codes: the caller blocked, and the invocation restarts
 * from the beginning when it is woken (nothing is returned now). */
#define INV_BLOCKED 0x10000

u64 console_invoke(struct invocation *inv);
u64 kernel_ctl_invoke(struct invocation *inv);
u64 memory_invoke(struct invocation *inv);
u64 aspace_invoke(struct invocation *inv);
u64 process_invoke(struct invocation *inv);

/* Checks a method's required rights against the invoked capability. */
static inline bool inv_has(const struct invocation *inv, u64 rights)
{
    return (cap_rights(inv->cap) & rights) == rights;
}

/* User memory, reached through the physical window after translation. */
struct aspace;
bool user_range_ok(struct aspace *as, u64 va, u64 len, bool write);
void copy_from_user(struct aspace *as, void *dst, u64 va, u64 len);
void copy_to_user(struct aspace *as, u64 va, const void *src, u64 len);

#endif
