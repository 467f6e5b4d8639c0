/* Kernel-memory accounts: INFO, SET_KPAGER, CREATE_ASPACE, CREATE_PROCESS,
 * CREATE_WRAPPER, DESTROY, RECLAIM; and the allocator every object uses. */
#include "account.h"
#include "checkpoint.h"
#include "aspace.h"
#include "dma_domain.h"
#include "notification.h"
#include "frame.h"
#include "invoke.h"
#include "ipc.h"
#include "lib.h"
#include "process.h"
#include "wrapper.h"

struct account *all_accounts;

struct account *account_create(int pool)
{
    u64 pa = frame_alloc_from(pool, FRAME_ACCOUNT);
    if (!pa)
        return NULL;
    struct account *a = phys_to_virt(pa);
    a->next = all_accounts;
    all_accounts = a;
    return a;
}

static void push_free(struct account *a, u64 pa)
{
    frame_set_type(pa, FRAME_KFREE);
    frame_list_push(&a->free_head, pa);
    a->free_count++;
}

static u64 pop_free(struct account *a)
{
    ASSERT(a->free_head && a->free_count);
    checkpoint_touch(a->free_head); /* its link is part of its record */
    u64 pa = frame_list_pop(&a->free_head);
    a->free_count--;
    return pa;
}

void account_give_back(struct account *a, u64 n)
{
    ASSERT(n <= a->free_count);
    while (n--)
        frame_free(pop_free(a));
}

void account_close(struct account *a)
{
    ASSERT(a->used_count == 0);
    account_give_back(a, a->free_count);
    struct account **link = &all_accounts;
    while (*link != a)
        link = &(*link)->next;
    *link = a->next;
    u64 pa = virt_to_phys_window(a);
    frame_info(pa)->version++; /* every capability to it goes stale */
    frame_free(pa);
}

u64 move_restarts;

u64 account_move_restart(struct invocation *inv, u64 left)
{
    move_restarts++;
    inv->caller->regs.r8 = left;
    inv->caller->regs.rip -= 2;
    return INV_DONE;
}

void account_fund(struct account *a, u64 n)
{
    int pool = frame_in_pool(virt_to_phys_window(a));
    while (n--)
        push_free(a, frame_take_from(pool, FRAME_KFREE)); /* zeroed when it is used */
}

u64 kmem_take(struct account *a, unsigned frame_type)
{
    u64 pa = pop_free(a);
    a->used_count++;
    frame_set_type(pa, (u8)frame_type);
    return pa;
}

u64 kmem_alloc(struct account *a, unsigned frame_type)
{
    u64 pa = kmem_take(a, frame_type);
    memset(phys_to_virt(pa), 0, PAGE_SIZE);
    return pa;
}

void kmem_free(struct account *a, u64 pa)
{
    ASSERT(a->used_count);
    a->used_count--;
    push_free(a, pa);
}

/* p's invocation waits for the kpager k: a KMEM fault, after whose reply
 * it starts again from the beginning.  A kpager that would wait for itself
 * (seed 003, section 3.5: the one deadlock the kernel can see) or cannot
 * be reached makes the invocation fail with NO_MEMORY instead. */
u64 kmem_fault(struct process *p, struct cap k, const u64 words[4])
{
    if (cap_is_null(k) || !cap_live(k) || process_from_cap(k) == p)
        return KEEP_ERR_NO_MEMORY;
    p->regs.rip -= 2; /* restart the whole invocation after the kpager's reply */
    if (!ipc_fault(p, k, KEEP_LABEL_KMEM, words)) {
        p->regs.rip += 2;
        return KEEP_ERR_NO_MEMORY;
    }
    return INV_BLOCKED;
}

u64 kmem_need(struct invocation *inv, struct account *a, u64 n)
{
    if (a->free_count >= n)
        return KEEP_ERR_OK;
    struct process *p = inv->caller;
    u64 words[4] = {n, a->free_count, KEEP_KMEM_FRAMES, 0};
    return kmem_fault(p, a->kpager, words);
}

static u64 create_aspace(struct invocation *inv, struct account *a)
{
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[0], &dest);
    if (e)
        return e;
    if ((e = kmem_need(inv, a, ASPACE_FRAMES)))
        return e;
    u64 pa = aspace_create(a);
    *dest = cap_make(KEEP_TYPE_ASPACE, KEEP_RIGHT_ALL, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

static u64 create_process(struct invocation *inv, struct account *a)
{
    struct cap as_cap, *dest;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_ASPACE, KEEP_RIGHT_WRITE, &as_cap);
    if (e)
        return e;
    if ((e = cap_empty_slot(inv->caller->as, inv->arg[1], &dest)))
        return e;
    /* A process of a persistent account runs in a persistent space and the
     * other way round: a checkpoint holds both or neither. */
    if (frame_in_pool(cap_pa(as_cap)) != frame_in_pool(virt_to_phys_window(a)))
        return KEEP_ERR_INVALID_ARG;
    if (!number_available(a)) /* all 2^20 numbers taken */
        return KEEP_ERR_BAD_STATE;
    if ((e = kmem_need(inv, a, 1 + number_frames_needed(a))))
        return e;
    struct process *p = process_create(aspace_from_cap(as_cap), a);
    *dest = process_cap(p);
    return KEEP_ERR_OK;
}

static u64 create_wrapper(struct invocation *inv, struct account *a)
{
    struct cap inner, *dest;
    u64 rights = inv->arg[2];
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], 0, 0, &inner);
    if (e)
        return e;
    if ((e = cap_empty_slot(inv->caller->as, inv->arg[1], &dest)))
        return e;
    if ((rights & ~KEEP_RIGHT_ALL) || cap_type(inner) == KEEP_TYPE_RETURN) /* never copied */
        return KEEP_ERR_INVALID_ARG;
    if ((e = kmem_need(inv, a, 1)))
        return e;
    u64 pa = wrapper_create(a, inner);
    *dest = cap_make(KEEP_TYPE_WRAPPER, rights, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

static u64 destroy(struct invocation *inv, struct account *a)
{
    struct cap c;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], 0, 0, &c);
    if (e)
        return e;
    switch (cap_type(c)) {
    case KEEP_TYPE_PROCESS: {
        struct process *p = process_from_cap(c);
        if (process_is_out(p)) { /* exported: nothing to bring back */
            if (process_numbers[cap_pnum(c)].x.account != a)
                return KEEP_ERR_INVALID_ARG;
            process_drop_exported(cap_pnum(c));
            return KEEP_ERR_OK;
        }
        if (p->account != a)
            return KEEP_ERR_INVALID_ARG;
        process_destroy(p);
        return KEEP_ERR_OK;
    }
    case KEEP_TYPE_ASPACE: {
        struct aspace *as = aspace_from_cap(c);
        if (as->account != a)
            return KEEP_ERR_INVALID_ARG;
        if (as->nproc)
            return KEEP_ERR_BAD_STATE;
        unsigned tables = KEEP_DESTROY_TABLES; /* in parts, as DESTROY_ALL (kmem_revoke.c) */
        if (!aspace_take_down(as, &tables)) {
            destroy_restarts++;
            inv->caller->regs.rip -= 2;
            return INV_DONE;
        }
        aspace_destroy(as);
        return KEEP_ERR_OK;
    }
    case KEEP_TYPE_WRAPPER: {
        struct wrapper *w = wrapper_from_cap(c);
        if (w->account != a)
            return KEEP_ERR_INVALID_ARG;
        wrapper_destroy(w);
        return KEEP_ERR_OK;
    }
    case KEEP_TYPE_DMA_DOMAIN:
        return dma_domain_destroy(inv, c, a);
    case KEEP_TYPE_NOTIFICATION:
        return notification_destroy(c, a);
    default:
        return KEEP_ERR_WRONG_TYPE;
    }
}

static u64 reclaim(struct invocation *inv, struct account *a)
{
    struct cap mem;
    u64 n = inv->arg[1];
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_MEMORY, KEEP_RIGHT_WRITE, &mem);
    if (e)
        return e;
    if (n > a->free_count)
        return KEEP_ERR_NO_MEMORY;
    u64 part = n > KEEP_MOVE_FRAMES ? KEEP_MOVE_FRAMES : n;
    account_give_back(a, part);
    return part < n ? account_move_restart(inv, n - part) : KEEP_ERR_OK;
}

u64 account_invoke(struct invocation *inv)
{
    struct account *a = account_from_cap(inv->cap);
    if (inv->method == KEEP_M_ACCOUNT_INFO) {
        inv->res[0] = a->free_count;
        inv->res[1] = a->used_count;
        inv->res[2] = a->taken;
        inv->res[3] = a->nout;
        return KEEP_ERR_OK;
    }
    if (inv->method < KEEP_M_ACCOUNT_SET_KPAGER || inv->method > KEEP_M_ACCOUNT_CREATE_NOTIFICATION)
        return KEEP_ERR_INVALID_METHOD;
    switch (inv->method) {
    case KEEP_M_ACCOUNT_SET_KPAGER: {
        struct cap k = {0, 0};
        if (inv->arg[0]) {
            u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_SENDER, 0, &k);
            if (e)
                return e;
        }
        a->kpager = k;
        return KEEP_ERR_OK;
    }
    case KEEP_M_ACCOUNT_CREATE_ASPACE:
        return create_aspace(inv, a);
    case KEEP_M_ACCOUNT_CREATE_PROCESS:
        return create_process(inv, a);
    case KEEP_M_ACCOUNT_CREATE_WRAPPER:
        return create_wrapper(inv, a);
    case KEEP_M_ACCOUNT_DESTROY:
        return destroy(inv, a);
    case KEEP_M_ACCOUNT_RECLAIM:
        return reclaim(inv, a);
    case KEEP_M_ACCOUNT_CREATE_DMA_DOMAIN:
        return dma_domain_create(inv, a);
    case KEEP_M_ACCOUNT_CREATE_NOTIFICATION:
        return notification_create(inv, a);
    case KEEP_M_ACCOUNT_DESTROY_ALL:
        return account_destroy_all(inv, a);
    case KEEP_M_ACCOUNT_REVOKE_TABLE:
        return kmem_revoke_table(inv, a);
    case KEEP_M_ACCOUNT_REVOKE_PROCESS:
        return kmem_revoke_process(inv, a);
    case KEEP_M_ACCOUNT_REVOKE_CAP_TABLE:
        return kmem_revoke_cap_table(inv, a);
    default:
        return kmem_restore_process(inv, a);
    }
}

u64 account_check(u64 *checked)
{
    u64 bad = 0;
    for (struct account *a = all_accounts; a; a = a->next) {
        u64 n = 0;
        for (u64 pa = a->free_head; pa && n <= a->free_count; pa = frame_list_next(pa)) {
            struct frame *f = frame_info(pa);
            if (!f || f->type != FRAME_KFREE) {
                kprintf("invariant: account %p: frame %p on its free list has type %u\n", (void *)a,
                        (void *)(uptr)pa, f ? f->type : 0);
                bad++;
            }
            n++;
        }
        if (n != a->free_count) {
            kprintf("invariant: account %p: free list has %lu frames, count says %lu\n", (void *)a, n,
                    a->free_count);
            bad++;
        }
        (*checked)++;
    }
    return bad;
}
