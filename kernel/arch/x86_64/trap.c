/* Interrupts and exceptions.  From user mode an exception stops the process
 * (or, later, goes to its fault handler); from kernel mode it is a kernel
 * bug: print everything useful and stop the machine. */
#include "latency.h"
#include "arch.h"
#include "cap.h"
#include "checkpoint.h"
#include "device.h"
#include "ksyms.h"
#include "lib.h"
#include "probe.h"
#include "sched.h"
#include "process.h"
#include "vtd.h"
#include "x86.h"

static const char *const exception_names[32] = {
    "divide error", "debug", "NMI", "breakpoint", "overflow", "bound range",
    "invalid opcode", "device not available", "double fault", "coprocessor overrun",
    "invalid TSS", "segment not present", "stack fault", "general protection",
    "page fault", "reserved", "x87 floating point", "alignment check", "machine check",
    "SIMD floating point", "virtualization", "control protection",
};

const char *exception_name(u64 vector)
{
    if (vector == VEC_SYSCALL)
        return "system call in emulation mode without a fault handler";
    if (vector < 32 && exception_names[vector])
        return exception_names[vector];
    return "reserved exception";
}

struct stray_interrupts stray_interrupts;

/* A vector below 32 that the local APIC has in service came from an
 * interrupt message (a device can write any vector into one), not from the
 * CPU: acknowledge and count it, and go on with whatever ran. */
static bool stray_low_vector(u64 vector)
{
    if (!lapic_isr0 || !apic_in_service((unsigned)vector))
        return false;
    apic_eoi();
    stray_interrupts.low++;
    stray_interrupts.low_vectors |= 1ULL << vector;
    return true;
}

static void handle_irq(u64 vector)
{
    switch (vector) {
    case VEC_TIMER:
        apic_eoi();
        sched_timer();
        break;
    case VEC_SERIAL:
        console_irq();
        apic_eoi();
        break;
    case VEC_SPURIOUS:
        /* The APIC's own spurious interrupt takes no EOI; a device's
         * message at this vector is in service, and left so it would block
         * every interrupt (ktest DMA0011). */
        if (apic_in_service(VEC_SPURIOUS))
            apic_eoi();
        break;
    case VEC_DMA_FAULT:
        vtd_fault_irq();
        apic_eoi();
        break;
    default:
        if (vector >= IRQ_VECTOR_BASE && vector < IRQ_VECTOR_BASE + KEEP_IRQ_LINES + KEEP_MSI_LINES)
            interrupt_fire((unsigned)(vector - IRQ_VECTOR_BASE)); /* it sends the EOI */
        else {
            stray_interrupts.unowned++;
            apic_eoi();
        }
        break;
    }
}

/* Called by entry.S with the frame in the current process's control block. */
/* Whether the instruction at user address rip is rdfsbase, rdgsbase,
 * wrfsbase or wrgsbase (F3, optional REX, 0F AE, register form /0-/3).  It
 * raised #UD, so its bytes are mapped: the aligned words holding them load. */
static bool fsgsbase_insn(u64 rip)
{
    u64 w[2] = {0, 0};
    u64 at = rip & ~7ULL;
    if (!user_probe(at, &w[0]) || ((rip & 7) > 3 && !user_probe(at + 8, &w[1])))
        return false;
    const u8 *b = (const u8 *)w + (rip & 7);
    if (*b++ != 0xf3)
        return false;
    if ((*b & 0xf0) == 0x40)
        b++;
    return b[0] == 0x0f && b[1] == 0xae && (b[2] >> 6) == 3 && ((b[2] >> 3) & 7) <= 3;
}

NORETURN void trap_from_user(struct regs *r)
{
    LAT_ENTER(LAT_TRAP);
    struct process *p = cpu0.current;
    /* Vectors 2, 8 and 18 run on their own stack (cpu.c), so their frame
     * is not in the control block, where a user frame has to be to leave
     * the kernel again (a stray interrupt at one of them, or an NMI). */
    if (r != &p->regs) {
        p->regs = *r;
        r = &p->regs;
    }
    if (r->vector < 32 && stray_low_vector(r->vector))
        kernel_exit();
    /* The first fs/gs-base instruction of a process: from now on it runs
     * with CR4.FSGSBASE and its own bases (sched.c); retry it. */
    if (r->vector == 6 && fsgsbase_cpu && !p->uses_bases && fsgsbase_insn(r->rip)) {
        p->uses_bases = 1;
        sched_switch_bases(p); /* p keeps the CPU: switch_to would not */
        kernel_exit();
    }
    /* A write to a present page under the checkpoint's write protection
     * (checkpoint.h): lifted, the write is retried. */
    if (r->vector == 14 && (r->err & 0x1b) == 0x3 && checkpoint_write_fault(p->as, read_cr2()))
        kernel_exit();
    if (r->vector < 32) {
        u64 addr = r->vector == 14 ? read_cr2() : 0;
        process_fault(p, r->vector, r->rip, addr, r->err);
    } else {
        handle_irq(r->vector);
    }
    kernel_exit();
}

/* Called by entry.S for an interrupt or exception taken in kernel mode. */
void trap_from_kernel(struct regs *r)
{
    if (r->vector >= 32) {
        LAT_ENTER(LAT_IDLE_IRQ); /* only the idle loop takes interrupts in the kernel */
        handle_irq(r->vector);
        return;
    }
    if (stray_low_vector(r->vector))
        return;
    /* A probing load (probe.h) of an unmapped page: resume at its fix-up. */
    if (r->vector == 14) {
        for (const struct ex_entry *e = ex_table_start; e < ex_table_end; e++) {
            if (e->insn == r->rip) {
                r->rip = e->fixup;
                r->rflags &= ~RFLAGS_AC; /* a user probe faulted between stac and clac */
                return;
            }
        }
    }
    kernel_fault(r);
}

void print_backtrace(u64 rbp)
{
    kprintf("backtrace:\n");
    u64 lo = (u64)(uptr)&kernel_stacks, hi = lo + sizeof kernel_stacks;
    for (int depth = 0; depth < 32 && rbp >= lo && rbp + 16 <= hi && !(rbp & 7); depth++) {
        u64 *frame = (u64 *)(uptr)rbp;
        u64 ret = frame[1];
        u64 off;
        const char *name = ksym_lookup(ret, &off);
        kprintf("  #%d %p %s+0x%lx\n", depth, (void *)(uptr)ret, name ? name : "?", off);
        rbp = frame[0];
    }
}

NORETURN void kernel_fault(struct regs *r)
{
    u64 off;
    const char *name = ksym_lookup(r->rip, &off);
    kprintf("\nkeep: KERNEL FAULT: %s (vector %lu, error 0x%lx)\n", exception_name(r->vector),
            r->vector, r->err);
    kprintf("rip %p %s+0x%lx  cs %lx rflags %lx\n", (void *)(uptr)r->rip, name ? name : "?", off, r->cs,
            r->rflags);
    kprintf("faulting address (cr2) %p  cr3 %p\n", (void *)(uptr)read_cr2(), (void *)(uptr)read_cr3());
    kprintf("rax %016lx rbx %016lx rcx %016lx rdx %016lx\n", r->rax, r->rbx, r->rcx, r->rdx);
    kprintf("rsi %016lx rdi %016lx rbp %016lx rsp %016lx\n", r->rsi, r->rdi, r->rbp, r->rsp);
    kprintf("r8  %016lx r9  %016lx r10 %016lx r11 %016lx\n", r->r8, r->r9, r->r10, r->r11);
    kprintf("r12 %016lx r13 %016lx r14 %016lx r15 %016lx\n", r->r12, r->r13, r->r14, r->r15);
    print_backtrace(r->rbp);
    kprintf("keep: kernel stopped\n");
    machine_debug_exit(0x7f);
}

NORETURN void panic(const char *fmt, ...)
{
    char buf[200];
    va_list ap;
    va_start(ap, fmt);
    kvsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    cli();
    kprintf("\nkeep: PANIC: %s\n", buf);
    print_backtrace((u64)(uptr)__builtin_frame_address(0));
    kprintf("keep: kernel stopped\n");
    machine_debug_exit(0x7f);
}
