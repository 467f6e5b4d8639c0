/* One capability invocation as the object methods see it.  Methods follow
 * "decode, then act": they check every capability, right and argument first
 * and return an error before changing anything; only then do they act. */
#ifndef KEEP_INVOKE_H
#define KEEP_INVOKE_H

#include "cap.h"
#include "keep/abi.h"
#include "types.h"

struct invocation {
    struct process *caller;
    struct cap cap; /* the invoked capability, already validated */
    u64 tag, method;
    bool on_behalf; /* a queued sender's invocation, run again for it */
    struct process *behalf_to; /* ... which must still be a send to this process */
    u64 arg[4];
    u64 res[4];
    u64 via[KEEP_WRAPPER_DEPTH]; /* frames of the wrappers it came through */
    unsigned nvia;
};

/* Beyond the error codes: the caller blocked (it restarts, or is completed
 * by someone else, later), or the invocation has written the caller's
 * registers itself (a message was received).  Nothing more is written. */
#define INV_BLOCKED 0x10000
#define INV_DONE 0x10001
#define INV_RESTART 0x10002 /* on a sender's behalf: not a send to the receiver any more */

/* Tag bits that must be zero. */
#define TAG_RESERVED (~0xfffffffULL | (1ULL << 23))
static inline u64 tag_mode(u64 tag) { return (tag >> KEEP_TAG_MODE_SHIFT) & 3; }
static inline u64 tag_caps(u64 tag) { return (tag >> KEEP_TAG_CAPS_SHIFT) & KEEP_TAG_COUNT_MASK; }
static inline u64 tag_slots(u64 tag) { return (tag >> KEEP_TAG_SLOTS_SHIFT) & KEEP_TAG_COUNT_MASK; }

/* Run the invocation held in p's registers.  p is the current process, or
 * a sender restarted on its behalf (behalf_to: the receiver it was queued
 * for; only a send to it is run, anything else gives INV_RESTART).  Returns
 * an error code, INV_BLOCKED, INV_DONE or INV_RESTART; the caller writes an
 * error code to rax. */
u64 invoke_run(struct process *p, struct process *behalf_to);

/* The general path of the system call of p, the current process (the fast
 * path's syscall_dispatch comes here when it does not apply): everything,
 * or everything after the lookup of the invoked capability (err: its
 * error, or OK and the slot). */
NORETURN void syscall_general(struct process *p);
NORETURN void syscall_general_slot(struct process *p, u64 err, const struct cap *slot);

u64 console_invoke(struct invocation *inv);
u64 kernel_ctl_invoke(struct invocation *inv);
/* KERNEL.SET_SEAL_KEY and CHECKPOINT.SET_KEY: the seal's keys from the 32
 * bytes at ptr (FAULT; BAD_STATE while captured or while a process is
 * exported). */
u64 seal_key_from_user(struct invocation *inv, u64 ptr);
/* KERNEL.COVERAGE in the coverage build (kernel/lib/kcov.c). */
u64 kcov_copy(struct process *caller, u64 ptr, u64 len, u64 clear, u64 scope, u64 *res);
void kcov_forget(struct process *p);
u64 memory_invoke(struct invocation *inv);
extern u64 memory_revoke_restarts; /* KERNEL.INFO REVOKE_RESTARTS (memory.c) */
extern u64 destroy_restarts;       /* KERNEL.INFO DESTROY_RESTARTS (kmem_revoke.c) */
extern u64 move_restarts;          /* KERNEL.INFO MOVE_RESTARTS (account.c) */
extern u64 digest_restarts;        /* KERNEL.INFO DIGEST_RESTARTS (checkpoint.c) */
u64 aspace_invoke(struct invocation *inv);
u64 process_invoke(struct invocation *inv);
u64 account_invoke(struct invocation *inv);
u64 timer_invoke(struct invocation *inv);

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
void copy_user_to_user(struct aspace *to, u64 to_va, struct aspace *from, u64 from_va, u64 len);

#endif
