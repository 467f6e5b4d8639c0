/* The memory object: the pool of free frames.  RETYPE makes data pages and
 * cappages (user memory); DONATE and CREATE_ACCOUNT fund kernel-memory
 * accounts, from which every kernel object is made.  A MEMORY capability
 * names the general pool (payload 0) or the persistent pool (1, frame.h),
 * which stays shut until the checkpoint object opens or restores it. */
#include "account.h"
#include "checkpoint.h"
#include "dma_domain.h"
#include "aspace.h"
#include "frame.h"
#include "invoke.h"
#include "lib.h"
#include "keep/abi.h"
#include "process.h"

/* The pool the invoked capability names. */
static int pool_of(const struct invocation *inv) { return cap_payload(inv->cap) != 0; }

static u64 retype(struct invocation *inv)
{
    u64 type = inv->arg[0];
    struct cap *dest;
    if (type != KEEP_TYPE_PAGE && type != KEEP_TYPE_CAPPAGE)
        return KEEP_ERR_INVALID_ARG;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[1], &dest);
    if (e)
        return e;
    u64 pa = frame_alloc_from(pool_of(inv), type == KEEP_TYPE_PAGE ? FRAME_PAGE : FRAME_CAPPAGE);
    if (!pa)
        return KEEP_ERR_NO_MEMORY;
    u64 rights = type == KEEP_TYPE_PAGE ? KEEP_RIGHT_READ | KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC
                                        : KEEP_RIGHT_READ | KEEP_RIGHT_WRITE;
    *dest = cap_make(type, rights, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

static u64 donate(struct invocation *inv)
{
    struct cap acct;
    u64 n = inv->arg[1];
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_ACCOUNT, KEEP_RIGHT_WRITE, &acct);
    if (e)
        return e;
    if (n == 0 || n > 65536 || frame_in_pool(cap_pa(acct)) != pool_of(inv))
        return KEEP_ERR_INVALID_ARG;
    if (n > (pool_of(inv) ? frame_pool_free_count() : frame_free_count()))
        return KEEP_ERR_NO_MEMORY;
    account_fund(account_from_cap(acct), n);
    return KEEP_ERR_OK;
}

static u64 create_account(struct invocation *inv)
{
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[0], &dest);
    if (e)
        return e;
    struct account *a = account_create(pool_of(inv));
    if (!a)
        return KEEP_ERR_NO_MEMORY;
    u64 pa = virt_to_phys_window(a);
    *dest = cap_make(KEEP_TYPE_ACCOUNT, KEEP_RIGHT_ALL, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

/* Destroy a page or cappage that is mapped nowhere: every copy of its
 * capability goes stale with the version, and the frame goes back. */
static u64 reclaim(struct invocation *inv)
{
    struct cap c, *slot = NULL;
    u64 e = cspace_slot(inv->caller->as, inv->arg[0], &slot);
    if ((e = cap_check_slot(e, slot, 0, KEEP_RIGHT_WRITE, &c)))
        return e;
    if (cap_type(c) != KEEP_TYPE_PAGE && cap_type(c) != KEEP_TYPE_CAPPAGE)
        return KEEP_ERR_WRONG_TYPE;
    struct frame *f = frame_info(cap_pa(c));
    if (f->maps)
        return KEEP_ERR_IN_USE;
    if (cap_type(c) == KEEP_TYPE_CAPPAGE)
        cappage_lost(cap_pa(c)); /* its return capabilities go with it */
    *slot = (struct cap){0, 0};
    checkpoint_touch(cap_pa(c)); /* its version is part of its record */
    f->version++;
    frame_free(cap_pa(c));
    return KEEP_ERR_OK;
}

/* RECLAIM after taking the frame out of every space that maps it. */
static u64 revoke(struct invocation *inv)
{
    struct cap c, *slot = NULL;
    u64 e = cspace_slot(inv->caller->as, inv->arg[0], &slot);
    if ((e = cap_check_slot(e, slot, 0, KEEP_RIGHT_WRITE, &c)))
        return e;
    if (cap_type(c) != KEEP_TYPE_PAGE && cap_type(c) != KEEP_TYPE_CAPPAGE)
        return KEEP_ERR_WRONG_TYPE;
    u64 pa = cap_pa(c), n = 0;
    struct frame *f = frame_info(pa);
    /* Every address space is on its account's list: walking those visits
     * the spaces alone, where a scan of the frame table cost 1.3 million
     * instructions with 512 MiB, with interrupts off (docs/realtime.md). */
    for (struct account *a = all_accounts; a && f->maps; a = a->next)
        for (struct aspace *as = a->aspaces; as && f->maps; as = as->acct_next)
            n += aspace_unmap_frame(as, pa);
    if (f->maps) /* devices too (their mappings count in maps): no search for a page mapped nowhere */
        n += dma_domain_unmap_frame(pa);
    ASSERT(f->maps == 0);
    inv->res[0] = n;
    return reclaim(inv);
}

u64 memory_invoke(struct invocation *inv)
{
    switch (inv->method) {
    case KEEP_M_MEMORY_FREE:
        inv->res[0] = pool_of(inv) ? frame_pool_free_count() : frame_free_count();
        return KEEP_ERR_OK;
    case KEEP_M_MEMORY_RETYPE:
    case KEEP_M_MEMORY_DONATE:
    case KEEP_M_MEMORY_CREATE_ACCOUNT:
        if (pool_of(inv) && checkpoint_pool_shut())
            return KEEP_ERR_BAD_STATE;
        return inv->method == KEEP_M_MEMORY_RETYPE   ? retype(inv)
               : inv->method == KEEP_M_MEMORY_DONATE ? donate(inv)
                                                     : create_account(inv);
    case KEEP_M_MEMORY_RECLAIM:
        return reclaim(inv);
    case KEEP_M_MEMORY_REVOKE:
        return revoke(inv);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
