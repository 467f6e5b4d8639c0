/* The checkpoint object (checkpoint.c, docs/persistence.md). */
#ifndef KEEP_CHECKPOINT_H
#define KEEP_CHECKPOINT_H

#include "frame.h"
#include "types.h"

struct account;
struct invocation;

/* Its table: one entry per frame of the persistent pool (frame.c reserves
 * CHECKPOINT_SLOT_BYTES a frame below the pool). */
#define CHECKPOINT_SLOT_BYTES 56
void checkpoint_init(void *table, u64 frames);
u64 checkpoint_invoke(struct invocation *inv);
/* Between BEGIN and END: the seal's keys must not change. */
bool checkpoint_busy(void);
/* From boot until OPEN or RESUME: nothing is made from the pool. */
bool checkpoint_pool_shut(void);
/* a is being destroyed: if it holds the shadows, the capture ends. */
void checkpoint_account_gone(struct account *a);

/* Copy-on-write (docs/persistence.md, "The pause"): BEGIN copies the
 * pool's kernel objects, which it finds on a list, and leaves every other
 * frame in place: data pages, donated and free frames are their own record
 * until they change.  It write-protects the address spaces that map the
 * pool at their top level.  Whatever is about to change such a frame (a
 * user write, through the fault; a kernel copy into it; a new writable
 * mapping; a new type, version or free-list link) first calls
 * checkpoint_touch, which records its state at BEGIN (a data page's
 * content in a shadow frame) while captured, and at any time while the
 * pool is open marks the frame changed in this epoch (dirty tracking,
 * docs/persistence.md, "Incremental checkpoints"). */
extern u64 checkpoint_tracking;
void checkpoint_touch_slow(u64 pa);
static inline void checkpoint_touch(u64 pa)
{
    if (checkpoint_tracking && frame_in_pool(pa))
        checkpoint_touch_slow(pa);
}
/* A user write fault at va in as: true when it came from the checkpoint's
 * write protection (now lifted down to the page) and the write is to be
 * retried. */
struct aspace;
bool checkpoint_write_fault(struct aspace *as, u64 va);

#endif
