/* Address-space objects: data mappings (MAP, UNMAP, LOOKUP), the capability
 * space (MAP_CAPPAGE, UNMAP_CAPPAGE) and operations on the capabilities in
 * it (INSERT, EXTRACT, DELETE, COPY, MOVE, IDENTIFY, COMPARE). */
#include "aspace.h"
#include "checkpoint.h"
#include "wrapper.h"
#include "account.h"
#include "device.h"
#include "frame.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"

static u16 next_pcid = 1;

struct aspace *aspaces_first;
static struct aspace *aspaces_last;
static u64 next_serial = 1;

/* A space joins the end of the order, with the next serial. */
static void order_append(struct aspace *as)
{
    as->serial = next_serial++;
    as->all_next = NULL;
    as->all_prev = aspaces_last;
    if (aspaces_last)
        aspaces_last->all_next = as;
    else
        aspaces_first = as;
    aspaces_last = as;
}

static void order_remove(struct aspace *as)
{
    if (as->all_prev)
        as->all_prev->all_next = as->all_next;
    else
        aspaces_first = as->all_next;
    if (as->all_next)
        as->all_next->all_prev = as->all_prev;
    else
        aspaces_last = as->all_prev;
}

u64 aspace_create(struct account *a)
{
    u64 pa = kmem_alloc(a, FRAME_ASPACE);
    struct aspace *as = phys_to_virt(pa);
    as->account = a;
    as->acct_next = a->aspaces;
    if (a->aspaces)
        a->aspaces->acct_prev = as;
    a->aspaces = as;
    order_append(as);
    as->pml4_pa = kmem_alloc(a, FRAME_PAGETABLE);
    pml4_init_user(as->pml4_pa);
    /* PCIDs are handed out once; later spaces go without (flush on switch). */
    as->pcid = next_pcid < 4096 ? next_pcid++ : 0;
    as->cr3 = paging_cr3(as->pml4_pa, as->pcid);
    return pa;
}

void aspace_load_flush(struct aspace *as)
{
    switch_address_space(as->pml4_pa, as->pcid, as->tlb_stale);
    as->tlb_stale = false;
    cpu0.loaded_as = as;
}

static void free_to_account(void *ctx, u64 pa) { kmem_free(ctx, pa); }

/* Every mapping of a managed frame (page, cappage, boot image) is counted,
 * so that MEMORY.RECLAIM can tell whether a frame is still reachable. */
static void count_map(u64 pa)
{
    struct frame *f = frame_info(pa);
    if (f)
        f->maps++;
}

static void count_unmap(u64 pa)
{
    struct frame *f = frame_info(pa);
    if (f) {
        ASSERT(f->maps > 0);
        f->maps--;
    }
}

/* A mapping that goes with its space: a cappage no space maps any more
 * takes its return capabilities with it (their callers hear NO_REPLY). */
static void count_unmap_gone(u64 pa)
{
    count_unmap(pa);
    struct frame *f = frame_info(pa);
    if (f && f->type == FRAME_CAPPAGE && f->maps == 0)
        cappage_lost(pa);
}

/* Is a recorded cappage mapped in the segment now, or are its tables out? */
static bool cappage_in_segment(struct aspace *as, const struct cappage_map *m)
{
    u64 *pte = user_pte(as->pml4_pa, capseg_va(m->cap_addr));
    return pte && (*pte & PTE_P);
}

static void forget_record(struct aspace *as, struct cappage_map *m)
{
    *m = as->cappages[--as->ncappages];
}

bool aspace_take_down(struct aspace *as, unsigned *budget)
{
    if (cpu0.cap_miss_as == as)
        cpu0.cap_miss_as = NULL;
    if (cpu0.loaded_as == as) { /* never keep freed tables loaded */
        switch_address_space(kernel_pml4_phys(), 0, true);
        cpu0.loaded_as = NULL;
    }
    /* Cappages whose segment tables are out are mapped all the same; the
     * records go, and no segment table is taken back any more. */
    for (u32 i = 0; i < as->ncappages; i++)
        if (!cappage_in_segment(as, &as->cappages[i]))
            count_unmap_gone(as->cappages[i].pa);
    as->ncappages = 0;
    as->capseg_unrecorded = true;
    struct table_walk w = {free_to_account, count_unmap_gone, as->account};
    bool done = free_user_tables_part(as->pml4_pa, &w, budget);
    as->tlb_stale = true; /* whatever the TLB holds of it is gone */
    as->unmap_generation++;
    cspace_forget();
    return done;
}

void aspace_destroy(struct aspace *as)
{
    struct account *a = as->account;
    u64 pa = virt_to_phys_window(as);
    if (cpu0.cap_miss_as == as)
        cpu0.cap_miss_as = NULL;
    if (cpu0.loaded_as == as) { /* never keep freed tables loaded */
        switch_address_space(kernel_pml4_phys(), 0, true);
        cpu0.loaded_as = NULL;
    }
    /* Cappages whose segment tables are out are mapped all the same. */
    for (u32 i = 0; i < as->ncappages; i++)
        if (!cappage_in_segment(as, &as->cappages[i]))
            count_unmap_gone(as->cappages[i].pa);
    struct table_walk w = {free_to_account, count_unmap_gone, a};
    free_user_tables(as->pml4_pa, &w);
    if (as->acct_prev)
        as->acct_prev->acct_next = as->acct_next;
    else
        a->aspaces = as->acct_next;
    if (as->acct_next)
        as->acct_next->acct_prev = as->acct_prev;
    order_remove(as);
    cspace_forget();
    kmem_free(a, as->pml4_pa);
    frame_info(pa)->version++;
    kmem_free(a, pa);
}

/* A restored space keeps tables, pages and cappages of the pool only
 * (checkpoint.c): whatever else it mapped belongs to an earlier boot. */
static bool adopt_keep(void *ctx, u64 pa, int level)
{
    (void)ctx;
    if (!frame_in_pool(pa))
        return false;
    struct frame *f = frame_info(pa);
    if (level > 0)
        return f->type == FRAME_PAGETABLE;
    if (f->type != FRAME_PAGE && f->type != FRAME_CAPPAGE)
        return false;
    f->maps++;
    return true;
}

void aspace_adopt(struct aspace *as)
{
    order_append(as); /* its links are an earlier boot's */
    struct adopt_walk w = {adopt_keep, NULL};
    user_tables_adopt(as->pml4_pa, &w);
    for (u32 i = 0; i < as->ncappages;) {
        struct cappage_map *m = &as->cappages[i];
        struct frame *f = frame_in_pool(m->pa) ? frame_info(m->pa) : NULL;
        if (!f || f->type != FRAME_CAPPAGE) {
            forget_record(as, m);
            continue;
        }
        if (!cappage_in_segment(as, m))
            f->maps++; /* its tables are out: mapped all the same */
        i++;
    }
    as->pcid = next_pcid < 4096 ? next_pcid++ : 0;
    as->cr3 = paging_cr3(as->pml4_pa, as->pcid);
    as->tlb_stale = true;
    as->unmap_generation++;
    as->nproc = 0; /* its restored processes count themselves in */
    as->nout = 0;
}

static u64 pt_alloc(void *ctx) { return kmem_alloc(ctx, FRAME_PAGETABLE); }

u64 aspace_map_tables(struct aspace *as, u64 va) { return tables_missing(as->pml4_pa, va); }
u64 aspace_cappage_tables(struct aspace *as, u64 cap_addr)
{
    return tables_missing(as->pml4_pa, capseg_va(cap_addr));
}

void aspace_map_frame(struct aspace *as, u64 va, u64 pa, u64 rights, bool uncached)
{
    u64 flags = uncached ? PTE_PCD | PTE_PWT : 0;
    if (rights & KEEP_RIGHT_WRITE) {
        flags |= PTE_W;
        checkpoint_touch(pa); /* a new way to write it, below no protection */
    }
    if (!(rights & KEEP_RIGHT_EXEC))
        flags |= PTE_NX;
    if (frame_in_pool(pa))
        as->maps_pool = true;
    ASSERT(user_map(as->pml4_pa, va, pa, flags, pt_alloc, as->account) == 0);
    count_map(pa);
}

void aspace_map_cappage(struct aspace *as, u64 cap_addr, u64 pa)
{
    ASSERT(capseg_map(as->pml4_pa, cap_addr, pa, pt_alloc, as->account) == 0);
    count_map(pa);
    if (as->ncappages < ASPACE_CAPPAGE_RECORD)
        as->cappages[as->ncappages++] = (struct cappage_map){cap_addr, pa};
    else
        as->capseg_unrecorded = true;
}

struct cappage_map *aspace_cappage_record(struct aspace *as, u64 cap_addr)
{
    u64 base = cap_addr - cap_addr % KEEP_CAPPAGE_SLOTS;
    for (u32 i = 0; i < as->ncappages; i++)
        if (as->cappages[i].cap_addr == base)
            return &as->cappages[i];
    return NULL;
}


void aspace_capseg_rebuild(struct aspace *as, struct cappage_map *m)
{
    ASSERT(capseg_map(as->pml4_pa, m->cap_addr, m->pa, pt_alloc, as->account) == 0);
}



/* TLB upkeep for a mapping removed from as. */
static void tlb_forget(struct aspace *as, u64 va)
{
    if (cpu0.loaded_as == as)
        flush_page(va);
    else
        as->tlb_stale = true;
}

/* Remove the mapping *pte of va (a user address or a capability-segment
 * address) from as. */
static void unmap_pte(struct aspace *as, u64 *pte, u64 va)
{
    u64 pa = *pte & PTE_ADDR;
    *pte = 0;
    as->unmap_generation++;
    tlb_forget(as, va);
    count_unmap(pa);
}

static void frame_gone(void *ctx, u64 va) { tlb_forget(ctx, va); }

bool aspace_unmap_frame(struct aspace *as, struct frame_sweep *s)
{
    unsigned before = s->n;
    if (s->pos == 0) { /* a recorded cappage: its mapping and its record go at once */
        for (u32 i = 0; i < as->ncappages;) {
            struct cappage_map *m = &as->cappages[i];
            if (m->pa != s->pa) {
                i++;
                continue;
            }
            u64 va = capseg_va(m->cap_addr), *pte = user_pte(as->pml4_pa, va);
            if (pte && (*pte & PTE_P) && (*pte & PTE_ADDR) == s->pa) {
                *pte = 0;
                tlb_forget(as, va);
            }
            s->n++; /* in the segment, or mapped with its tables out */
            forget_record(as, m);
        }
    }
    s->gone = frame_gone;
    s->ctx = as;
    bool done = unmap_frame_sweep(as->pml4_pa, s);
    unsigned n = s->n - before;
    struct frame *f = frame_info(s->pa);
    ASSERT(f->maps >= n);
    f->maps -= n;
    if (n) {
        as->unmap_generation++;
        cspace_forget();
    }
    return done;
}

bool aspace_device_mapped(u64 as_pa, u64 as_version, u64 va, u64 pa, bool unmap)
{
    struct frame *f = frame_info(as_pa);
    if (f->type != FRAME_ASPACE || f->version != as_version)
        return false; /* the space is gone, and its mappings with it */
    struct aspace *as = phys_to_virt(as_pa);
    u64 *pte = user_pte(as->pml4_pa, va);
    if (!pte || (*pte & (PTE_P | PTE_PCD)) != (PTE_P | PTE_PCD) || (*pte & PTE_ADDR) != pa)
        return false;
    if (unmap)
        unmap_pte(as, pte, va);
    return true;
}

static bool user_page_addr(u64 va) { return va < KEEP_USER_TOP && (va & (PAGE_SIZE - 1)) == 0; }

static u64 do_map(struct invocation *inv, struct aspace *as)
{
    u64 va = inv->arg[1], rights = inv->arg[2], offset = inv->arg[3], pa;
    struct cap page;
    u64 via[KEEP_WRAPPER_DEPTH];
    unsigned nvia = 0;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], 0, 0, &page);
    if (e)
        return e;
    if (cap_type(page) == KEEP_TYPE_WRAPPER) { /* for device memory only: wrapper.c */
        if ((e = wrapper_resolve(&page, via, &nvia)))
            return e;
        if (cap_type(page) != KEEP_TYPE_DEVMEM)
            return KEEP_ERR_WRONG_TYPE;
    }
    bool device = cap_type(page) == KEEP_TYPE_DEVMEM;
    if (cap_type(page) != KEEP_TYPE_PAGE && !device)
        return KEEP_ERR_WRONG_TYPE;
    if (device) {
        if ((e = devmem_page(page, offset, &pa)))
            return e;
    } else {
        if (offset)
            return KEEP_ERR_INVALID_ARG;
        pa = cap_pa(page);
    }
    if (!user_page_addr(va) || (rights & ~KEEP_RIGHT_ALL) || !(rights & KEEP_RIGHT_READ) ||
        (rights & (KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC)) == (KEEP_RIGHT_WRITE | KEEP_RIGHT_EXEC) ||
        (rights & KEEP_RIGHT_CALL))
        return KEEP_ERR_INVALID_ARG;
    if ((cap_rights(page) & rights) != rights)
        return KEEP_ERR_NO_RIGHTS;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (pte && (*pte & PTE_P))
        return KEEP_ERR_EXISTS;
    if (!device && (frame_info(pa)->flags & FRAME_REVOKING))
        return KEEP_ERR_IN_USE; /* being revoked (memory.c) */
    if ((e = wrapper_map_room(via, nvia)) || (e = kmem_need(inv, as->account, aspace_map_tables(as, va))))
        return e;
    aspace_map_frame(as, va, pa, rights, device);
    wrapper_note_map(via, nvia, as, va, pa);
    return KEEP_ERR_OK;
}

static u64 do_unmap(struct invocation *inv, struct aspace *as)
{
    u64 va = inv->arg[0];
    if (!user_page_addr(va))
        return KEEP_ERR_INVALID_ARG;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (!pte || !(*pte & PTE_P))
        return KEEP_ERR_NOT_MAPPED;
    unmap_pte(as, pte, va);
    return KEEP_ERR_OK;
}

static u64 do_lookup(struct invocation *inv, struct aspace *as)
{
    u64 va = inv->arg[0];
    if (!user_page_addr(va))
        return KEEP_ERR_INVALID_ARG;
    u64 *pte = user_pte(as->pml4_pa, va);
    if (!pte || !(*pte & PTE_P))
        return KEEP_ERR_NOT_MAPPED;
    u64 rights = KEEP_RIGHT_READ;
    if (*pte & (PTE_W | PTE_CKW))
        rights |= KEEP_RIGHT_WRITE;
    if (!(*pte & PTE_NX))
        rights |= KEEP_RIGHT_EXEC;
    inv->res[0] = rights;
    inv->res[1] = (*pte & PTE_ADDR) >> 12;
    return KEEP_ERR_OK;
}

static u64 cappage_addr_check(u64 cap_addr)
{
    if (cap_addr >= KEEP_CAP_SPACE_SLOTS)
        return KEEP_ERR_OUT_OF_RANGE;
    return (cap_addr % KEEP_CAPPAGE_SLOTS) ? KEEP_ERR_INVALID_ARG : KEEP_ERR_OK;
}

static u64 do_map_cappage(struct invocation *inv, struct aspace *as)
{
    u64 cap_addr = inv->arg[1];
    struct cap cp;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_CAPPAGE, KEEP_RIGHT_WRITE, &cp);
    if (e)
        return e;
    if ((e = cappage_addr_check(cap_addr)))
        return e;
    u64 *pte = user_pte(as->pml4_pa, capseg_va(cap_addr));
    if ((pte && (*pte & PTE_P)) || aspace_cappage_record(as, cap_addr))
        return KEEP_ERR_EXISTS;
    if (frame_info(cap_pa(cp))->flags & FRAME_REVOKING)
        return KEEP_ERR_IN_USE; /* being revoked (memory.c) */
    if ((e = kmem_need(inv, as->account, aspace_cappage_tables(as, cap_addr))))
        return e;
    aspace_map_cappage(as, cap_addr, cap_pa(cp));
    return KEEP_ERR_OK;
}

static u64 do_unmap_cappage(struct invocation *inv, struct aspace *as)
{
    u64 cap_addr = inv->arg[0];
    u64 e = cappage_addr_check(cap_addr);
    if (e)
        return e;
    u64 *pte = user_pte(as->pml4_pa, capseg_va(cap_addr)), pa;
    struct cappage_map *m = aspace_cappage_record(as, cap_addr);
    if (pte && (*pte & PTE_P)) {
        pa = *pte & PTE_ADDR;
        unmap_pte(as, pte, capseg_va(cap_addr));
    } else if (m) { /* its segment tables are out */
        pa = m->pa;
        count_unmap(pa);
        as->unmap_generation++;
    } else {
        return KEEP_ERR_NOT_MAPPED;
    }
    if (m)
        forget_record(as, m);
    cspace_forget();
    if (frame_info(pa)->maps == 0) /* mapped nowhere: its return capabilities reach nobody */
        cappage_lost(pa);
    return KEEP_ERR_OK;
}

/* INSERT (caller -> this space) and EXTRACT (this space -> caller). */
static u64 transfer(struct invocation *inv, struct aspace *from, struct aspace *to, bool weaken)
{
    u64 rights = inv->arg[2];
    struct cap c, *dest;
    u64 e = cap_lookup(from, inv->arg[0], 0, 0, &c);
    if (e)
        return e;
    if ((e = cap_empty_slot(to, inv->arg[1], &dest)))
        return e;
    if ((rights & ~(KEEP_RIGHT_ALL | KEEP_RIGHT_WEAK)) || cap_type(c) == KEEP_TYPE_RETURN)
        return KEEP_ERR_INVALID_ARG; /* a return capability is never copied */
    c = cap_mask(c, rights);
    *dest = weaken ? cap_weaken(c) : c;
    return KEEP_ERR_OK;
}

static u64 do_delete(struct aspace *as, u64 addr)
{
    struct cap *s;
    u64 e = cspace_slot(as, addr, &s);
    if (e)
        return e;
    if (cap_is_null(*s))
        return KEEP_ERR_INVALID_CAP;
    struct cap old = *s;
    *s = (struct cap){0, 0};
    return_cap_lost(old);
    return KEEP_ERR_OK;
}

static u64 do_copy_move(struct invocation *inv, struct aspace *as, bool move)
{
    u64 rights = move ? 0 : inv->arg[2];
    struct cap *src, *dest;
    u64 e = cspace_slot(as, inv->arg[0], &src);
    if (e)
        return e;
    if (cap_is_null(*src))
        return KEEP_ERR_INVALID_CAP;
    if ((e = cap_empty_slot(as, inv->arg[1], &dest)))
        return e;
    if ((rights & ~(KEEP_RIGHT_ALL | KEEP_RIGHT_WEAK)) || (!move && cap_type(*src) == KEEP_TYPE_RETURN))
        return KEEP_ERR_INVALID_ARG; /* a return capability moves, never copies */
    *dest = cap_mask(*src, rights);
    if (move)
        *src = (struct cap){0, 0};
    return KEEP_ERR_OK;
}

/* The object a capability designates, for COMPARE: processes by number. */
static void object_key(struct cap c, u64 *kind, u64 *id)
{
    switch (cap_type(c)) {
    case KEEP_TYPE_PROCESS:
    case KEEP_TYPE_SENDER:
    case KEEP_TYPE_RETURN:
        *kind = KEEP_TYPE_PROCESS;
        *id = cap_pnum(c);
        return;
    default:
        *kind = cap_type(c);
        *id = cap_pa(c);
    }
}

static u64 do_identify_compare(struct invocation *inv, struct aspace *as, bool compare)
{
    struct cap *a, *b;
    u64 e = cspace_slot(as, inv->arg[0], &a);
    if (e)
        return e;
    if (!compare) {
        inv->res[0] = cap_type(*a);
        inv->res[1] = cap_rights(*a);
        inv->res[2] = !cap_is_null(*a) && cap_live(*a);
        return KEEP_ERR_OK;
    }
    if ((e = cspace_slot(as, inv->arg[1], &b)))
        return e;
    u64 ka, ia, kb, ib;
    object_key(*a, &ka, &ia);
    object_key(*b, &kb, &ib);
    inv->res[0] = ka == kb && ia == ib && !cap_is_null(*a);
    inv->res[1] = a->w0 == b->w0 && a->w1 == b->w1;
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
    case KEEP_M_ASPACE_LOOKUP:
        return do_lookup(inv, as);
    case KEEP_M_ASPACE_MAP_CAPPAGE:
        return do_map_cappage(inv, as);
    case KEEP_M_ASPACE_UNMAP_CAPPAGE:
        return do_unmap_cappage(inv, as);
    case KEEP_M_ASPACE_INSERT_CAP:
        return transfer(inv, inv->caller->as, as, false);
    case KEEP_M_ASPACE_EXTRACT_CAP:
        return transfer(inv, as, inv->caller->as, cap_weak(inv->cap));
    case KEEP_M_ASPACE_DELETE_CAP:
        return do_delete(as, inv->arg[0]);
    case KEEP_M_ASPACE_COPY_CAP:
        return do_copy_move(inv, as, false);
    case KEEP_M_ASPACE_MOVE_CAP:
        return do_copy_move(inv, as, true);
    case KEEP_M_ASPACE_IDENTIFY_CAP:
        return do_identify_compare(inv, as, false);
    case KEEP_M_ASPACE_COMPARE_CAP:
        return do_identify_compare(inv, as, true);
    default:
        return KEEP_ERR_INVALID_METHOD;
    }
}
