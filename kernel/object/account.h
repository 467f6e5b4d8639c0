/* Kernel-memory accounts (seed 003): frames donated by a kpager, from which
 * the kernel takes every frame it uses for a task (process control blocks,
 * address-space objects, page tables, capability-segment tables, wrappers). */
#ifndef KEEP_ACCOUNT_H
#define KEEP_ACCOUNT_H

#include "cap.h"
#include "paging.h"
#include "types.h"

struct account {
    u64 free_head;        /* unused donated frames, linked through the frame table (frame.h) */
    u64 free_count;       /* frames on that list */
    u64 used_count;       /* frames in use by objects made from the account */
    struct cap kpager;    /* SENDER to the kpager, or null */
    u64 taken;            /* frames its kpager took back from live objects (INFO) */
    u64 nout;             /* its processes exported now */
    struct account *next; /* every account, for CHECK_INVARIANTS */
    /* What DESTROY_ALL must find without searching all of memory: */
    struct aspace *aspaces;   /* address spaces made from it */
    struct wrapper *wrappers; /* wrappers made from it */
    struct notification *notifications; /* notifications made from it */
    u32 out_first;            /* 1 + the number of an exported process, or 0 */
    /* Its process numbers (process_number.c): */
    u32 number_pages; /* 1 + the index of its first number page, or 0 */
    u32 free_pages;   /* 1 + the index of its first page with a free number, or 0 */
    u32 numbers_free; /* free numbers in its pages */
};

struct invocation;
struct notification;
extern struct account *all_accounts;

/* A new empty account in a frame from the general (0) or persistent (1)
 * pool; NULL if none. */
struct account *account_create(int pool);
/* Move n frames from the account's pool into it (the caller checked). */
void account_fund(struct account *a, u64 n);
/* The part of a DONATE or RECLAIM after which `left` frames are still to
 * move: the count (arg[1], r8) becomes left and the invocation restarts
 * from the system call, which takes any interrupt that came meanwhile
 * (INV_DONE).  Each restart is the same method for the rest, checked as a
 * new one, so nothing but the caller's registers says where it stands. */
u64 account_move_restart(struct invocation *inv, u64 left);
/* Give n of the account's unused frames (it holds them) back to their pool. */
void account_give_back(struct account *a, u64 n);
/* Give an account with nothing in use, and all its frames, back to the pool. */
void account_close(struct account *a);
/* Take a zeroed frame of the given type; the caller has made sure one is
 * there (kmem_need). */
u64 kmem_alloc(struct account *a, unsigned frame_type);
/* The same without zeroing it (the caller fills it whole). */
u64 kmem_take(struct account *a, unsigned frame_type);
void kmem_free(struct account *a, u64 pa);

/* Make sure the account holds n unused frames before an operation changes
 * anything.  KEEP_ERR_OK if it does; otherwise, with a live kpager, the
 * invoking process sends it a KMEM fault message and waits, and its
 * invocation restarts after the reply (INV_BLOCKED); without one, NO_MEMORY. */
u64 kmem_need(struct invocation *inv, struct account *a, u64 n);
struct process;
u64 kmem_fault(struct process *p, struct cap kpager, const u64 words[4]);

static inline struct account *account_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

u64 account_check(u64 *checked); /* CHECK_INVARIANTS: violations found */

/* kmem_revoke.c: kernel memory taken back from live tasks. */
u64 kmem_revoke_table(struct invocation *inv, struct account *a);
u64 kmem_revoke_cap_table(struct invocation *inv, struct account *a);
/* The lookup that just failed with NO_CAPPAGE (cpu0.cap_miss_*) fell on a
 * cappage whose segment tables a kpager took back: rebuild them, from the
 * space's account (a KMEM fault if it is short), and have p's invocation
 * run again.  NO_CAPPAGE when it was a plain miss. */
u64 kmem_cap_miss(struct process *p);
bool kmem_cap_miss_rebuildable(void);
u64 kmem_revoke_process(struct invocation *inv, struct account *a);
u64 kmem_restore_process(struct invocation *inv, struct account *a);
u64 account_destroy_all(struct invocation *inv, struct account *a);
/* The invoker needs exported process number num: it sends a KMEM fault to
 * the kpager that holds it and its invocation restarts after the reply
 * (INV_BLOCKED); NO_MEMORY when that kpager is gone or is the invoker
 * itself (which would wait for itself forever). */
u64 kmem_need_process(struct invocation *inv, u64 num);

#endif
