/* The system call: capability invocation.  Decode the registers, look the
 * capability up, hand the invocation to its object, write the results back,
 * and leave the kernel. */
#include "invoke.h"
#include "arch.h"
#include "keep/abi.h"
#include "process.h"
#include "sched.h"

static u64 dispatch(struct invocation *inv)
{
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
    default: /* pages have no methods */
        return KEEP_ERR_INVALID_METHOD;
    }
}

/* Called by entry.S with the caller's registers saved in its process. */
NORETURN void syscall_dispatch(void)
{
    struct process *p = cpu0.current;
    struct regs *r = &p->regs;
    struct invocation inv = {
        .caller = p,
        .method = r->rsi & KEEP_TAG_METHOD_MASK,
        .arg = {r->rdx, r->r8, r->r9, r->r10},
    };
    u64 e = (r->rsi & ~KEEP_TAG_METHOD_MASK) ? KEEP_ERR_INVALID_ARG
                                               : cap_lookup(p->as, r->rdi, 0, 0, &inv.cap);
    if (e == KEEP_ERR_OK)
        e = dispatch(&inv);
    if (e == KEEP_ERR_OK) {
        r->rdx = inv.res[0];
        r->r8 = inv.res[1];
        r->r9 = inv.res[2];
        r->r10 = inv.res[3];
    }
    if (e != INV_BLOCKED)
        r->rax = e;
    kernel_exit();
}
