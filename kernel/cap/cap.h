/* Capabilities: two 64-bit words (docs/kernel-manual.md, "Capabilities").
 *   w0: bits 0-4 type, 5-9 rights, then
 *       objects in frames:                  10-24 zero, 25-63 version (39 bits)
 *       PROCESS, SENDER, RETURN:            10-29 process number, 30-63 version (34 bits)
 *   w1: protected payload (SENDER), or the object's frame (kernel objects)
 * The all-zero capability is the null capability.  This header is pure so
 * that the host tests can check the encoding. */
#ifndef KEEP_CAP_H
#define KEEP_CAP_H

#include "keep/abi.h"
#include "types.h"

struct cap {
    u64 w0, w1;
};

#define CAP_TYPE_MASK 0x1fULL
#define CAP_RIGHTS_SHIFT 5
#define CAP_RIGHTS_MASK 0x1fULL
#define CAP_OBJNUM_SHIFT 10
#define CAP_OBJNUM_BITS 15
#define CAP_VERSION_SHIFT 25
#define CAP_VERSION_MASK ((1ULL << 39) - 1)

static inline struct cap cap_make(u64 type, u64 rights, u64 objnum, u64 version, u64 w1)
{
    return (struct cap){(type & CAP_TYPE_MASK) | ((rights & CAP_RIGHTS_MASK) << CAP_RIGHTS_SHIFT) |
                            ((objnum & ((1ULL << CAP_OBJNUM_BITS) - 1)) << CAP_OBJNUM_SHIFT) |
                            ((version & CAP_VERSION_MASK) << CAP_VERSION_SHIFT),
                        w1};
}
/* Process capabilities name a process number (process_number.c), 20 bits so
 * that numbers cannot run out before the memory that pays for processes. */
#define CAP_PNUM_SHIFT 10
#define CAP_PNUM_BITS 20
#define CAP_PVERSION_SHIFT 30
#define CAP_PVERSION_MASK ((1ULL << 34) - 1)
_Static_assert(KEEP_PROCESS_NUMBERS == 1ULL << CAP_PNUM_BITS, "the ABI's process numbers fit the capability");

static inline struct cap cap_make_process(u64 type, u64 rights, u64 num, u64 version, u64 w1)
{
    return (struct cap){(type & CAP_TYPE_MASK) | ((rights & CAP_RIGHTS_MASK) << CAP_RIGHTS_SHIFT) |
                            ((num & ((1ULL << CAP_PNUM_BITS) - 1)) << CAP_PNUM_SHIFT) |
                            ((version & CAP_PVERSION_MASK) << CAP_PVERSION_SHIFT),
                        w1};
}
/* A RETURN capability's reply version: 34 bits in its first word (above
 * the number) and 32 more in its second, so that no run of one process's
 * calls brings an old version back (that takes 2^66 of them).  One step,
 * carrying into the second word. */
static ALWAYS_INLINE void reply_version_next(u64 *w0, u32 *hi)
{
    /* The version is the top of w0, so its carry is the addition's: two
     * instructions (the IPC fast path runs this; host tests too). */
    __asm__("addq %2, %0\n\tadcl $0, %1" : "+m"(*w0), "+m"(*hi) : "i"(1ULL << CAP_PVERSION_SHIFT) : "cc");
}
static inline u64 cap_pnum(struct cap c) { return (c.w0 >> CAP_PNUM_SHIFT) & ((1ULL << CAP_PNUM_BITS) - 1); }
static inline u64 cap_pversion(struct cap c) { return c.w0 >> CAP_PVERSION_SHIFT; }
static inline u64 cap_type(struct cap c) { return c.w0 & CAP_TYPE_MASK; }
static inline u64 cap_rights(struct cap c) { return (c.w0 >> CAP_RIGHTS_SHIFT) & CAP_RIGHTS_MASK; }
static inline u64 cap_version(struct cap c) { return c.w0 >> CAP_VERSION_SHIFT; }
static inline u64 cap_pa(struct cap c) { return c.w1; }
static inline u64 cap_payload(struct cap c) { return c.w1; }
static inline bool cap_is_null(struct cap c) { return c.w0 == 0 && c.w1 == 0; }
static inline bool cap_weak(struct cap c) { return cap_rights(c) & KEEP_RIGHT_WEAK; }

/* Keep the rights both have; WEAK in either stays and takes WRITE away.
 * Never amplifies. */
static ALWAYS_INLINE struct cap cap_restrict(struct cap c, u64 mask)
{
    u64 old = cap_rights(c);
    u64 r = (old & mask & KEEP_RIGHT_ALL) | ((old | mask) & KEEP_RIGHT_WEAK);
    if (r & KEEP_RIGHT_WEAK)
        r &= ~KEEP_RIGHT_WRITE;
    return (struct cap){(c.w0 & ~(CAP_RIGHTS_MASK << CAP_RIGHTS_SHIFT)) | (r << CAP_RIGHTS_SHIFT), c.w1};
}

/* A rights mask from user code: 0 keeps the rights as they are. */
static ALWAYS_INLINE struct cap cap_mask(struct cap c, u64 mask) { return mask ? cap_restrict(c, mask) : c; }

/* What a capability fetched through a weak capability becomes (EROS). */
static inline struct cap cap_weaken(struct cap c)
{
    switch (cap_type(c)) {
    case KEEP_TYPE_PAGE:
        return cap_restrict(c, KEEP_RIGHT_READ);
    case KEEP_TYPE_CAPPAGE:
    case KEEP_TYPE_ASPACE:
        return cap_restrict(c, KEEP_RIGHT_READ | KEEP_RIGHT_WEAK);
    default:
        return (struct cap){0, 0};
    }
}

#ifndef HOST_TEST
#include "cspace.h"
#endif

#endif
