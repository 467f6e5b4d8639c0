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
#include "frame.h"
#include "probe.h"

struct aspace;

/* Note where a lookup found no cappage (cpu0.cap_miss_*: invoke.c rebuilds
 * segment tables a kpager took back).  Out of line: misses are rare. */
void cap_miss_note(struct aspace *as, u64 addr);

/* The slot through a walk of as's capability-segment tables. */
u64 cspace_walk(struct aspace *as, u64 addr, struct cap **slot);

/* The lookup in the loaded address space: one of seed 000's three
 * strategies, chosen at build time (make CAP_LOOKUP=mmu|hash|regs) so that
 * docs/performance.md can compare them; only the MMU lookup is the kernel's.
 * All three are inline, so that they differ only in the lookup itself. */
#if defined(CAP_LOOKUP_HASH) || defined(CAP_LOOKUP_REGS)
#if defined(CAP_LOOKUP_HASH)
/* A software TLB: a direct-mapped table from (address space, cappage
 * number) to the cappage, filled by a walk on a miss. */
#define SOFT_TLB_SIZE 256
extern struct soft_tlb_entry {
    struct aspace *as;
    u64 page;
    struct cap *caps;
} soft_tlb[SOFT_TLB_SIZE];
u64 soft_tlb_fill(struct aspace *as, u64 page, struct soft_tlb_entry *e);

static ALWAYS_INLINE u64 variant_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    u64 page = addr / KEEP_CAPPAGE_SLOTS;
    struct soft_tlb_entry *e = &soft_tlb[(page ^ ((uptr)as >> 12)) % SOFT_TLB_SIZE];
    if (e->as != as || e->page != page) {
        u64 err = soft_tlb_fill(as, page, e);
        if (err)
            return err;
    }
    *slot = e->caps + addr % KEEP_CAPPAGE_SLOTS;
    return KEEP_ERR_OK;
}
#else
/* Capability registers: the first cappage of an address space is a small
 * fixed table the kernel keeps a pointer to (for the last few spaces);
 * other addresses are walked. */
#define CAP_REGS_SPACES 16
extern struct cap_regs_entry {
    struct aspace *as;
    struct cap *caps;
} cap_regs[CAP_REGS_SPACES];
u64 cap_regs_fill(struct aspace *as, struct cap_regs_entry *e);

static ALWAYS_INLINE u64 variant_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    if (addr >= KEEP_CAPPAGE_SLOTS)
        return cspace_walk(as, addr, slot);
    struct cap_regs_entry *e = &cap_regs[((uptr)as >> 12) % CAP_REGS_SPACES];
    if (e->as != as) {
        u64 err = cap_regs_fill(as, e);
        if (err)
            return err;
    }
    *slot = e->caps + addr;
    return KEEP_ERR_OK;
}
#endif

static ALWAYS_INLINE u64 cspace_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    if (addr >= KEEP_CAP_SPACE_SLOTS)
        return KEEP_ERR_OUT_OF_RANGE;
    if (as == cpu0.loaded_as)
        return variant_slot(as, addr, slot);
    return cspace_walk(as, addr, slot);
}
static ALWAYS_INLINE u64 cspace_loaded_slot(u64 addr, struct cap **slot)
{
    return variant_slot(cpu0.loaded_as, addr, slot);
}
static ALWAYS_INLINE u64 cspace_loaded_slot_w0(u64 addr, struct cap **slot, u64 *w0)
{
    u64 e = variant_slot(cpu0.loaded_as, addr, slot);
    *w0 = e ? 0 : (*slot)->w0;
    return e;
}
#else
/* The slot of an address known to lie in the capability space, in the
 * loaded address space (the IPC fast path): OK, the slot and the first word
 * of its capability, or NO_CAPPAGE. */
static ALWAYS_INLINE u64 cspace_loaded_slot_w0(u64 addr, struct cap **slot, u64 *w0)
{
    /* The segment's base in one movabs, which the compiler may reuse (GCC
     * builds this constant in two instructions, a mov and a shift). */
    uptr base;
    __asm__("movabs %1, %0" : "=r"(base) : "i"(KEEP_CAP_SEGMENT));
    struct cap *s = (struct cap *)(base + (addr << 4));
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

/* Returns KEEP_ERR_OK and the slot's kernel address, or OUT_OF_RANGE /
 * NO_CAPPAGE; changes nothing. */
static ALWAYS_INLINE u64 cspace_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    if (addr >= KEEP_CAP_SPACE_SLOTS)
        return KEEP_ERR_OUT_OF_RANGE;
    if (as != cpu0.loaded_as) {
        struct cap *walked = NULL; /* keeps *slot out of memory on the fast path */
        u64 e = cspace_walk(as, addr, &walked);
        *slot = walked;
        return e;
    }
    u64 e = cspace_loaded_slot(addr, slot);
    if (unlikely(e))
        cap_miss_note(as, addr);
    return e;
}
#endif

/* Whether the object a capability names still exists at that version. */
bool cap_live(struct cap c);
/* The same, with the types that never go stale (the kernel's own objects
 * and device ranges) decided inline. */
#define CAP_ALWAYS_LIVE                                                                                 \
    ((1u << KEEP_TYPE_CONSOLE) | (1u << KEEP_TYPE_KERNEL) | (1u << KEEP_TYPE_MEMORY) | (1u << KEEP_TYPE_TIMER) | \
     (1u << KEEP_TYPE_DEVMEM) | (1u << KEEP_TYPE_IOPORT) | (1u << KEEP_TYPE_INTERRUPT))
/* ... and the objects that live in a frame (their version is the frame's). */
#define CAP_IN_FRAME                                                                                    \
    ((1u << KEEP_TYPE_PAGE) | (1u << KEEP_TYPE_CAPPAGE) | (1u << KEEP_TYPE_ASPACE) | (1u << KEEP_TYPE_ACCOUNT) | \
     (1u << KEEP_TYPE_WRAPPER) | (1u << KEEP_TYPE_DMA_DOMAIN) | (1u << KEEP_TYPE_NOTIFICATION))
static inline bool cap_live_inline(struct cap c)
{
    u32 bit = 1u << cap_type(c);
    if (bit & CAP_ALWAYS_LIVE)
        return true;
    if (bit & CAP_IN_FRAME) {
        struct frame *f = frame_info(cap_pa(c));
        return f && (f->version & CAP_VERSION_MASK) == cap_version(c);
    }
    return cap_live(c);
}
/* The same with only the first test inline (the IPC fast path, whose
 * registers are precious). */
static ALWAYS_INLINE bool cap_live_quick(struct cap c)
{
    return ((1u << cap_type(c)) & CAP_ALWAYS_LIVE) || cap_live(c);
}

/* Look up addr and check that it holds a live capability of `type` (0 = any)
 * with all of `rights`.  Returns KEEP_ERR_OK and the capability, or an error
 * (OUT_OF_RANGE, NO_CAPPAGE, INVALID_CAP, STALE, WRONG_TYPE, NO_RIGHTS). */
u64 cap_lookup(struct aspace *as, u64 addr, u64 type, u64 rights, struct cap *out);
/* The same checks on a slot already found (err: the lookup's error, or OK
 * and the slot).  Inline: every invocation makes them. */
static inline u64 cap_check_slot(u64 err, const struct cap *s, u64 type, u64 rights, struct cap *out)
{
    if (err)
        return err;
    struct cap c = *s;
    if (cap_is_null(c))
        return KEEP_ERR_INVALID_CAP;
    if (!cap_live_inline(c))
        return KEEP_ERR_STALE;
    if (type && cap_type(c) != type)
        return KEEP_ERR_WRONG_TYPE;
    if ((cap_rights(c) & rights) != rights)
        return KEEP_ERR_NO_RIGHTS;
    *out = c;
    return KEEP_ERR_OK;
}

/* A cappage was unmapped or an address space destroyed: drop what the
 * lookup strategy caches (nothing for the MMU lookup). */
void cspace_forget(void);
/* An empty slot to fill: OK, or OUT_OF_RANGE / NO_CAPPAGE / EXISTS. */
u64 cap_empty_slot(struct aspace *as, u64 addr, struct cap **slot);

#endif
