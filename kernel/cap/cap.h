/* Capabilities: two words.
 *   w0: bits 0-7 object type, bits 8-15 rights, bits 16-63 object frame number
 *   w1: the object's version when the capability was made
 * The all-zero capability is the null capability.  A capability is valid
 * while its version equals the version in the frame table; destroying an
 * object raises the version, so every copy goes stale at once.  Objects that
 * exist once (console, kernel, memory) have frame number 0 and never change
 * version. */
#ifndef KEEP_CAP_H
#define KEEP_CAP_H

#include "types.h"

struct cap {
    u64 w0, w1;
};

static inline struct cap cap_make(u64 type, u64 rights, u64 pa, u64 version)
{
    return (struct cap){(type & 0xff) | ((rights & 0xff) << 8) | ((pa >> 12) << 16), version};
}
static inline u64 cap_type(struct cap c) { return c.w0 & 0xff; }
static inline u64 cap_rights(struct cap c) { return (c.w0 >> 8) & 0xff; }
static inline u64 cap_pa(struct cap c) { return (c.w0 >> 16) << 12; }
static inline u64 cap_version(struct cap c) { return c.w1; }
static inline bool cap_is_null(struct cap c) { return c.w0 == 0 && c.w1 == 0; }
static inline struct cap cap_restrict(struct cap c, u64 rights)
{
    return (struct cap){c.w0 & ~((~rights & 0xff) << 8), c.w1};
}

struct aspace;

/* The slot of a capability space, or NULL if slot is outside the space. */
struct cap *cspace_slot(struct aspace *as, u64 slot);

/* Look up slot and check that it holds a live capability of `type` (0 = any)
 * with all of `rights`.  Returns KEEP_ERR_OK and the capability, or an error
 * (INVALID_CAP, STALE, WRONG_TYPE, NO_RIGHTS) and changes nothing. */
u64 cap_lookup(struct aspace *as, u64 slot, u64 type, u64 rights, struct cap *out);

#endif
