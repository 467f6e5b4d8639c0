/* The system call: capability invocation.  Decode the tag, resolve the
 * invoked capability (through wrappers), and hand the invocation to IPC or
 * to the kernel object it names; write the results back and leave. */
#include "invoke.h"
#include "latency.h"
#include "account.h"
#include "arch.h"
#include "checkpoint.h"
#include "device.h"
#include "dma_domain.h"
#include "notification.h"
#include "ipc.h"
#include "keep/abi.h"
#include "process.h"
#include "sched.h"
#include "wrapper.h"

static u64 dispatch(struct invocation *inv)
{
    LAT_METHOD(cap_type(inv->cap), inv->method);
    switch (cap_type(inv->cap)) {
    case KEEP_TYPE_CONSOLE:
        return console_invoke(inv);
    case KEEP_TYPE_KERNEL:
        return kernel_ctl_invoke(inv);
    case KEEP_TYPE_MEMORY:
        return memory_invoke(inv);
    case KEEP_TYPE_ASPACE:
        return aspace_invoke(inv);
    case KEEP_TYPE_PROCESS:
        return process_invoke(inv);
    case KEEP_TYPE_ACCOUNT:
        return account_invoke(inv);
    case KEEP_TYPE_TIMER:
        return timer_invoke(inv);
    case KEEP_TYPE_DEVMEM:
        return devmem_invoke(inv);
    case KEEP_TYPE_IOPORT:
        return ioport_invoke(inv);
    case KEEP_TYPE_INTERRUPT:
        return interrupt_invoke(inv);
    case KEEP_TYPE_DMA_DOMAIN:
        return dma_domain_invoke(inv);
    case KEEP_TYPE_NOTIFICATION:
        return notification_invoke(inv);
    case KEEP_TYPE_CHECKPOINT:
        return checkpoint_invoke(inv);
    default: /* pages and cappages have no methods */
        return KEEP_ERR_INVALID_METHOD;
    }
}

/* The invocation in p's registers, whose capability address the caller
 * has looked up (err: the lookup's error, or OK and the slot). */
static u64 invoke_slot(struct process *p, struct process *behalf_to, u64 err, const struct cap *slot)
{
    struct regs *r = &p->regs;
    u64 tag = r->rsi, mode = tag_mode(tag);
    struct cap c;
    if (unlikely(err == KEEP_ERR_NO_CAPPAGE)) /* the fast path's lookup of rdi missed */
        cap_miss_note(p->as, r->rdi);
    u64 e = cap_check_slot(err, slot, 0, 0, &c); /* before building anything: errors are common */
    if (e)
        return e;
    /* Field by field: an initializer would clear the whole struct first
     * (a rep stos of ten words); only res must start at zero, since it goes
     * back to the caller's registers as it is. */
    struct invocation inv;
    inv.caller = p;
    inv.cap = c;
    inv.tag = tag;
    inv.method = tag & KEEP_TAG_LABEL_MASK;
    inv.on_behalf = behalf_to != NULL;
    inv.behalf_to = behalf_to;
    inv.arg[0] = r->rdx;
    inv.arg[1] = r->r8;
    inv.arg[2] = r->r9;
    inv.arg[3] = r->r10;
    inv.res[0] = inv.res[1] = inv.res[2] = inv.res[3] = 0;
    inv.nvia = 0;
    if ((e = wrapper_resolve(&inv.cap, inv.via, &inv.nvia)))
        return e;
    if (behalf_to && (cap_type(inv.cap) != KEEP_TYPE_SENDER || process_from_cap(inv.cap) != behalf_to))
        return INV_RESTART;
    if (cap_type(inv.cap) == KEEP_TYPE_SENDER || cap_type(inv.cap) == KEEP_TYPE_RETURN)
        return ipc_send(&inv, mode);

    /* A kernel object: a plain call, nothing but the label and four words. */
    if (mode != KEEP_TAG_MODE_CALL)
        return KEEP_ERR_INVALID_METHOD;
    if (tag & ~KEEP_TAG_LABEL_MASK)
        return KEEP_ERR_INVALID_ARG;
    /* The right abi/keep.toml gives the method, for every object type. */
    u64 need = keep_method_rights(cap_type(inv.cap), inv.method);
    if (need && !inv_has(&inv, need))
        return KEEP_ERR_NO_RIGHTS;
    e = dispatch(&inv);
    if (e == KEEP_ERR_OK) {
        r->rdx = inv.res[0];
        r->r8 = inv.res[1];
        r->r9 = inv.res[2];
        r->r10 = inv.res[3];
    }
    return e;
}

u64 invoke_run(struct process *p, struct process *behalf_to)
{
    u64 tag = p->regs.rsi;
    struct cap *slot = NULL;
    if (tag & TAG_RESERVED)
        return KEEP_ERR_INVALID_ARG;
    if (tag_mode(tag) == KEEP_TAG_MODE_RECV)
        return behalf_to ? INV_RESTART : ipc_receive(p, tag, p->regs.rax);
    u64 e = cspace_slot(p->as, p->regs.rdi, &slot);
    return invoke_slot(p, behalf_to, e, slot);
}

static NORETURN void finish(struct process *p, u64 e)
{
    if (unlikely(e == KEEP_ERR_NO_CAPPAGE))
        e = kmem_cap_miss(p); /* a slot whose segment tables were taken back: rebuild */
    if (e != INV_BLOCKED && e != INV_DONE)
        p->regs.rax = e;
    kernel_exit();
}

NORETURN void syscall_general(struct process *p)
{
    if (p->emulate) {
        u64 words[4] = {p->regs.rax, p->regs.rdi, p->regs.rsi, p->regs.rdx};
        if (!process_reflect(p, KEEP_LABEL_SYSCALL, words))
            process_fault(p, VEC_SYSCALL, p->regs.rip - 2, 0, 0);
        kernel_exit();
    }
    finish(p, invoke_run(p, NULL));
}

NORETURN void syscall_general_slot(struct process *p, u64 err, const struct cap *slot)
{
    finish(p, invoke_slot(p, NULL, err, slot));
}
