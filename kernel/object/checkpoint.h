/* The checkpoint object (checkpoint.c, docs/persistence.md). */
#ifndef KEEP_CHECKPOINT_H
#define KEEP_CHECKPOINT_H

#include "types.h"

struct account;
struct invocation;

/* Its table: one entry per frame of the persistent pool (frame.c reserves
 * CHECKPOINT_SLOT_BYTES a frame below the pool). */
#define CHECKPOINT_SLOT_BYTES 24
void checkpoint_init(void *table, u64 frames);
u64 checkpoint_invoke(struct invocation *inv);
/* Between BEGIN and END: the seal's keys must not change. */
bool checkpoint_busy(void);
/* From boot until OPEN or RESUME: nothing is made from the pool. */
bool checkpoint_pool_shut(void);
/* a is being destroyed: if it holds the shadows, the capture ends. */
void checkpoint_account_gone(struct account *a);

/* Copy-on-write of data pages (docs/persistence.md, "The pause"): BEGIN
 * copies the kernel's objects but leaves each data page of the pool in
 * place, pending, and write-protects the address spaces that map the pool
 * at their top level.  Whatever is about to change a pending page (a user
 * write, through the fault; a kernel copy into it; a new writable mapping;
 * freeing, donating or holding it) first calls checkpoint_touch, which
 * copies it to a shadow; READ then hands out the shadow, or the page
 * itself while it is still pending. */
extern u64 checkpoint_pending;
void checkpoint_touch_slow(u64 pa);
static inline void checkpoint_touch(u64 pa)
{
    if (__builtin_expect(checkpoint_pending != 0, 0))
        checkpoint_touch_slow(pa);
}
/* A user write fault at va in as: true when it came from the checkpoint's
 * write protection (now lifted down to the page) and the write is to be
 * retried. */
struct aspace;
bool checkpoint_write_fault(struct aspace *as, u64 va);

#endif
