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
    u64 part = n > KEEP_MOVE_FRAMES ? KEEP_MOVE_FRAMES : n; /* in parts: account.h */
    account_fund(account_from_cap(acct), part);
    return part < n ? account_move_restart(inv, n - part) : KEEP_ERR_OK;
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
    f->flags &= (u8)~FRAME_REVOKING;
    f->version++;
    frame_free(cap_pa(c));
    return KEEP_ERR_OK;
}

/* Tables a REVOKE sweeps through (512 entries each) before it gives the
 * CPU up: the invocation restarts from the system call and goes on where
 * it stopped, and an interrupt that came meanwhile is taken in between. */
#define REVOKE_TABLES KEEP_REVOKE_TABLES

u64 memory_revoke_restarts;

/* Where a revoke goes on: the space it was sweeping, or when that one is
 * gone the next one made after it (the order keeps serials increasing);
 * NULL when none is left. */
static struct aspace *revoke_space(struct revoke_cursor *r)
{
    if (!r->serial)
        return aspaces_first;
    struct frame *f = frame_info(r->as_pa);
    if (f->type == FRAME_ASPACE && f->version == r->as_version)
        return phys_to_virt(r->as_pa);
    r->pos = 0;
    struct aspace *as = aspaces_first;
    while (as && as->serial <= r->serial)
        as = as->all_next;
    return as;
}

/* RECLAIM after taking the frame out of every space that maps it: a sweep
 * along the address spaces, in the order they were made, in parts of
 * REVOKE_TABLES tables (the atomic model's restart: between parts the
 * state is consistent, the frame is mapped nowhere new (FRAME_REVOKING:
 * MAP is IN_USE) and the caller's cursor says where to go on). */
static u64 revoke(struct invocation *inv)
{
    struct cap c, *slot = NULL;
    u64 e = cspace_slot(inv->caller->as, inv->arg[0], &slot);
    if ((e = cap_check_slot(e, slot, 0, KEEP_RIGHT_WRITE, &c)))
        return e;
    if (cap_type(c) != KEEP_TYPE_PAGE && cap_type(c) != KEEP_TYPE_CAPPAGE)
        return KEEP_ERR_WRONG_TYPE;
    u64 pa = cap_pa(c);
    struct frame *f = frame_info(pa);
    struct revoke_cursor *r = &inv->caller->revoke;
    if (r->pa != pa || r->version != cap_version(c) || !(f->flags & FRAME_REVOKING)) {
        *r = (struct revoke_cursor){.pa = pa, .version = cap_version(c)};
        f->flags |= FRAME_REVOKING;
    }
    struct frame_sweep s = {.pa = pa, .budget = REVOKE_TABLES};
    struct aspace *as = f->maps ? revoke_space(r) : NULL;
    s.pos = r->pos;
    for (; as && f->maps; as = as->all_next, s.pos = 0) {
        r->as_pa = virt_to_phys_window(as);
        r->as_version = frame_info(r->as_pa)->version;
        r->serial = as->serial;
        if (!aspace_unmap_frame(as, &s)) { /* its part is done: the rest after a restart */
            r->pos = s.pos;
            r->n += s.n;
            memory_revoke_restarts++;
            inv->caller->regs.rip -= 2;
            return INV_DONE;
        }
    }
    u64 n = r->n + s.n;
    if (f->maps) /* devices too (their mappings count in maps): no search for a page mapped nowhere */
        n += dma_domain_unmap_frame(pa);
    ASSERT(f->maps == 0);
    r->pa = 0;
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
