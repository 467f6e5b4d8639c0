/* Address spaces: page tables for the user half plus a capability space. */
#ifndef KEEP_ASPACE_H
#define KEEP_ASPACE_H

#include "cap.h"
#include "paging.h"
#include "types.h"

struct aspace {
    u64 pml4_pa;
    struct cap *caps; /* KEEP_CSPACE_SLOTS entries, in a frame of their own */
    u16 pcid;         /* 0 = none (flush on every switch) */
    bool tlb_stale;   /* unmapped while not loaded: flush at next switch */
};

#define ASPACE_FRAMES 3 /* object, PML4, capability table */

u64 aspace_create(u64 *pa_out);
/* Map frame pa at va with KEEP_RIGHT_* rights; the caller has checked va,
 * rights and that nothing is mapped there.  Returns KEEP_ERR_NO_MEMORY
 * (with nothing changed) if page tables could not be allocated. */
u64 aspace_map_frame(struct aspace *as, u64 va, u64 pa, u64 rights);

static inline struct aspace *aspace_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

#endif
