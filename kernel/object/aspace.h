/* Address spaces: page tables for the user half plus a sparse capability
 * space, whose cappages are aliased into the kernel-only capability segment
 * of the same page tables. */
#ifndef KEEP_ASPACE_H
#define KEEP_ASPACE_H

#include "cap.h"
#include "arch.h"
#include "paging.h"
#include "x86.h"
#include "types.h"

struct account;

struct aspace {
    u64 pml4_pa;
    struct account *account; /* pays for the object and every table */
    struct aspace *acct_prev, *acct_next; /* the account's address spaces */
    /* Every address space in the order they were made, oldest first, and
     * its place in that order (MEMORY.REVOKE's sweep goes along it). */
    struct aspace *all_prev, *all_next;
    u64 serial;
    u64 nproc;               /* processes running in it (exported ones too) */
    u64 nout;                /* of those, exported (its page tables stay while any is) */
    u64 cr3;                 /* CR3 value that loads it and keeps its PCID's TLB entries */
    u16 pcid;                /* 0 = none (flush on every switch) */
    bool tlb_stale;          /* unmapped while not loaded: flush at next switch */
    bool maps_pool;          /* has mapped a frame of the persistent pool (checkpoint.h) */
    /* Raised whenever a mapping of this space goes away (UNMAP,
     * UNMAP_CAPPAGE, REVOKE_TABLE, MEMORY.REVOKE), so that a check that its
     * processes' IPC buffers are mapped can be kept until it changes
     * (ipc.c).  Per space: what others unmap never costs its IPC anything. */
    u64 unmap_generation;
    /* The record of its cappage mappings, from which capability-segment
     * tables a kpager took back are rebuilt (kmem_revoke.c): as many as the
     * rest of the object's frame holds; beyond that, unrecorded is set and
     * those tables are not taken back. */
    bool capseg_dropped;    /* some capability-segment tables are out */
    bool capseg_unrecorded; /* a cappage mapping did not fit the record */
    u32 ncappages;
    struct cappage_map {
        u64 cap_addr, pa;
    } cappages[];
};
#define ASPACE_CAPPAGE_RECORD ((PAGE_SIZE - sizeof(struct aspace)) / sizeof(struct cappage_map))

#define ASPACE_FRAMES 2 /* object, PML4 */

/* Make an address space from the account (which holds ASPACE_FRAMES). */
u64 aspace_create(struct account *a);
void aspace_destroy(struct aspace *as);
/* ACCOUNT.DESTROY_ALL's part of destroying as: its mappings and tables
 * go, at most *budget tables (counted down) at a time; true when none is
 * left.  The space stays consistent in between (flushed when it is next
 * loaded, its cappage records gone with their mappings). */
bool aspace_take_down(struct aspace *as, unsigned *budget);
/* A space restored from a checkpoint: this boot's kernel half, a PCID, and
 * only the pool's tables, pages and cappages (counted in their maps). */
void aspace_adopt(struct aspace *as);
/* MEMORY.REVOKE's part in as: remove the mappings of frame s->pa from
 * s->pos on within s->budget tables (unmap_frame_sweep; a sweep from 0
 * first drops the cappage records of it), counting them in s->n and out of
 * the frame's maps.  True when as is done. */
bool aspace_unmap_frame(struct aspace *as, struct frame_sweep *s);
/* The address spaces in the order they were made (aspace.c). */
extern struct aspace *aspaces_first;
/* Map frame pa at va with KEEP_RIGHT_* rights; the caller has checked va,
 * rights, that nothing is mapped there and that the account holds
 * aspace_map_tables() frames. */
void aspace_map_frame(struct aspace *as, u64 va, u64 pa, u64 rights, bool uncached);
u64 aspace_map_tables(struct aspace *as, u64 va);
/* The same for a cappage at capability address cap_addr. */
void aspace_map_cappage(struct aspace *as, u64 cap_addr, u64 pa);
u64 aspace_cappage_tables(struct aspace *as, u64 cap_addr);
/* The record entry of the cappage at cap_addr (any slot of it), or NULL. */
struct cappage_map *aspace_cappage_record(struct aspace *as, u64 cap_addr);
/* Rebuild the capability-segment tables over a recorded cappage whose
 * tables were taken back, from as's account (the caller made sure it
 * holds aspace_cappage_tables() frames). */
void aspace_capseg_rebuild(struct aspace *as, struct cappage_map *m);


/* Load as (and its capability space) into CR3 unless it is loaded. */
void aspace_load_flush(struct aspace *as);
static ALWAYS_INLINE void aspace_load(struct aspace *as)
{
    if (cpu0.loaded_as == as)
        return;
    if (as->tlb_stale) {
        aspace_load_flush(as);
        return;
    }
    write_cr3(as->cr3);
    cpu0.loaded_as = as;
}

static inline struct aspace *aspace_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

/* Does the space whose frame is as_pa (if still at as_version) map the
 * device page pa at va?  If unmap, the mapping is removed. */
bool aspace_device_mapped(u64 as_pa, u64 as_version, u64 va, u64 pa, bool unmap);

#endif
