/* The memory object: free frames, made into pages, address spaces and
 * processes by RETYPE.  (Per-task kernel-memory accounts, funded by kpagers,
 * replace this single pool with the capability kernel.) */
#include "aspace.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "process.h"

static u64 retype(struct invocation *inv)
{
    u64 type = inv->arg[0], dest = inv->arg[1], arg = inv->arg[2];
    struct aspace *mine = inv->caller->as;
    if (!inv_has(inv, KEEP_RIGHT_WRITE))
        return KEEP_ERR_NO_RIGHTS;
    if (type != KEEP_TYPE_PAGE && type != KEEP_TYPE_ASPACE && type != KEEP_TYPE_PROCESS)
        return KEEP_ERR_INVALID_ARG;
    struct cap *d = cspace_slot(mine, dest);
    if (!d || dest == 0)
        return KEEP_ERR_INVALID_ARG;
    if (!cap_is_null(*d))
        return KEEP_ERR_EXISTS;
    struct cap as_cap = {0, 0};
    if (type == KEEP_TYPE_PROCESS) {
        u64 e = cap_lookup(mine, arg, KEEP_TYPE_ASPACE, KEEP_RIGHT_WRITE, &as_cap);
        if (e)
            return e;
    }

    u64 pa, e;
    switch (type) {
    case KEEP_TYPE_PAGE:
        pa = frame_alloc(FRAME_PAGE);
        e = pa ? KEEP_ERR_OK : KEEP_ERR_NO_MEMORY;
        break;
    case KEEP_TYPE_ASPACE:
        e = aspace_create(&pa);
        break;
    default:
        e = process_create(aspace_from_cap(as_cap), &pa);
        break;
    }
    if (e)
        return e;
    *d = cap_make(type, KEEP_RIGHT_ALL, pa, frame_info(pa)->version);
    return KEEP_ERR_OK;
}

u64 memory_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_MEMORY_RETYPE:
        return retype(inv);
    case KEEP_M_MEMORY_FREE:
        if (!inv_has(inv, KEEP_RIGHT_READ))
            return KEEP_ERR_NO_RIGHTS;
        inv->res[0] = frame_free_count();
        return KEEP_ERR_OK;
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
