/* Capability-space lookup.  A capability address names a 16-byte slot in
 * the capability segment.  In the loaded address space the MMU lookup is a
 * range check, a shift, an add and one probing load through the segment's
 * kernel-only alias (an unmapped cappage faults into the probe's fix-up);
 * it is inline because every invocation starts with it.  Other address
 * spaces, and the lookup variants of seed 000 (make CAP_LOOKUP=hash|regs),
 * go through cspace.c. */
#ifndef KEEP_CSPACE_H
#define KEEP_CSPACE_H

#include "arch.h"
#include "cap.h"
#include "probe.h"

struct aspace;

/* The slot through a walk of as's capability-segment tables. */
u64 cspace_walk(struct aspace *as, u64 addr, struct cap **slot);

#if defined(CAP_LOOKUP_HASH) || defined(CAP_LOOKUP_REGS)
u64 cspace_slot(struct aspace *as, u64 addr, struct cap **slot);
static ALWAYS_INLINE u64 cspace_loaded_slot(u64 addr, struct cap **slot)
{
    return cspace_slot(cpu0.loaded_as, addr, slot);
}
static ALWAYS_INLINE u64 cspace_loaded_slot_w0(u64 addr, struct cap **slot, u64 *w0)
{
    u64 e = cspace_slot(cpu0.loaded_as, addr, slot);
    *w0 = e ? 0 : (*slot)->w0;
    return e;
}
#else
/* The slot of an address known to lie in the capability space, in the
 * loaded address space (the IPC fast path): OK, the slot and the first word
 * of its capability, or NO_CAPPAGE. */
static ALWAYS_INLINE u64 cspace_loaded_slot_w0(u64 addr, struct cap **slot, u64 *w0)
{
    struct cap *s = (struct cap *)(uptr)(KEEP_CAP_SEGMENT + (addr << 4));
    PROBE_LOAD(*w0, s, missing); /* the second word is on the same page */
    *slot = s;
    return KEEP_ERR_OK;
missing:
    return KEEP_ERR_NO_CAPPAGE;
}
static ALWAYS_INLINE u64 cspace_loaded_slot(u64 addr, struct cap **slot)
{
    u64 w0;
    return cspace_loaded_slot_w0(addr, slot, &w0);
}

/* Returns KEEP_ERR_OK, the slot's kernel address and the first word of
 * the capability in it, or OUT_OF_RANGE / NO_CAPPAGE; changes nothing. */
static ALWAYS_INLINE u64 cspace_slot_w0(struct aspace *as, u64 addr, struct cap **slot, u64 *w0)
{
    if (addr >= KEEP_CAP_SPACE_SLOTS)
        return KEEP_ERR_OUT_OF_RANGE;
    if (as != cpu0.loaded_as) {
        struct cap *walked = NULL; /* keeps *slot out of memory on the fast path */
        u64 e = cspace_walk(as, addr, &walked);
        *slot = walked;
        *w0 = e ? 0 : walked->w0;
        return e;
    }
    return cspace_loaded_slot_w0(addr, slot, w0);
}

/* The same without the word. */
static ALWAYS_INLINE u64 cspace_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    u64 w0;
    return cspace_slot_w0(as, addr, slot, &w0);
}
#endif

/* Whether the object a capability names still exists at that version. */
bool cap_live(struct cap c);

/* Look up addr and check that it holds a live capability of `type` (0 = any)
 * with all of `rights`.  Returns KEEP_ERR_OK and the capability, or an error
 * (OUT_OF_RANGE, NO_CAPPAGE, INVALID_CAP, STALE, WRONG_TYPE, NO_RIGHTS). */
u64 cap_lookup(struct aspace *as, u64 addr, u64 type, u64 rights, struct cap *out);
/* The same checks on a slot already found (err: the lookup's error). */
u64 cap_check_slot(u64 err, const struct cap *slot, u64 type, u64 rights, struct cap *out);

/* A cappage was unmapped or an address space destroyed: drop what the
 * lookup strategy caches (nothing for the MMU lookup). */
void cspace_forget(void);
/* An empty slot to fill: OK, or OUT_OF_RANGE / NO_CAPPAGE / EXISTS. */
u64 cap_empty_slot(struct aspace *as, u64 addr, struct cap **slot);

#endif
