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

#endif
