/* Address-space objects: MAP, UNMAP, LOOKUP, INSERT_CAP, DELETE_CAP. */
#include "aspace.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"

static u16 next_pcid = 1;

u64 aspace_create(u64 *pa_out)
{
    if (frame_free_count() < ASPACE_FRAMES)
        return KEEP_ERR_NO_MEMORY;
    u64 pa = frame_alloc(FRAME_ASPACE);
    struct aspace *as = phys_to_virt(pa);
    as->pml4_pa = frame_alloc(FRAME_PAGETABLE);
    as->caps = phys_to_virt(frame_alloc(FRAME_CAPTABLE));
    pml4_init_user(as->pml4_pa);
    /* PCIDs are handed out once; later spaces go without (flush on switch). */
    as->pcid = next_pcid < 4096 ? next_pcid++ : 0;
    *pa_out = pa;
    return KEEP_ERR_OK;
}

static u64 pt_alloc(void *ctx UNUSED) { return frame_alloc(FRAME_PAGETABLE); }

u64 aspace_map_frame(struct aspace *as, u64 va, u64 pa, u64 rights)
{
    if (frame_free_count() < 3) /* at most three new tables below the PML4 */
        return KEEP_ERR_NO_MEMORY;
    u64 flags = 0;
    if (rights & KEEP_RIGHT_WRITE)
        flags |= PTE_W;
    if (!(rights & KEEP_RIGHT_EXEC))
        flags |= PTE_NX;
    ASSERT(user_map(as->pml4_pa, va, pa, flags, pt_alloc, NULL) == 0);
    return KEEP_ERR_OK;
}

/* Mapped pages of the address space currently loaded, and TLB upkeep. */
static void tlb_forget(struct aspace *as, u64 va)
{
    struct process *cur = cpu0.current;
    if (cur && cur->as == as)
        flush_page(va);
    else
        as->tlb_stale = true;
}

static bool user_page_addr(u64 va) { return va < KEEP_USER_TOP && (va & (PAGE_SIZE - 1)) == 0; }

static u64 do_map(struct invocation *inv, struct aspace *as)
{
    u64 slot = inv->arg[0], va = inv->arg[1], rights = inv->arg[2];
    struct cap page;
    if (!inv_has(inv, KEEP_RIGHT_WRITE))
        return KEEP_ERR_NO_RIGHTS;
    u64 e = cap_lookup(inv->caller->as, slot, KEEP_TYPE_PAGE, 0, &page);
    if (e)
        return e;
    if (!user_page_addr(va) || (rights & ~KEEP_RIGHT_ALL) || !(rights & KEEP_RIGHT_READ) ||
        (rights & (KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC)) == (KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC))
        return KEEP_ERR_INVALID_ARG;
    if ((cap_rights(page) & rights) != rights)
        return KEEP_ERR_NO_RIGHTS;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (pte && (*pte & PTE_P))
        return KEEP_ERR_EXISTS;
    return aspace_map_frame(as, va, cap_pa(page), rights);
}

static u64 do_unmap(struct invocation *inv, struct aspace *as)
{
    u64 va = inv->arg[0];
    if (!inv_has(inv, KEEP_RIGHT_WRITE))
        return KEEP_ERR_NO_RIGHTS;
    if (!user_page_addr(va))
        return KEEP_ERR_INVALID_ARG;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (!pte || !(*pte & PTE_P))
        return KEEP_ERR_NOT_MAPPED;
    *pte = 0;
    tlb_forget(as, va);
    return KEEP_ERR_OK;
}

static u64 do_lookup(struct invocation *inv, struct aspace *as)
{
    u64 va = inv->arg[0];
    if (!inv_has(inv, KEEP_RIGHT_READ))
        return KEEP_ERR_NO_RIGHTS;
    if (!user_page_addr(va))
        return KEEP_ERR_INVALID_ARG;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (!pte || !(*pte & PTE_P))
        return KEEP_ERR_NOT_MAPPED;
    u64 rights = KEEP_RIGHT_READ;
    if (*pte & PTE_W)
        rights |= KEEP_RIGHT_WRITE;
    if (!(*pte & PTE_NX))
        rights |= KEEP_RIGHT_EXEC;
    inv->res[0] = rights;
    inv->res[1] = (*pte & PTE_ADDR) >> 12;
    return KEEP_ERR_OK;
}

static u64 do_insert_cap(struct invocation *inv, struct aspace *as)
{
    u64 src = inv->arg[0], dest = inv->arg[1], rights = inv->arg[2];
    struct cap c;
    if (!inv_has(inv, KEEP_RIGHT_WRITE))
        return KEEP_ERR_NO_RIGHTS;
    u64 e = cap_lookup(inv->caller->as, src, 0, 0, &c);
    if (e)
        return e;
    struct cap *d = cspace_slot(as, dest);
    if (!d || dest == 0 || (rights & ~KEEP_RIGHT_ALL))
        return KEEP_ERR_INVALID_ARG;
    if (!cap_is_null(*d))
        return KEEP_ERR_EXISTS;
    *d = cap_restrict(c, rights);
    return KEEP_ERR_OK;
}

static u64 do_delete_cap(struct invocation *inv, struct aspace *as)
{
    u64 slot = inv->arg[0];
    if (!inv_has(inv, KEEP_RIGHT_WRITE))
        return KEEP_ERR_NO_RIGHTS;
    struct cap *s = cspace_slot(as, slot);
    if (!s || slot == 0)
        return KEEP_ERR_INVALID_ARG;
    if (cap_is_null(*s))
        return KEEP_ERR_INVALID_CAP;
    *s = (struct cap){0, 0};
    return KEEP_ERR_OK;
}

u64 aspace_invoke(struct invocation *inv)
{
    struct aspace *as = aspace_from_cap(inv->cap);
    switch (inv->method) {
    case KEEP_M_ASPACE_MAP:
        return do_map(inv, as);
    case KEEP_M_ASPACE_UNMAP:
        return do_unmap(inv, as);
    case KEEP_M_ASPACE_INSERT_CAP:
        return do_insert_cap(inv, as);
    case KEEP_M_ASPACE_DELETE_CAP:
        return do_delete_cap(inv, as);
    case KEEP_M_ASPACE_LOOKUP:
        return do_lookup(inv, as);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
