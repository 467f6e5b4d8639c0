/* Physical frames: a table with the type and version of every frame, and
 * the free frames. */
#ifndef KEEP_FRAME_H
#define KEEP_FRAME_H

#include "memmap.h"
#include "types.h"

enum frame_type {
    FRAME_NONE = 0,  /* not RAM, or not managed */
    FRAME_FREE,
    FRAME_KERNEL,    /* kernel image, frame table */
    FRAME_BOOT,      /* the boot image */
    FRAME_PAGE,      /* a user data page */
    FRAME_PAGETABLE, /* a user page table */
    FRAME_ASPACE,    /* an address-space object */
    FRAME_CAPPAGE,   /* 256 capability slots; never user-accessible */
    FRAME_PROCESS,   /* a process object */
    FRAME_ACCOUNT,   /* a kernel-memory account object */
    FRAME_KFREE,     /* donated to an account, not in use */
    FRAME_WRAPPER,   /* a wrapper object */
    FRAME_DMA_DOMAIN, /* a DMA domain object (its tables are FRAME_PAGETABLE) */
    FRAME_NUMBERS,   /* an account's page of 64 process numbers (process_number.c) */
    FRAME_HELD,      /* its page was destroyed under a DMA hold: free with the last hold */
    FRAME_NOTIFICATION, /* a notification object */
    FRAME_SHADOW,    /* a checkpoint's copy of a pool frame (checkpoint.c) */
};

struct frame {
    u8 type;
    u8 flags;    /* FRAME_REVOKING */
    u16 holds;   /* DMA holds (dma_domain.c): frame_free keeps the frame until they go */
    union {
        u32 maps;      /* mappings in address and capability spaces (RECLAIM needs 0) */
        u32 free_next; /* FRAME_FREE, FRAME_KFREE: the next frame's number on its list, 0 at the end */
    };
    u64 version; /* raised when the object in the frame is destroyed */
};

/* A MEMORY.REVOKE of the page or cappage is under way (memory.c): nothing
 * maps it meanwhile (IN_USE), so that its sweep through the address spaces,
 * which gives the CPU up between parts, gets to the end. */
#define FRAME_REVOKING 1

void frame_init(const struct memmap *m);

/* The persistent pool: frames at the top of RAM handed out only through
 * the persistent MEMORY capability, so that everything made from it lies
 * in one range at the same physical addresses at every boot, and a
 * checkpoint of the range is a checkpoint of its objects (checkpoint.c,
 * which keeps it shut from boot until it is opened empty or restored). */
extern u64 pool_lo, pool_hi;
void frame_pool_init(u64 frames);
static inline bool frame_in_pool(u64 pa) { return pa >= pool_lo && pa < pool_hi; }
u64 frame_pool_free_count(void);
/* From the general pool (0) or the persistent pool (1). */
u64 frame_take_from(int pool, enum frame_type type);
u64 frame_alloc_from(int pool, enum frame_type type);
/* The free list of the pool from the frame table (after a restore). */
void frame_pool_rebuild(void);
/* A zeroed frame of the given type, or 0 when none is free. */
u64 frame_alloc(enum frame_type type);
u64 frame_free_count(void);
/* The same without zeroing it. */
u64 frame_take(enum frame_type type);
/* Give a frame back to the pool.  Free lists (the pool's and the accounts')
 * are linked through the frame table, never through the frames: a device
 * may still write a frame it was given, and nothing the kernel follows may
 * depend on what it writes. */
void frame_free(u64 pa);
/* A DMA hold on pa, and its end (which frees a FRAME_HELD frame). */
void frame_hold(u64 pa);
void frame_unhold(u64 pa);
u64 frame_held_count(void);
/* Push pa onto the list at *head, or pop its first frame (0 when empty). */
void frame_list_push(u64 *head, u64 pa);
u64 frame_list_pop(u64 *head);

/* The frame table (frame.c owns it); frame_info is inline because every
 * capability check of a frame-backed object asks it. */
extern struct frame *frame_table;
extern u64 frame_table_len;
static inline struct frame *frame_info(u64 pa) /* NULL outside managed memory */
{
    u64 pfn = pa / PAGE_SIZE;
    return pfn < frame_table_len ? &frame_table[pfn] : NULL;
}
/* The frame after pa on its free list (0 at the end). */
static inline u64 frame_list_next(u64 pa) { return (u64)frame_table[pa / PAGE_SIZE].free_next * PAGE_SIZE; }

/* Every change of a pool frame's type goes through the checkpoint, which
 * keeps the frame's state at BEGIN and its list of kernel objects. */
void checkpoint_retype(u64 pa, u8 type);
static inline void frame_set_type(u64 pa, u8 type)
{
    if (frame_in_pool(pa))
        checkpoint_retype(pa, type);
    else
        frame_info(pa)->type = type;
}

#endif
