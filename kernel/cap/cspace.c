/* Capability spaces.  A capability address names a 16-byte slot in the
 * capability segment: in the loaded address space the kernel reaches it
 * through the segment's kernel-only alias (range check, shift, add, one
 * load, with a fault fix-up for unmapped cappages); in any other address
 * space it walks that space's segment tables. */
#include "aspace.h"
#include "cap.h"
#include "frame.h"
#include "keep/abi.h"
#include "process.h"
#include "wrapper.h"

u64 cspace_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    if (addr >= KEEP_CAP_SPACE_SLOTS)
        return KEEP_ERR_OUT_OF_RANGE;
    if (as == cpu0.loaded_as) {
        struct cap *s = (struct cap *)(uptr)(KEEP_CAP_SEGMENT + (addr << 4)), probe;
        if (capseg_load(s, &probe))
            return KEEP_ERR_NO_CAPPAGE;
        *slot = s;
        return KEEP_ERR_OK;
    }
    u64 *pte = user_pte(as->pml4_pa, capseg_va(addr));
    if (!pte || !(*pte & PTE_P))
        return KEEP_ERR_NO_CAPPAGE;
    *slot = (struct cap *)phys_to_virt(*pte & PTE_ADDR) + (addr % KEEP_CAPPAGE_SLOTS);
    return KEEP_ERR_OK;
}

bool cap_live(struct cap c)
{
    switch (cap_type(c)) {
    case KEEP_TYPE_NULL:
        return false;
    case KEEP_TYPE_CONSOLE:
    case KEEP_TYPE_KERNEL:
    case KEEP_TYPE_MEMORY:
    case KEEP_TYPE_TIMER:
    case KEEP_TYPE_DEVMEM:
    case KEEP_TYPE_IOPORT:
    case KEEP_TYPE_INTERRUPT:
        return true;
    case KEEP_TYPE_PROCESS:
    case KEEP_TYPE_SENDER:
        return process_by_number(cap_objnum(c), cap_version(c)) != NULL;
    case KEEP_TYPE_RETURN:
        return return_target(c) != NULL;
    default: {
        struct frame *f = frame_info(cap_pa(c));
        return f && (f->version & CAP_VERSION_MASK) == cap_version(c);
    }
    }
}

u64 cap_lookup(struct aspace *as, u64 addr, u64 type, u64 rights, struct cap *out)
{
    struct cap *s;
    u64 e = cspace_slot(as, addr, &s);
    if (e)
        return e;
    struct cap c = *s;
    if (cap_is_null(c))
        return KEEP_ERR_INVALID_CAP;
    if (!cap_live(c))
        return KEEP_ERR_STALE;
    if (type && cap_type(c) != type)
        return KEEP_ERR_WRONG_TYPE;
    if ((cap_rights(c) & rights) != rights)
        return KEEP_ERR_NO_RIGHTS;
    *out = c;
    return KEEP_ERR_OK;
}

u64 cap_empty_slot(struct aspace *as, u64 addr, struct cap **slot)
{
    u64 e = cspace_slot(as, addr, slot);
    if (e)
        return e;
    return cap_is_null(**slot) ? KEEP_ERR_OK : KEEP_ERR_EXISTS;
}
