/* The frame table and the free frames.  Free frames are kept as ranges and
 * taken from the bottom of each, which touches no memory at boot (threading a
 * list through 512 MiB cost 600 ms under emulation).  Frames come back once
 * kernel-memory accounts give them back (ACCOUNT.RECLAIM); those go onto a
 * list linked through the frame table (frame.h: never through the frames). */
#include "frame.h"
#include "checkpoint.h"
#include "keep/abi.h"
#include "lib.h"
#include "paging.h"

struct frame *frame_table;
u64 frame_table_len; /* number of entries */
static u64 free_count;
static struct {
    u64 next, end; /* untouched frames [next, end) */
} fresh[MEMMAP_MAX + 1]; /* +1: the frame table splits one range */
static unsigned fresh_count, fresh_cur;
static u64 freed_head; /* frames given back (frame_list_push) */

/* The persistent pool (frame.h): one range at the top of RAM, its own
 * untouched part and its own list of frames given back. */
u64 pool_lo, pool_hi;
static u64 pool_next, pool_freed, pool_free;


static void add_fresh(u64 lo, u64 hi)
{
    if (hi <= lo)
        return;
    fresh[fresh_count].next = lo;
    fresh[fresh_count].end = hi;
    fresh_count++;
    free_count += (hi - lo) / PAGE_SIZE;
    for (u64 pa = lo; pa < hi; pa += PAGE_SIZE)
        frame_table[pa / PAGE_SIZE].type = FRAME_FREE;
}

void frame_init(const struct memmap *m)
{
    u64 end = memmap_ram_end(m);
    if (end > PHYS_WINDOW_MAX)
        end = PHYS_WINDOW_MAX;
    frame_table_len = end / PAGE_SIZE;
    u64 bytes = ALIGN_UP(frame_table_len * sizeof(struct frame), PAGE_SIZE);

    /* The table goes at the start of the first usable range big enough. */
    u64 table_pa = 0;
    for (unsigned i = 0; i < m->count && !table_pa; i++) {
        const struct mem_range *r = &m->r[i];
        u64 lo = ALIGN_UP(r->base, PAGE_SIZE), hi = ALIGN_DOWN(r->base + r->length, PAGE_SIZE);
        if (r->type == KEEP_MEM_USABLE && hi > lo && hi - lo >= bytes && hi <= end)
            table_pa = lo;
    }
    if (!table_pa)
        panic("frame: no room for the frame table (%lu bytes)", bytes);
    frame_table = phys_to_virt(table_pa);
    memset(frame_table, 0, bytes);

    for (unsigned i = 0; i < m->count; i++) {
        const struct mem_range *r = &m->r[i];
        u64 lo = ALIGN_UP(r->base, PAGE_SIZE), hi = ALIGN_DOWN(r->base + r->length, PAGE_SIZE);
        if (hi > end)
            hi = end;
        for (u64 pa = lo; pa < hi; pa += PAGE_SIZE) {
            if (r->type == KEEP_MEM_KERNEL)
                frame_table[pa / PAGE_SIZE].type = FRAME_KERNEL;
            else if (r->type == KEEP_MEM_BOOT_IMAGE)
                frame_table[pa / PAGE_SIZE].type = FRAME_BOOT;
        }
        if (r->type != KEEP_MEM_USABLE)
            continue;
        if (lo <= table_pa && table_pa < hi) {
            for (u64 pa = table_pa; pa < table_pa + bytes; pa += PAGE_SIZE)
                frame_table[pa / PAGE_SIZE].type = FRAME_KERNEL;
            add_fresh(lo, table_pa);
            add_fresh(table_pa + bytes, hi);
        } else {
            add_fresh(lo, hi);
        }
    }
}

void frame_pool_init(u64 frames)
{
    /* The highest range with room; the pool is its top. */
    for (unsigned i = fresh_count; i-- > 0 && frames;) {
        u64 table = ALIGN_UP(frames * CHECKPOINT_SLOT_BYTES, PAGE_SIZE) / PAGE_SIZE;
        if ((fresh[i].end - fresh[i].next) / PAGE_SIZE < frames + table)
            continue;
        pool_hi = fresh[i].end;
        pool_lo = pool_hi - frames * PAGE_SIZE;
        /* The checkpoint's table of the pool's frames, just below it. */
        u64 table_pa = pool_lo - table * PAGE_SIZE;
        for (u64 pa = table_pa; pa < pool_lo; pa += PAGE_SIZE)
            frame_table[pa / PAGE_SIZE].type = FRAME_KERNEL;
        memset(phys_to_virt(table_pa), 0, table * PAGE_SIZE);
        checkpoint_init(phys_to_virt(table_pa), frames);
        fresh[i].end = table_pa;
        free_count -= frames + table;
        pool_next = pool_lo;
        pool_free = frames;
        return;
    }
    if (frames)
        kprintf("keep: no room for a persistent pool of %lu frames; none\n", frames);
}

u64 frame_pool_free_count(void) { return pool_free; }

static u64 pool_take(enum frame_type type)
{
    u64 pa;
    if (pool_freed)
        pa = frame_list_pop(&pool_freed);
    else if (pool_next < pool_hi)
        pa = pool_next, pool_next += PAGE_SIZE;
    else
        return 0;
    pool_free--;
    checkpoint_retype(pa, (u8)type);
    return pa;
}

void frame_pool_rebuild(void)
{
    /* After a restore: the pool's free frames are those not restored, all
     * of them on the list (nothing of the pool is untouched any more). */
    pool_freed = 0;
    pool_free = 0;
    pool_next = pool_hi;
    for (u64 pa = pool_hi; pa > pool_lo;) {
        pa -= PAGE_SIZE;
        if (frame_table[pa / PAGE_SIZE].type == FRAME_FREE) {
            frame_list_push(&pool_freed, pa);
            pool_free++;
        }
    }
}

u64 frame_take_from(int pool, enum frame_type type)
{
    if (pool)
        return pool_take(type);
    return frame_take(type);
}

u64 frame_alloc_from(int pool, enum frame_type type)
{
    u64 pa = frame_take_from(pool, type);
    if (pa)
        memset(phys_to_virt(pa), 0, PAGE_SIZE);
    return pa;
}

u64 frame_alloc(enum frame_type type) { return frame_alloc_from(0, type); }

u64 frame_take(enum frame_type type)
{
    u64 pa;
    if (freed_head) {
        pa = frame_list_pop(&freed_head);
    } else {
        while (fresh_cur < fresh_count && fresh[fresh_cur].next == fresh[fresh_cur].end)
            fresh_cur++;
        if (fresh_cur == fresh_count)
            return 0;
        pa = fresh[fresh_cur].next;
        fresh[fresh_cur].next += PAGE_SIZE;
    }
    free_count--;
    frame_table[pa / PAGE_SIZE].type = (u8)type;
    return pa;
}


u64 frame_free_count(void) { return free_count; }

void frame_list_push(u64 *head, u64 pa)
{
    frame_table[pa / PAGE_SIZE].free_next = (u32)(*head / PAGE_SIZE);
    *head = pa;
}

u64 frame_list_pop(u64 *head)
{
    u64 pa = *head;
    if (pa) {
        *head = frame_list_next(pa);
        frame_table[pa / PAGE_SIZE].free_next = 0; /* it is maps again */
    }
    return pa;
}

static u64 held_count; /* FRAME_HELD frames */

void frame_hold(u64 pa) { frame_table[pa / PAGE_SIZE].holds++; }

void frame_unhold(u64 pa)
{
    struct frame *f = &frame_table[pa / PAGE_SIZE];
    ASSERT(f->holds);
    if (--f->holds == 0 && f->type == FRAME_HELD) {
        held_count--;
        frame_free(pa);
    }
}

u64 frame_held_count(void) { return held_count; }

void frame_free(u64 pa)
{
    struct frame *f = &frame_table[pa / PAGE_SIZE];
    /* A device may still write it (a request a mediator put on it is not
     * done): nobody gets it until the last hold goes. */
    if (f->holds) {
        frame_set_type(pa, FRAME_HELD);
        held_count++;
        return;
    }
    frame_set_type(pa, FRAME_FREE); /* a pool frame's content is kept first */
    if (frame_in_pool(pa)) {
        frame_list_push(&pool_freed, pa);
        pool_free++;
        return;
    }
    frame_list_push(&freed_head, pa);
    free_count++;
}
