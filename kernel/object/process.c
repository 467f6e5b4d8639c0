/* Process objects: SET_REGS, START, STOP, STATUS, WAIT, EXIT, YIELD,
 * SET_NAME, SET_PRIORITY, READ_REGS, WRITE_REGS, SET_IPC_BUFFER,
 * SET_FAULT_HANDLER, SET_EMULATION, MINT, READ_VECTOR_STATE,
 * WRITE_VECTOR_STATE; creation, destruction, waits,
 * and faults of processes. */
#include "process.h"
#include "notification.h"
#include "account.h"
#include "frame.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "lib.h"
#include "sched.h"
#include "x86.h"

struct process *all_processes;
static u64 next_pid = 1;

struct process process_out = {.state = KEEP_STATE_BLOCKED, .wait_kind = WAIT_OUT, .name = "(exported)"};
u64 process_numbers_out;

struct cap process_cap(struct process *p)
{
    return cap_make_process(KEEP_TYPE_PROCESS, KEEP_RIGHT_ALL, p->num, process_numbers[p->num].version, 0);
}

struct process *process_create(struct aspace *as, struct account *a)
{
    u64 num = number_take(a); /* first: it may buy a number page from a's frames */
    struct process *p = phys_to_virt(kmem_alloc(a, FRAME_PROCESS));
    p->num = num;
    process_numbers[num].p = p;
    p->as = as;
    p->account = a;
    as->nproc++;
    p->pid = next_pid++;
    p->prio = PRIO_DEFAULT;
    p->state = KEEP_STATE_CREATED;
    p->regs.cs = SEL_UCODE;
    p->regs.ss = SEL_UDATA;
    p->regs.rflags = RFLAGS_IF;
    fpu_init_state(&p->fpu);
    process_list_insert(p);
    return p;
}

void process_adopt(struct process *p)
{
    p->pid = next_pid++;
    p->all_next = NULL;
    process_list_insert(p);
}

void process_list_insert(struct process *p)
{
    struct process **link = &all_processes;
    while (*link && (*link)->pid < p->pid)
        link = &(*link)->all_next;
    p->all_next = *link;
    *link = p;
}

void process_list_remove(struct process *p)
{
    struct process **link = &all_processes;
    while (*link != p)
        link = &(*link)->all_next;
    *link = p->all_next;
    p->all_next = NULL;
}

void process_set_name(struct process *p, const char *name)
{
    memset(p->name, 0, sizeof p->name);
    memcpy(p->name, name, strnlen(name, sizeof p->name));
}

void process_make_runnable(struct process *p)
{
    p->state = KEEP_STATE_RUNNABLE;
    p->wait_kind = WAIT_NONE;
    p->wait_target = NULL;
    sched_enqueue(p);
}

void process_wait(struct process *p, enum wait_kind kind)
{
    if (p->state == KEEP_STATE_RUNNABLE)
        sched_dequeue(p);
    p->state = KEEP_STATE_BLOCKED;
    p->wait_kind = (u8)kind;
}

void process_block(struct process *p, enum wait_kind kind)
{
    process_wait(p, kind);
    p->regs.rip -= 2; /* back onto the syscall instruction: restart when woken */
}

void process_wake(enum wait_kind kind, struct process *target)
{
    for (struct process *q = all_processes; q; q = q->all_next)
        if (q->state == KEEP_STATE_BLOCKED && q->wait_kind == kind && q->wait_target == target)
            process_make_runnable(q);
}

void process_detach(struct process *p)
{
    if (p->state == KEEP_STATE_RUNNABLE)
        sched_dequeue(p);
    if (p->state == KEEP_STATE_BLOCKED) {
        bool syscall_fault = p->fault_label == KEEP_LABEL_SYSCALL;
        switch (p->wait_kind) {
        case WAIT_SEND:
            sendq_remove(p->wait_target, p);
            break;
        case WAIT_FAULT:
            sendq_remove(p->wait_target, p);
            if (syscall_fault)
                p->regs.rip -= 2; /* reflect it again when started */
            break;
        case WAIT_FAULT_REPLY:
            return_cap_used(p);
            if (syscall_fault)
                p->regs.rip -= 2;
            break;
        case WAIT_REPLY:
            return_cap_used(p);
            sleep_remove(p); /* a call with a time-out */
            p->regs.rax = KEEP_ERR_BAD_STATE;
            break;
        case WAIT_RECV:
        case WAIT_SLEEP:
            sleep_remove(p);
            p->regs.rax = KEEP_ERR_BAD_STATE;
            break;
        case WAIT_NOTIFY:
            notification_unwait(p); /* restarts by itself */
            break;
        default: /* console and process waits restart by themselves */
            break;
        }
    }
    p->wait_kind = WAIT_NONE;
    p->wait_target = NULL;
}

static void finish(struct process *p, u8 state, u64 code, u64 rip, u64 addr)
{
    process_detach(p);
    p->state = state;
    p->code = code;
    p->fault_rip = rip;
    p->fault_addr = addr;
    process_wake(WAIT_PROCESS, p);
}

void process_destroy(struct process *p)
{
#ifdef KCOV
    kcov_forget(p);
#endif
    process_detach(p);
    p->state = KEEP_STATE_EXITED;
    if (p->revoke.pa) { /* its MEMORY.REVOKE stops half-way: the page may be mapped again */
        struct frame *f = frame_info(p->revoke.pa);
        if (f->version == p->revoke.version)
            f->flags &= (u8)~FRAME_REVOKING;
    }
    return_cap_used(p);
    number_put(p->num); /* every PROCESS and SENDER capability goes stale */
    /* Whoever waits on it or sends to it starts again and sees STALE. */
    process_wake(WAIT_PROCESS, p);
    while (p->sendq_head) {
        struct process *s = p->sendq_head;
        sendq_remove(p, s);
        if (s->wait_kind == WAIT_FAULT && s->fault_label != KEEP_LABEL_KMEM) {
            s->wait_kind = WAIT_NONE; /* its handler is gone */
            finish(s, KEEP_STATE_FAULTED, s->fault_words[0], s->fault_words[1], s->fault_words[2]);
        } else {
            process_make_runnable(s);
        }
    }
    process_list_remove(p);
    sched_forget(p);
    p->as->nproc--;
    /* Its space's last process: nobody can use the return capabilities
     * there any more (those in cappages no other space maps; the space
     * may map one several times). */
    if (p->as->nproc == 0)
        aspace_return_caps_lost(p->as);
    kmem_free(p->account, virt_to_phys_window(p));
}

void export_link(struct account *a, u64 num)
{
    process_numbers[num].x.out_next = a->out_first;
    a->out_first = (u32)num + 1;
}

void export_unlink(struct account *a, u64 num)
{
    u32 *link = &a->out_first;
    while (*link != num + 1)
        link = &process_numbers[*link - 1].x.out_next;
    *link = process_numbers[num].x.out_next;
    process_numbers[num].x.out_next = 0;
}

void process_drop_exported(u64 num)
{
    struct process_export *x = &process_numbers[num].x;
    export_unlink(x->account, num);
    ASSERT(process_is_out(process_numbers[num].p));
    return_word_used(num); /* a reply it waited for finds its capability stale */
    process_numbers_out--;
    struct aspace *as = x->as;
    as->nproc--;
    as->nout--;
    x->account->nout--;
    x->account = NULL;
    x->as = NULL;
    number_put(num);
    if (as->nproc == 0) /* as for a live process's end: process_destroy */
        aspace_return_caps_lost(as);
}

void return_cap_lost(struct cap c)
{
    if (cap_type(c) != KEEP_TYPE_RETURN)
        return;
    struct process *p = return_target(c);
    if (!p)
        return;
    if (process_is_out(p)) { /* an exported caller hears it when it is back */
        return_word_used(cap_pnum(c));
        process_numbers[cap_pnum(c)].x.reply_lost = 1;
        return;
    }
    process_reply_lost(p);
}

void process_reply_lost(struct process *p)
{
    bool fault = p->wait_kind == WAIT_FAULT_REPLY;
    return_cap_used(p);
    sleep_remove(p);
    p->wait_kind = WAIT_NONE;
    if (fault) { /* its handler can no longer answer: as if it had none */
        finish(p, KEEP_STATE_FAULTED, p->fault_words[0], p->fault_words[1], p->fault_words[2]);
        return;
    }
    p->regs.rax = KEEP_ERR_NO_REPLY;
    process_make_runnable(p);
}

static void lost_in_cappage(void *ctx, u64 pa)
{
    (void)ctx;
    struct cap *slots = phys_to_virt(pa);
    for (unsigned i = 0; i < KEEP_CAPPAGE_SLOTS; i++)
        return_cap_lost(slots[i]);
}

void cappage_lost(u64 pa) { lost_in_cappage(NULL, pa); }

/* Every cappage mapping of as: those in its capability segment, and the
 * recorded ones whose segment tables are out. */
static void each_cappage_map(struct aspace *as, void (*fn)(void *ctx, u64 pa))
{
    capseg_for_each(as->pml4_pa, fn, NULL);
    for (u32 i = 0; i < as->ncappages; i++) {
        u64 *pte = user_pte(as->pml4_pa, capseg_va(as->cappages[i].cap_addr));
        if (!(pte && (*pte & PTE_P)))
            fn(NULL, as->cappages[i].pa);
    }
}

static void uncount(void *ctx, u64 pa)
{
    (void)ctx;
    frame_info(pa)->maps--;
}

/* Counted again; a cappage at 0 had only as's mappings (however many). */
static void recount(void *ctx, u64 pa)
{
    if (frame_info(pa)->maps++ == 0)
        lost_in_cappage(ctx, pa);
}

void aspace_return_caps_lost(struct aspace *as)
{
    /* Take as's mappings out of the counts, see which cappages are left
     * with none, and put them back: linear in as's mappings. */
    each_cappage_map(as, uncount);
    each_cappage_map(as, recount);
}

bool process_reflect(struct process *p, u64 label, const u64 words[4])
{
    if (cap_is_null(p->fault_handler) || !cap_live(p->fault_handler))
        return false;
    return ipc_fault(p, p->fault_handler, label, words);
}

void process_fault(struct process *p, u64 vector, u64 rip, u64 addr, u64 err)
{
    u64 words[4] = {vector, rip, addr, err};
    if (process_reflect(p, KEEP_LABEL_EXCEPTION, words))
        return;
    u64 detail = vector == 14 ? addr : err;
    kprintf("keep: process '%.16s' (pid %lu) stopped: %s (vector %lu) at rip %p, %s %p\n", p->name,
            p->pid, exception_name(vector), vector, (void *)(uptr)rip,
            vector == 14 ? "address" : "error code", (void *)(uptr)detail);
    finish(p, KEEP_STATE_FAULTED, vector, rip, detail);
}

static bool user_addr(u64 va) { return va < KEEP_USER_TOP; }

static void status(struct process *p, u64 *res)
{
    res[0] = p->state;
    res[1] = p->code;
    res[2] = p->fault_rip;
    res[3] = p->fault_addr;
}

/* Not running: made, stopped, or waiting for its fault handler. */
static bool settable(struct process *p)
{
    return p->state == KEEP_STATE_CREATED || p->state == KEEP_STATE_STOPPED ||
           (p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_FAULT_REPLY);
}

/* The register block of READ_REGS / WRITE_REGS, in KEEP_REG_* order. */
static u64 *reg_ref(struct regs *r, unsigned i)
{
    u64 *map[KEEP_REG_COUNT] = {&r->rax, &r->rbx, &r->rcx, &r->rdx, &r->rsi, &r->rdi,
                                &r->rbp, &r->rsp, &r->r8,  &r->r9,  &r->r10, &r->r11,
                                &r->r12, &r->r13, &r->r14, &r->r15, &r->rip, &r->rflags};
    return map[i];
}

#define RFLAGS_USER 0xcd5ULL /* CF PF AF ZF SF TF DF OF */

static u64 regs_io(struct invocation *inv, struct process *p, bool write)
{
    struct process *me = inv->caller;
    u64 block[KEEP_REG_COUNT];
    u64 va = me->ipc_buf + KEEP_IPC_STRING;
    if (write ? !settable(p) : (p == me || p->state == KEEP_STATE_RUNNABLE))
        return KEEP_ERR_BAD_STATE;
    if (!me->ipc_buf || !user_range_ok(me->as, va, sizeof block, true))
        return KEEP_ERR_FAULT;
    if (!write) {
        for (unsigned i = 0; i < KEEP_REG_COUNT; i++)
            block[i] = *reg_ref(&p->regs, i);
        copy_to_user(me->as, va, block, sizeof block);
        return KEEP_ERR_OK;
    }
    copy_from_user(me->as, block, va, sizeof block);
    if (!user_addr(block[KEEP_REG_RIP]) || !user_addr(block[KEEP_REG_RSP]))
        return KEEP_ERR_INVALID_ARG;
    block[KEEP_REG_RFLAGS] = (block[KEEP_REG_RFLAGS] & RFLAGS_USER) | RFLAGS_IF | 2;
    for (unsigned i = 0; i < KEEP_REG_COUNT; i++)
        *reg_ref(&p->regs, i) = block[i];
    p->regs.vector = 0; /* leave through iretq: restore every register */
    return KEEP_ERR_OK;
}

/* READ_VECTOR_STATE / WRITE_VECTOR_STATE: p is not the caller, so its
 * state is in its frame once the CPU gives it up (sched_save). */
static u64 vector_io(struct invocation *inv, struct process *p, bool write)
{
    struct process *me = inv->caller;
    u64 va = me->ipc_buf + KEEP_IPC_STRING;
    if (p == me || (write ? !settable(p) : p->state == KEEP_STATE_RUNNABLE))
        return KEEP_ERR_BAD_STATE;
    if (!me->ipc_buf || !user_range_ok(me->as, va, cpu0.fpu_size, true))
        return KEEP_ERR_FAULT;
    sched_save(p);
    if (!write) {
        copy_to_user(me->as, va, &p->fpu, cpu0.fpu_size);
        inv->res[0] = cpu0.fpu_size;
        return KEEP_ERR_OK;
    }
    static struct fpu_state in; /* one CPU, and too large for the kernel stack */
    in = p->fpu;
    copy_from_user(me->as, &in, va, cpu0.fpu_size);
    if (!fpu_state_valid(&in))
        return KEEP_ERR_INVALID_ARG;
    p->fpu = in;
    return KEEP_ERR_OK;
}

static u64 mint(struct invocation *inv, struct process *p)
{
    u64 rights = inv->arg[2] ? inv->arg[2] : KEEP_RIGHT_WRITE | KEEP_RIGHT_CALL;
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[0], &dest);
    if (e)
        return e;
    if (rights & ~(KEEP_RIGHT_WRITE | KEEP_RIGHT_CALL))
        return KEEP_ERR_INVALID_ARG;
    *dest = cap_make_process(KEEP_TYPE_SENDER, rights, p->num, process_numbers[p->num].version, inv->arg[1]);
    return KEEP_ERR_OK;
}

u64 process_invoke(struct invocation *inv)
{
    struct process *p = process_from_cap(inv->cap);
    struct process *me = inv->caller;
    const u64 *a = inv->arg;

    if (inv->method < KEEP_M_PROCESS_SET_REGS || inv->method > KEEP_M_PROCESS_CPU_TIME)
        return KEEP_ERR_INVALID_METHOD;
    if (unlikely(process_is_out(p))) /* exported: whoever needs it asks the kpager */
        return kmem_need_process(inv, cap_pnum(inv->cap));
    switch (inv->method) {
    case KEEP_M_PROCESS_SET_REGS:
        if (!settable(p))
            return KEEP_ERR_BAD_STATE;
        if (!user_addr(a[0]) || !user_addr(a[1]))
            return KEEP_ERR_INVALID_ARG;
        p->regs.rip = a[0];
        p->regs.rsp = a[1];
        p->regs.rdi = a[2];
        p->regs.rsi = a[3];
        p->regs.vector = 0; /* leave through iretq: restore every register */
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_START:
        if (p->state != KEEP_STATE_CREATED && p->state != KEEP_STATE_STOPPED)
            return KEEP_ERR_BAD_STATE;
        process_make_runnable(p);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_STOP:
        if (p->state != KEEP_STATE_RUNNABLE && p->state != KEEP_STATE_BLOCKED)
            return KEEP_ERR_BAD_STATE;
        process_detach(p);
        p->state = KEEP_STATE_STOPPED;
        return KEEP_ERR_OK; /* if p is the caller, kernel_exit runs another */
    case KEEP_M_PROCESS_STATUS:
        status(p, inv->res);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_WAIT:
        if (p == me)
            return KEEP_ERR_BAD_STATE;
        if (p->state == KEEP_STATE_EXITED || p->state == KEEP_STATE_FAULTED) {
            status(p, inv->res);
            return KEEP_ERR_OK;
        }
        process_block(me, WAIT_PROCESS);
        me->wait_target = p;
        return INV_BLOCKED;
    case KEEP_M_PROCESS_EXIT:
        if (p->state == KEEP_STATE_EXITED || p->state == KEEP_STATE_FAULTED)
            return KEEP_ERR_BAD_STATE;
        finish(p, KEEP_STATE_EXITED, a[0], 0, 0);
        return KEEP_ERR_OK; /* if p is the caller, kernel_exit runs another */
    case KEEP_M_PROCESS_YIELD:
        if (p != me)
            return KEEP_ERR_INVALID_ARG;
        sched_rotate(me);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_NAME:
        memcpy(p->name, &a[0], 8);
        memcpy(p->name + 8, &a[1], 8);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_PRIORITY:
        if (a[0] >= PRIO_LEVELS)
            return KEEP_ERR_INVALID_ARG;
        if (p->state == KEEP_STATE_RUNNABLE) {
            sched_dequeue(p);
            p->prio = (u8)a[0];
            sched_enqueue(p);
        } else {
            p->prio = (u8)a[0];
        }
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_BUDGET:
        return sched_set_budget(p, me, a[0], a[1]);
    case KEEP_M_PROCESS_BUDGET:
        sched_budget(p, inv->res);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_CPU_TIME:
        inv->res[0] = sched_cpu_ns(p);
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_PASSIVE:
        return sched_set_passive(p, me, a[0], &inv->res[0]);
    case KEEP_M_PROCESS_READ_REGS:
        return regs_io(inv, p, false);
    case KEEP_M_PROCESS_WRITE_REGS:
        return regs_io(inv, p, true);
    case KEEP_M_PROCESS_READ_VECTOR_STATE:
        return vector_io(inv, p, false);
    case KEEP_M_PROCESS_WRITE_VECTOR_STATE:
        return vector_io(inv, p, true);
    case KEEP_M_PROCESS_SET_IPC_BUFFER:
        if ((a[0] & (PAGE_SIZE - 1)) || a[0] > KEEP_USER_TOP - KEEP_IPC_SIZE)
            return KEEP_ERR_INVALID_ARG;
        p->ipc_buf = a[0];
        p->ipc_buf_checked = 0;
        return KEEP_ERR_OK;
    case KEEP_M_PROCESS_SET_FAULT_HANDLER: {
        struct cap h = {0, 0};
        if (a[0]) {
            u64 e = cap_lookup(me->as, a[0], KEEP_TYPE_SENDER, 0, &h);
            if (e)
                return e;
        }
        p->fault_handler = h;
        return KEEP_ERR_OK;
    }
    case KEEP_M_PROCESS_SET_EMULATION:
        if (a[0] > 1)
            return KEEP_ERR_INVALID_ARG;
        p->emulate = (u8)a[0];
        return KEEP_ERR_OK;
    default:
        return mint(inv, p);
    }
}

u64 process_check(u64 *checked)
{
    u64 bad = 0, n = 0;
    for (struct process *p = all_processes; p; p = p->all_next, n++) {
        (*checked)++;
        if (process_numbers[p->num].p != p) {
            kprintf("invariant: pid %lu: process number %lu does not name it\n", p->pid, p->num);
            bad++;
        }
        if ((p->state == KEEP_STATE_BLOCKED) != (p->wait_kind != WAIT_NONE)) {
            kprintf("invariant: pid %lu: state %u with wait kind %u\n", p->pid, p->state, p->wait_kind);
            bad++;
        }
        if (p->deadline && (p->state != KEEP_STATE_BLOCKED || (p->wait_kind != WAIT_SLEEP &&
                                                               p->wait_kind != WAIT_RECV &&
                                                               p->wait_kind != WAIT_REPLY))) {
            kprintf("invariant: pid %lu: a deadline in state %u wait %u\n", p->pid, p->state, p->wait_kind);
            bad++;
        }
        if ((p->state == KEEP_STATE_RUNNABLE) != (p->rq_next != NULL)) {
            kprintf("invariant: pid %lu: state %u, %s a run queue\n", p->pid, p->state,
                    p->rq_next ? "in" : "not in");
            bad++;
        }
        u64 len = 0;
        for (struct process *s = p->sendq_head; s && len <= n + 1000; s = s->q_next, len++)
            if (s->wait_target != p || (s->wait_kind != WAIT_SEND && s->wait_kind != WAIT_FAULT)) {
                kprintf("invariant: pid %lu: queued sender pid %lu waits for something else\n",
                        p->pid, s->pid);
                bad++;
            }
    }
    if (n + process_numbers_out != numbers_used) {
        kprintf("invariant: %lu processes and %lu exported, %lu process numbers in use\n", n,
                process_numbers_out, numbers_used);
        bad++;
    }
    return bad;
}
