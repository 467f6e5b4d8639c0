/* Kernel-memory accounts (seed 003): frames donated by a kpager, from which
 * the kernel takes every frame it uses for a task (process control blocks,
 * address-space objects, page tables, capability-segment tables, wrappers). */
#ifndef KEEP_ACCOUNT_H
#define KEEP_ACCOUNT_H

#include "cap.h"
#include "paging.h"
#include "types.h"

struct account {
    u64 free_head;        /* unused donated frames, linked through their first word */
    u64 free_count;       /* frames on that list */
    u64 used_count;       /* frames in use by objects made from the account */
    struct cap kpager;    /* SENDER to the kpager, or null */
    struct account *next; /* every account, for CHECK_INVARIANTS */
};

struct invocation;
extern struct account *all_accounts;

/* A new empty account in a frame from the memory pool; NULL if none. */
struct account *account_create(void);
/* Move n frames from the memory pool into the account (the caller checked). */
void account_fund(struct account *a, u64 n);
/* Take a zeroed frame of the given type; the caller has made sure one is
 * there (kmem_need). */
u64 kmem_alloc(struct account *a, unsigned frame_type);
void kmem_free(struct account *a, u64 pa);

/* Make sure the account holds n unused frames before an operation changes
 * anything.  KEEP_ERR_OK if it does; otherwise, with a live kpager, the
 * invoking process sends it a KMEM fault message and waits, and its
 * invocation restarts after the reply (INV_BLOCKED); without one, NO_MEMORY. */
u64 kmem_need(struct invocation *inv, struct account *a, u64 n);

static inline struct account *account_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

u64 account_check(u64 *checked); /* CHECK_INVARIANTS: violations found */

#endif
