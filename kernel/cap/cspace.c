/* Capability spaces.  In this version an address space has a fixed table of
 * KEEP_CSPACE_SLOTS capabilities; the sparse MMU-looked-up space replaces it
 * behind the same two functions. */
#include "aspace.h"
#include "cap.h"
#include "frame.h"
#include "keep/abi.h"

struct cap *cspace_slot(struct aspace *as, u64 slot)
{
    if (slot >= KEEP_CSPACE_SLOTS)
        return NULL;
    return &as->caps[slot];
}

u64 cap_lookup(struct aspace *as, u64 slot, u64 type, u64 rights, struct cap *out)
{
    struct cap *s = cspace_slot(as, slot);
    if (!s || cap_is_null(*s))
        return KEEP_ERR_INVALID_CAP;
    struct cap c = *s;
    if (cap_pa(c)) {
        struct frame *f = frame_info(cap_pa(c));
        if (!f || f->version != cap_version(c))
            return KEEP_ERR_STALE;
    }
    if (type && cap_type(c) != type)
        return KEEP_ERR_WRONG_TYPE;
    if ((cap_rights(c) & rights) != rights)
        return KEEP_ERR_NO_RIGHTS;
    *out = c;
    return KEEP_ERR_OK;
}
