/* The architecture interface the generic kernel uses: saved user registers,
 * per-CPU state, entry/exit, paging and timer. */
#ifndef KEEP_ARCH_H
#define KEEP_ARCH_H

#include "types.h"

struct aspace;
struct process;

/* Vector number stored in regs.vector for a system-call entry. */
#define VEC_SYSCALL 0x100
#define VEC_TIMER 0x20
#define VEC_SERIAL 0x24
#define VEC_SPURIOUS 0xff

/* A user context, saved where the CPU and the entry stubs push it: the TSS
 * stack pointer (rsp0) points just past the current process's struct regs,
 * so an interrupt or a system call from user mode stores the frame directly
 * into the process control block.  The order mirrors the pushes in entry.S. */
struct regs {
    u64 r15, r14, r13, r12, r11, r10, r9, r8;
    u64 rbp, rdi, rsi, rdx, rcx, rbx, rax;
    u64 vector, err;
    u64 rip, cs, rflags, rsp, ss; /* the hardware interrupt frame */
};
_Static_assert(sizeof(struct regs) % 16 == 0, "rsp0 must stay 16-byte aligned");

/* The user's x87/SSE/AVX state: XSAVE's standard format (the legacy
 * region, the header, then the components XCR0 enables) when the CPU has
 * XSAVE, FXSAVE's 512 bytes otherwise.  x87, SSE and AVX take 832 bytes;
 * AVX-512 (2,688) is not enabled, so XCR0 tells programs it is absent. */
#define FPU_AREA_SIZE 1024
struct fpu_state {
    u8 bytes[FPU_AREA_SIZE];
} __attribute__((aligned(64)));

/* Per-CPU state in one struct so that SMP can come later. */
struct cpu {
    u64 user_rsp_scratch;  /* syscall entry: the user rsp before the frame is built */
    u64 kstack_top;        /* the one kernel stack */
    struct process *current;
    struct aspace *loaded_as; /* whose page tables (and capability segment) CR3 holds */
    u64 features;          /* KEEP_CPU_* bits */
    u64 tsc_hz;
    u64 tsc_khz;           /* TSC ticks a millisecond */
    u64 tsc_boot;          /* the TSC when the timer started: time 0 */
    u32 phys_bits;         /* physical-address width (CPUID 0x80000008) */
    u64 fastpath_ipc;      /* invocations the IPC fast path completed */
    u64 fastpath_ntfn;     /* SIGNALs and WAITs the notification fast path completed */
    /* The last capability lookup that found no cappage: where (invoke.c
     * rebuilds capability-segment tables a kpager took back). */
    struct aspace *cap_miss_as;
    u64 cap_miss_addr;
    u64 xcr0;              /* the state components XSAVE saves (0 without XSAVE) */
    u32 fpu_size;          /* bytes of struct fpu_state in use: 512, or XSAVE's size */
};
extern struct cpu cpu0;

struct kernel_stacks {
    u8 guard[4096];
    u8 stack[16384];
    u8 ist_guard[4096];
    u8 ist[4096];
};
extern struct kernel_stacks kernel_stacks;

/* entry.S */
NORETURN void arch_return_to_user(struct regs *r);
/* The argument order puts payload and tag where `to` receives them. */
NORETURN void fastpath_exit(u64 payload, u64 tag, const struct regs *from, struct regs *to);
/* The same with the four message words from words[0..3] (a fault message). */
NORETURN void fastpath_exit_words(u64 payload, u64 tag, const u64 *words, struct regs *to);
/* A kernel object's answer (rax 0, the word in rdx, r8-r10 0) to `to`'s
 * own system call, rsi and rdi as they were. */
NORETURN void fastpath_exit_word(u64 payload, u64 tag, u64 word, struct regs *to);

/* Called from assembly (boot.S, entry.S). */
NORETURN void kmain(u32 magic, u32 mbi_pa);
NORETURN void syscall_dispatch(void);
NORETURN void trap_from_user(struct regs *r);
void trap_from_kernel(struct regs *r);

/* cpu.c */
extern u8 fsgsbase_cpu; /* CPUID has FSGSBASE (sched.c turns CR4.FSGSBASE on for the processes that use it) */
void cpu_init(void);
struct tss {
    u32 reserved0;
    u64 rsp0, rsp1, rsp2;
    u64 reserved1;
    u64 ist[7];
    u64 reserved2;
    u16 reserved3;
    u16 iopb_offset;
} __attribute__((packed));
extern struct tss tss0;
/* Where the next entry from user mode saves its context: just past r. */
static inline void cpu_set_kernel_entry_stack(struct regs *r) { tss0.rsp0 = (u64)(uptr)(r + 1); }
/* fxsave64 and fxrstor64, each listed in section fpu_sites: on a CPU with
 * XSAVE, cpu_init makes them xsave64 and xrstor64 (the ModRM reg field 0
 * becomes 4, 1 becomes 5; the length stays).  Their feature mask is
 * EDX:EAX AND XCR0: eax = ~0 asks for every component XCR0 enables, and
 * XCR0's upper half is 0, so edx may hold anything. */
#define FPU_SITE(insn) "662: " insn "\n.pushsection fpu_sites, \"a\"\n.balign 8\n.quad 662b\n.popsection\n"
extern const u64 fpu_sites_start[], fpu_sites_end[];
static ALWAYS_INLINE void fpu_save(struct fpu_state *s) { __asm__ volatile(FPU_SITE("fxsave64 %0") : "=m"(*s) : "a"(~0u)); }
/* Save the CPU's state into out and load in: one mask for both. */
static ALWAYS_INLINE void fpu_switch(struct fpu_state *out, const struct fpu_state *in)
{
    __asm__ volatile(FPU_SITE("fxsave64 %0") FPU_SITE("fxrstor64 %1") : "=m"(*out) : "m"(*in), "a"(~0u));
}
void fpu_init_state(struct fpu_state *s);
/* Would fxrstor64/xrstor64 load a (cpu0.fpu_size bytes) without #GP? */
bool fpu_state_valid(const struct fpu_state *s);

/* apic.c */
void apic_init(void);
void apic_eoi(void);
/* One-shot timer: interrupt at TSC value `when` (or earlier); the timer
 * interrupt calls apic_timer_fired first. */
void apic_arm(u64 when);
void apic_timer_fired(void);
/* Whether the local APIC has vector in service: an interrupt is being
 * handled at it (an exception never sets these bits). */
bool apic_in_service(unsigned vector);
extern volatile u32 *lapic_isr0;
/* Interrupts at vectors nothing owns (trap.c): below 32, where the CPU's
 * exceptions are (a device's forged or stray message), and above. */
struct stray_interrupts {
    u64 low;         /* at vectors 0-31 */
    u64 low_vectors; /* bit v: vector v came */
    u64 unowned;     /* at vectors 32-255 that no line or kernel handler uses */
};
extern struct stray_interrupts stray_interrupts;
/* The I/O APIC input ISA IRQ irq reaches (the MADT's overrides). */
unsigned isa_line(unsigned irq);
void ioapic_route_isa(unsigned irq, unsigned vector);
/* Program an I/O APIC input: vector, masked or not; trigger and polarity
 * as the MADT says (PCI inputs level and active low, ISA edge and high,
 * unless overridden). */
void ioapic_program(unsigned line, unsigned vector, bool masked);
void ioapic_mask(unsigned line, bool masked);
bool apic_owns_page(u64 pa); /* the local and I/O APIC registers */
/* Vectors of the I/O APIC lines that user-level drivers bind. */
#define IRQ_VECTOR_BASE 0x30
/* The unit of TIMER.NOW's and INFO(TICKS)' ticks, taken from the TSC:
 * there is no periodic interrupt. */
#define TIMER_HZ 100

/* serial.c */
void serial_init(void);
void serial_putc(char c);
void serial_enable_rx_irq(void);
int serial_getc(void); /* -1 when nothing is waiting */

/* power.c */
NORETURN void machine_poweroff(void);
NORETURN void machine_debug_exit(u32 code);

/* trap.c */
NORETURN void kernel_fault(struct regs *r);
void print_backtrace(u64 rbp);

#endif
