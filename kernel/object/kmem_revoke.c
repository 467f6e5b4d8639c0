/* Kernel memory taken back from live tasks (seed 003, sections 2-3), and
 * accounts destroyed whole.  ACCOUNT.REVOKE_TABLE, REVOKE_PROCESS,
 * RESTORE_PROCESS and DESTROY_ALL; docs/kernel-memory.md has the classes
 * of kernel data and the order in which an operation asks for them.
 *
 *  - Page tables are redundant: a revoked table is handed back empty and
 *    the mappings under it are dropped; the space's pager, which made them
 *    (ASPACE.MAP), makes them again when the space's processes fault.
 *  - A process is sensitive: its control block refers to kernel objects
 *    and to other processes.  It is sealed (seal.h) into its own frame,
 *    bound to its number, the number's version and the export's generation,
 *    and handed to the kpager as a PAGE; only the current export of a
 *    process still out opens again. */
#include "account.h"
#include "aspace.h"
#include "checkpoint.h"
#include "frame.h"
#include "device.h"
#include "dma_domain.h"
#include "notification.h"
#include "invoke.h"
#include "ipc.h"
#include "lib.h"
#include "process.h"
#include "sched.h"
#include "seal.h"
#include "checkpoint.h"
#include "wrapper.h"

/* ---- page tables ---- */

static void drop_table(void *ctx, u64 pa) { kmem_free(ctx, pa); }
static void drop_leaf(u64 pa)
{
    struct frame *f = frame_info(pa);
    if (f) {
        ASSERT(f->maps > 0);
        f->maps--;
    }
}

/* A table frame goes to the kpager, empty, as a PAGE at dest. */
static void hand_back(u64 pa, struct cap *dest)
{
    memset(phys_to_virt(pa), 0, PAGE_SIZE);
    struct frame *f = frame_info(pa);
    frame_set_type(pa, FRAME_PAGE);
    f->maps = 0;
    *dest = cap_make(KEEP_TYPE_PAGE, KEEP_RIGHT_READ | KEEP_RIGHT_WRITE, 0, f->version, pa);
}

/* Does the table of `level` that translates va translate the IPC buffer of
 * a process in as?  The kernel reads and writes those buffers on its own,
 * without a fault a pager could answer, so their tables stay. */
static bool maps_ipc_buffer(struct aspace *as, u64 va, int level)
{
    u64 span = 1ULL << (12 + 9 * level), base = va & ~(span - 1);
    for (struct process *p = all_processes; p; p = p->all_next)
        if (p->as == as && p->ipc_buf && p->ipc_buf < base + span && p->ipc_buf + KEEP_IPC_SIZE > base)
            return true;
    return false;
}

/* What REVOKE_TABLE and REVOKE_CAP_TABLE both check, in the same order:
 * the space (WRITE), the empty dest slot, arguments (an address below
 * limit, level 1-3, a space of this account), and the link to the table
 * over va_of(addr); changes nothing. */
static u64 find_table(struct invocation *inv, struct account *a, u64 limit, u64 (*va_of)(u64),
                      struct aspace **as, u64 **link, struct cap **dest)
{
    struct cap as_cap;
    u64 addr = inv->arg[1], level = inv->arg[2];
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_ASPACE, KEEP_RIGHT_WRITE, &as_cap);
    if (e)
        return e;
    if ((e = cap_empty_slot(inv->caller->as, inv->arg[3], dest)))
        return e;
    *as = aspace_from_cap(as_cap);
    if ((*as)->account != a || level < 1 || level > 3 || addr >= limit)
        return KEEP_ERR_INVALID_ARG;
    *link = user_table_link((*as)->pml4_pa, va_of(addr), (int)level);
    return *link ? KEEP_ERR_OK : KEEP_ERR_NOT_MAPPED;
}

/* Take the table at *link, and every table below it, out of as: the
 * tables below go back to the account, the table itself to the kpager as
 * an empty PAGE at dest; leaf is told of every page or cappage it mapped.
 * The space's whole TLB goes (the paging-structure caches too). */
static void take_table(struct invocation *inv, struct account *a, struct aspace *as, u64 *link,
                       void (*leaf)(u64), struct cap *dest)
{
    u64 pa = *link & PTE_ADDR, before = a->free_count;
    struct table_walk w = {drop_table, leaf, a};
    free_table_below(pa, (int)inv->arg[2], &w);
    *link = 0;
    if (cpu0.loaded_as == as)
        aspace_load_flush(as);
    as->tlb_stale = cpu0.loaded_as != as;
    a->used_count--;
    a->taken++;
    inv->res[0] = 1 + (a->free_count - before);
    hand_back(pa, dest);
}

static u64 user_va(u64 va) { return va; }

u64 kmem_revoke_table(struct invocation *inv, struct account *a)
{
    struct aspace *as;
    struct cap *dest;
    u64 *link, e = find_table(inv, a, KEEP_USER_TOP, user_va, &as, &link, &dest);
    if (e)
        return e;
    if (as->nout || maps_ipc_buffer(as, inv->arg[1], (int)inv->arg[2]))
        return KEEP_ERR_IN_USE;
    take_table(inv, a, as, link, drop_leaf, dest);
    as->unmap_generation++;
    return KEEP_ERR_OK;
}

/* ---- capability-segment tables ---- */

static void keep_leaf(u64 pa) { (void)pa; } /* the record keeps the cappage mapped */

/* Does a process of as wait with a receive slot under the capability
 * addresses [lo, lo + n)?  A message's capabilities land there without an
 * invocation of the receiver's own that could fault, so those tables stay. */
static bool receive_slots_under(struct aspace *as, u64 lo, u64 n)
{
    for (struct process *p = all_processes; p; p = p->all_next) {
        if (p->as != as || p->state != KEEP_STATE_BLOCKED ||
            (p->wait_kind != WAIT_RECV && p->wait_kind != WAIT_REPLY))
            continue;
        for (u32 i = 0; i < p->recv_n; i++)
            if (p->recv_addr[i] - lo < n)
                return true;
    }
    return false;
}

u64 kmem_revoke_cap_table(struct invocation *inv, struct account *a)
{
    struct aspace *as;
    struct cap *dest;
    u64 addr = inv->arg[1], level = inv->arg[2];
    u64 *link, e = find_table(inv, a, KEEP_CAP_SPACE_SLOTS, capseg_va, &as, &link, &dest);
    if (e)
        return e;
    /* Capability addresses the table covers: a cappage per 4 KiB of segment. */
    u64 span = (1ULL << (9 * level)) * KEEP_CAPPAGE_SLOTS, lo = addr - addr % span;
    if (as->nout || as->capseg_unrecorded || receive_slots_under(as, lo, span))
        return KEEP_ERR_IN_USE;
    take_table(inv, a, as, link, keep_leaf, dest);
    as->capseg_dropped = true;
    cspace_forget();
    return KEEP_ERR_OK;
}

bool kmem_cap_miss_rebuildable(void)
{
    struct aspace *as = cpu0.cap_miss_as;
    return as && as->capseg_dropped && aspace_cappage_record(as, cpu0.cap_miss_addr);
}

u64 kmem_cap_miss(struct process *p)
{
    struct aspace *as = cpu0.cap_miss_as;
    cpu0.cap_miss_as = NULL;
    if (!as || !as->capseg_dropped)
        return KEEP_ERR_NO_CAPPAGE;
    struct cappage_map *m = aspace_cappage_record(as, cpu0.cap_miss_addr);
    if (!m)
        return KEEP_ERR_NO_CAPPAGE;
    struct account *a = as->account;
    u64 n = aspace_cappage_tables(as, m->cap_addr);
    if (a->free_count < n) {
        u64 words[4] = {n, a->free_count, KEEP_KMEM_FRAMES, 0};
        return kmem_fault(p, a->kpager, words); /* and the invocation runs again */
    }
    aspace_capseg_rebuild(as, m);
    p->regs.rip -= 2; /* run the invocation again, now that the slot is there */
    return INV_DONE;
}

/* ---- processes ---- */

#define EXPORT_MAGIC 0x74726f7078656b50ULL /* "Pkexport" */

/* The clear header of an export; the sealed control block follows it and
 * the tag follows that. */
struct export_header {
    u64 magic;
    u64 num, version, gen; /* whose export, and which */
    u64 length;            /* of the sealed control block */
    u64 nonce;             /* the seal's: synthetic, over the header and the body */
    u64 reserved[2];
};
#define EXPORT_BODY ALIGN_UP(sizeof(struct process), 8)
_Static_assert(sizeof(struct export_header) + EXPORT_BODY + 16 <= PAGE_SIZE, "an export fits in its frame");

/* The export's identifier: its process number and generation. */
static u64 export_id(u64 num, u64 gen) { return num | gen << CAP_PNUM_BITS; }

/* Queued fault messages need their handler's return-capability slot and
 * cannot restart by themselves: a handler with some waiting stays in. */
static bool fault_messages_queued(struct process *p)
{
    for (struct process *s = p->sendq_head; s; s = s->q_next)
        if (s->wait_kind == WAIT_FAULT)
            return true;
    return false;
}

/* Take p out of every queue and list, leaving in p what it needs to go on
 * when it comes back: waits that restart by themselves become RUNNABLE with
 * the invocation rewound (as they already are), a deadline is kept. */
static void unlink_for_export(struct process *p)
{
    u64 deadline = p->deadline;
    sleep_remove(p);
    p->deadline = deadline;
    if (p->state == KEEP_STATE_RUNNABLE)
        sched_dequeue(p);
    if (p->state == KEEP_STATE_BLOCKED) {
        switch (p->wait_kind) {
        case WAIT_SEND:
            sendq_remove(p->wait_target, p);
            /* fall through */
        case WAIT_NOTIFY:
            notification_unwait(p);
            /* fall through */
        case WAIT_CONSOLE:
        case WAIT_PROCESS:
            p->state = KEEP_STATE_RUNNABLE; /* rewound by process_block: restarts */
            p->wait_kind = WAIT_NONE;
            break;
        default: /* RECV, REPLY, FAULT_REPLY, SLEEP: completed by others */
            break;
        }
    }
    p->wait_target = NULL;
    notification_unbind_process(p); /* an exported process loses its binding */
    /* Whoever sends to it or waits for it starts again, finds it out and
     * asks the kpager. */
    while (p->sendq_head) {
        struct process *s = p->sendq_head;
        sendq_remove(p, s);
        process_make_runnable(s);
    }
    process_wake(WAIT_PROCESS, p);
    process_list_remove(p);
    sched_save(p);
    p->rq_next = p->rq_prev = p->q_next = p->sleep_next = NULL;
}

u64 kmem_revoke_process(struct invocation *inv, struct account *a)
{
    struct cap pc, *dest;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_PROCESS, KEEP_RIGHT_WRITE, &pc);
    if (e)
        return e;
    if ((e = cap_empty_slot(inv->caller->as, inv->arg[1], &dest)))
        return e;
    struct process *p = process_from_cap(pc);
    if (process_is_out(p) || p == inv->caller)
        return KEEP_ERR_BAD_STATE;
    if (p->account != a)
        return KEEP_ERR_INVALID_ARG;
    if ((p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_FAULT) || fault_messages_queued(p))
        return KEEP_ERR_BAD_STATE;
    if (interrupt_bound_to(p))
        return KEEP_ERR_IN_USE;

    u64 num = p->num;
    struct process_export *x = &process_numbers[num].x;
    unlink_for_export(p);
    x->account = a;
    x->as = p->as;
    x->gen++;
    x->reply_lost = 0;
    export_link(a, num);
    process_numbers[num].p = &process_out;
    process_numbers_out++;
    p->as->nout++;
    a->nout++;
    a->used_count--;
    a->taken++;

    /* Seal the control block into its own frame. */
    static u8 body[EXPORT_BODY] __attribute__((aligned(16)));
    memcpy(body, p, sizeof(struct process));
    u8 *page = (u8 *)p;
    memset(page, 0, PAGE_SIZE);
    struct export_header *h = (struct export_header *)page;
    h->magic = EXPORT_MAGIC;
    h->num = num;
    h->version = process_numbers[num].version;
    h->gen = x->gen;
    h->length = EXPORT_BODY;
    memcpy(page + sizeof *h, body, EXPORT_BODY);
    memset(body, 0, sizeof body);
    u64 *tag = (u64 *)(page + sizeof *h + EXPORT_BODY);
    /* A synthetic nonce: the export's number and generation start again
     * at a boot that sets the same key, so they cannot be the nonce.  Bit
     * 63 clear: a checkpoint record's never is. */
    h->nonce = seal_nonce(num, page, sizeof *h + EXPORT_BODY) & ~(1ULL << 63);
    seal(h, sizeof *h, EXPORT_BODY, h->nonce, tag);

    u64 pa = virt_to_phys_window(page);
    struct frame *f = frame_info(pa);
    frame_set_type(pa, FRAME_PAGE);
    *dest = cap_make(KEEP_TYPE_PAGE, KEEP_RIGHT_READ | KEEP_RIGHT_WRITE, 0, f->version, pa);
    inv->res[0] = export_id(num, x->gen);
    return KEEP_ERR_OK;
}

/* p is back: into the lists and queues its state calls for. */
static void relink_after_import(struct process *p)
{
    p->all_next = NULL;
    process_list_insert(p);
    u64 deadline = p->deadline;
    p->deadline = 0;
    if (p->state == KEEP_STATE_RUNNABLE) {
        sched_enqueue(p);
    } else if (deadline) {
        if (deadline <= rdtsc())
            ipc_timeout(p); /* its time ran out while it was away */
        else
            sleep_insert(p, deadline);
    }
}

u64 kmem_restore_process(struct invocation *inv, struct account *a)
{
    struct cap c, *slot = NULL;
    u64 e = cspace_slot(inv->caller->as, inv->arg[0], &slot);
    if ((e = cap_check_slot(e, slot, KEEP_TYPE_PAGE, KEEP_RIGHT_WRITE, &c)))
        return e;
    u64 pa = cap_pa(c);
    struct frame *f = frame_info(pa);
    ASSERT(f->type == FRAME_PAGE); /* what every PAGE capability names */
    if (f->maps)
        return KEEP_ERR_IN_USE;
    u8 *page = phys_to_virt(pa);
    struct export_header *h = (struct export_header *)page;
    /* Identity first (cheap), then the seal; nothing changes on failure. */
    if (h->magic != EXPORT_MAGIC || h->num >= KEEP_PROCESS_NUMBERS || h->length != EXPORT_BODY)
        return KEEP_ERR_BAD_SEAL;
    u64 num = h->num;
    struct process_export *x = &process_numbers[num].x;
    if (!process_is_out(process_numbers[num].p) || x->account != a ||
        h->version != process_numbers[num].version || h->gen != x->gen)
        return KEEP_ERR_BAD_SEAL;
    u64 tag[2];
    memcpy(tag, page + sizeof *h + EXPORT_BODY, sizeof tag);
    if (h->nonce >> 63 || !unseal(h, sizeof *h, EXPORT_BODY, h->nonce, tag))
        return KEEP_ERR_BAD_SEAL;

    checkpoint_touch(pa); /* the page becomes the process */
    memmove(page, page + sizeof *h, sizeof(struct process));
    memset(page + sizeof(struct process), 0, PAGE_SIZE - sizeof(struct process));
    struct process *p = (struct process *)page;
    p->ipc_buf_checked = 0;
    *slot = (struct cap){0, 0};
    f->version++; /* every copy of the page capability goes stale */
    frame_set_type(pa, FRAME_PROCESS);
    a->used_count++;
    a->nout--;
    p->as->nout--;
    export_unlink(a, num);
    x->account = NULL;
    x->as = NULL;
    process_numbers[num].p = p;
    process_numbers_out--;
    relink_after_import(p);
    /* The call it waits in lost its return capability while it was out. */
    if (x->reply_lost && (p->wait_kind == WAIT_REPLY || p->wait_kind == WAIT_FAULT_REPLY))
        process_reply_lost(p);
    x->reply_lost = 0;
    return KEEP_ERR_OK;
}

u64 kmem_need_process(struct invocation *inv, u64 num)
{
    struct process_export *x = &process_numbers[num].x;
    if (inv->on_behalf)
        return INV_RESTART;
    u64 words[4] = {0, x->account->free_count, KEEP_KMEM_PROCESS, export_id(num, x->gen)};
    return kmem_fault(inv->caller, x->account->kpager, words);
}

/* ---- accounts destroyed whole ----
 * In parts: DESTROY_PROCESSES processes, DESTROY_TABLES page tables or
 * MOVE_FRAMES unused frames at a time, after which the invocation restarts
 * from the system call and goes on (everything done so far is done: the
 * lists it works from are shorter).  A caller that is itself among what
 * goes does it all at once. */

#define DESTROY_PROCESSES 32

u64 destroy_restarts; /* KERNEL.INFO DESTROY_RESTARTS */

static u64 destroy_restart(struct invocation *inv)
{
    destroy_restarts++;
    inv->caller->regs.rip -= 2;
    return INV_DONE;
}

/* MOVE_FRAMES of a's unused frames back to their pool, and a restart. */
static u64 drain_part(struct invocation *inv, struct account *a)
{
    account_give_back(a, KEEP_MOVE_FRAMES);
    return destroy_restart(inv);
}

u64 account_destroy_all(struct invocation *inv, struct account *a)
{
    struct cap mem;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_MEMORY, KEEP_RIGHT_WRITE, &mem);
    if (e)
        return e;
    struct process *me = inv->caller;
    bool parts = me->account != a && me->as->account != a;
    unsigned procs = 0, tables = parts ? KEEP_DESTROY_TABLES : ~0u;
    /* Nothing made from it is left (a part before gave it all back): its
     * unused frames go back MOVE_FRAMES at a time, with no search. */
    if (parts && !a->used_count && !a->nout && a->free_count > KEEP_MOVE_FRAMES)
        return drain_part(inv, a);
    /* Processes: its own, and any in its address spaces. */
    for (struct process *p = all_processes, *next; p; p = next) {
        next = p->all_next;
        if (p->account == a || p->as->account == a) {
            if (parts && procs++ == DESTROY_PROCESSES)
                return destroy_restart(inv);
            process_destroy(p);
        }
    }
    /* Exported ones: its own, and others' whose space is one of its. */
    while (a->out_first) {
        if (parts && procs++ == DESTROY_PROCESSES) /* in the same parts as live ones */
            return destroy_restart(inv);
        process_drop_exported(a->out_first - 1);
    }
    for (struct aspace *as = a->aspaces; as; as = as->acct_next)
        for (struct account *o = all_accounts; o && as->nout; o = o->next)
            for (u32 n = o->out_first; n;) {
                u32 next = process_numbers[n - 1].x.out_next;
                if (process_numbers[n - 1].x.as == as) {
                    if (parts && procs++ == DESTROY_PROCESSES)
                        return destroy_restart(inv);
                    process_drop_exported(n - 1);
                }
                n = next;
            }
    while (a->wrappers)
        wrapper_destroy(a->wrappers);
    while (a->aspaces) {
        if (!aspace_take_down(a->aspaces, &tables))
            return destroy_restart(inv);
        aspace_destroy(a->aspaces);
    }
    if (!dma_domain_destroy_all(a, &tables)) /* detaches their devices, unpins their pages */
        return destroy_restart(inv);
    notification_destroy_all(a); /* waiters elsewhere start again and find them stale */
    numbers_release_all(a);
    checkpoint_account_gone(a); /* the shadows of a capture it paid for */
    ASSERT(a->used_count == 0 && a->nout == 0);
    if (parts && a->free_count > KEEP_MOVE_FRAMES)
        return drain_part(inv, a);
    account_close(a);
    return KEEP_ERR_OK;
}
