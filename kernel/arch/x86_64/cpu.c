/* CPU set-up: GDT, TSS, IDT, SYSCALL MSRs, feature detection, control
 * registers (NX, global pages, PCID, SMEP, SMAP, SSE) and FPU state. */
#include "arch.h"
#include "arch_offsets.h"
#include "keep/abi.h"
#include "lib.h"
#include "probe.h"
#include "x86.h"

struct idt_gate {
    u16 offset_lo, selector;
    u8 ist, type;
    u16 offset_mid;
    u32 offset_hi, reserved;
} __attribute__((packed));

struct table_ptr {
    u16 limit;
    u64 base;
} __attribute__((packed));

struct cpu cpu0;
struct tss tss0;
static u64 gdt[7];
static struct idt_gate idt[256];
static struct fpu_state fpu_template;

/* The kernel stack and the stack for double faults, NMI and machine checks,
 * each above a guard page that paging.c leaves unmapped. */
struct kernel_stacks kernel_stacks __attribute__((aligned(4096)));
u8 fsgsbase_cpu;

/* Without SMAP, stac and clac are invalid: each one probe.h listed becomes
 * a 3-byte NOP (0f 1f 00).  Called before paging_init, while the boot page
 * tables still map the kernel's text writable; writing CR4 afterwards
 * serializes. */
static void smap_sites_patch(void)
{
    for (const u64 *s = smap_sites_start; s < smap_sites_end; s++) {
        u8 *p = (u8 *)(uptr)*s;
        p[0] = 0x0f;
        p[1] = 0x1f;
        p[2] = 0x00;
    }
}

/* With XSAVE: fxsave64 -> xsave64, fxrstor64 -> xrstor64 (REX.W 0F AE
 * then ModRM: its reg field gains 4). */
static void fpu_sites_patch(void)
{
    for (const u64 *s = fpu_sites_start; s < fpu_sites_end; s++) {
        u8 *p = (u8 *)(uptr)*s;
        p[3] |= 0x20;
    }
}

/* XCR0: x87 and SSE, and AVX where the CPU has it; the size its layout
 * needs must fit struct fpu_state. */
static void xsave_enable(void)
{
    u32 a, b, c, d;
    cpuid(0xd, 0, &a, &b, &c, &d);
    u64 xcr0 = 3 | (a & 4);
    __asm__ volatile("xsetbv" ::"c"(0), "a"((u32)xcr0), "d"((u32)(xcr0 >> 32)));
    cpuid(0xd, 0, &a, &b, &c, &d); /* ebx: the size for XCR0 as now set */
    if (b > FPU_AREA_SIZE)
        panic("XSAVE area of %u bytes does not fit", b);
    cpu0.xcr0 = xcr0;
    cpu0.fpu_size = b;
    fpu_sites_patch();
}

_Static_assert(__builtin_offsetof(struct cpu, user_rsp_scratch) == CPU_USER_RSP, "entry.S");
_Static_assert(__builtin_offsetof(struct cpu, kstack_top) == CPU_KSTACK_TOP, "entry.S");
_Static_assert(__builtin_offsetof(struct tss, rsp0) == TSS_RSP0, "entry.S");
_Static_assert(__builtin_offsetof(struct regs, vector) == REGS_VECTOR, "entry.S");
_Static_assert(__builtin_offsetof(struct regs, r10) == REGS_R10 && __builtin_offsetof(struct regs, r8) == REGS_R8 &&
                   __builtin_offsetof(struct regs, rbp) == REGS_RBP && __builtin_offsetof(struct regs, rdi) == REGS_RDI &&
                   __builtin_offsetof(struct regs, rdx) == REGS_RDX && __builtin_offsetof(struct regs, rbx) == REGS_RBX &&
                   __builtin_offsetof(struct regs, rax) == REGS_RAX && __builtin_offsetof(struct regs, rip) == REGS_RIP &&
                   __builtin_offsetof(struct regs, rflags) == REGS_RFLAGS &&
                   __builtin_offsetof(struct regs, rsp) == REGS_RSP,
               "entry.S");
_Static_assert(__builtin_offsetof(struct regs, cs) == REGS_CS, "entry.S");
_Static_assert(SEL_UDATA == 0x1b && SEL_UCODE == 0x23, "SYSRET needs udata at STAR.base+8");

extern const u64 vector_table[256];
extern void syscall_entry(void);

static void detect_features(void)
{
    u32 a, b, c, d, max;
    u64 f = 0;
    cpuid(0, 0, &max, &b, &c, &d);
    cpuid(1, 0, &a, &b, &c, &d);
    if (d & (1u << 9))
        f |= KEEP_CPU_APIC;
    if (c & (1u << 17))
        f |= KEEP_CPU_PCID;
    if (c & (1u << 24))
        f |= KEEP_CPU_TSC_DEADLINE;
    if (d & (1u << 13))
        f |= KEEP_CPU_GLOBAL;
    if ((c & (1u << 26)) && max >= 0xd)
        f |= KEEP_CPU_XSAVE;
    if (max >= 7) {
        cpuid(7, 0, &a, &b, &c, &d);
        if (b & (1u << 7))
            f |= KEEP_CPU_SMEP;
        if (b & (1u << 20))
            f |= KEEP_CPU_SMAP;
        if (b & (1u << 10))
            f |= KEEP_CPU_INVPCID;
        /* Not a KEEP_CPU_* bit: user code asks CPUID (see trap.c). */
        fsgsbase_cpu = b & 1u;
    }
    cpuid(0x80000000, 0, &max, &b, &c, &d);
    if (max >= 0x80000001) {
        cpuid(0x80000001, 0, &a, &b, &c, &d);
        if (d & (1u << 20))
            f |= KEEP_CPU_NX;
        if (d & (1u << 26))
            f |= KEEP_CPU_PAGE1G;
    }
    cpu0.phys_bits = 36; /* the architectural minimum */
    if (max >= 0x80000008) {
        cpuid(0x80000008, 0, &a, &b, &c, &d);
        cpu0.phys_bits = a & 0xff;
    }
    cpu0.features = f;
}

static void set_gate(unsigned v, u64 handler, u8 ist, u8 dpl)
{
    idt[v] = (struct idt_gate){
        .offset_lo = (u16)handler,
        .selector = 0x08,
        .ist = ist,
        .type = (u8)(0x8E | dpl << 5), /* present, DPL, 64-bit interrupt gate: IF cleared on entry */
        .offset_mid = (u16)(handler >> 16),
        .offset_hi = (u32)(handler >> 32),
        .reserved = 0,
    };
}

void fpu_init_state(struct fpu_state *s) { *s = fpu_template; }

/* The loads' #GP conditions (SDM Vol. 1 10.5.1, 13.8): MXCSR bits outside
 * MXCSR_MASK (offset 24 and 28 of the legacy region; a mask of 0 means
 * 0xffbf); for XSAVE's standard format, XSTATE_BV outside XCR0, XCOMP_BV
 * not 0, and the header's other bytes, which must be 0. */
bool fpu_state_valid(const struct fpu_state *s)
{
    u32 mxcsr, mask;
    memcpy(&mxcsr, s->bytes + 24, 4);
    memcpy(&mask, fpu_template.bytes + 28, 4);
    if (!mask)
        mask = 0xffbf;
    if (mxcsr & ~mask)
        return false;
    if (!cpu0.xcr0)
        return true;
    if ((le64(s->bytes + 512) & ~cpu0.xcr0) || le64(s->bytes + 520))
        return false;
    for (unsigned i = 528; i < 576; i++)
        if (s->bytes[i])
            return false;
    return true;
}

void cpu_init(void)
{
    detect_features();
    if (!(cpu0.features & KEEP_CPU_NX))
        panic("this CPU has no NX bit; Keep needs it");

    gdt[0] = 0;
    gdt[1] = 0x00209A0000000000ULL; /* 0x08 kernel code */
    gdt[2] = 0x0000920000000000ULL; /* 0x10 kernel data */
    gdt[3] = 0x0000F20000000000ULL; /* 0x18 user data (STAR base + 8) */
    gdt[4] = 0x0020FA0000000000ULL; /* 0x20 user code (STAR base + 16) */
    u64 tss_base = (u64)(uptr)&tss0;
    u64 tss_limit = sizeof(tss0) - 1;
    gdt[5] = (tss_limit & 0xffff) | ((tss_base & 0xffffff) << 16) | (0x89ULL << 40) |
             (((tss_limit >> 16) & 0xf) << 48) | (((tss_base >> 24) & 0xff) << 56);
    gdt[6] = tss_base >> 32;
    tss0.iopb_offset = sizeof(tss0); /* no I/O bitmap: user code has no port access */
    tss0.ist[0] = (u64)(uptr)(kernel_stacks.ist + sizeof kernel_stacks.ist);

    struct table_ptr gp = {sizeof(gdt) - 1, (u64)(uptr)gdt};
    __asm__ volatile("lgdt %0\n"
                     "pushq $0x08\n"
                     "leaq 1f(%%rip), %%rax\n"
                     "pushq %%rax\n"
                     "lretq\n"
                     "1: mov $0x10, %%eax\n"
                     "mov %%eax, %%ds\n"
                     "mov %%eax, %%es\n"
                     "mov %%eax, %%ss\n"
                     "xor %%eax, %%eax\n"
                     "mov %%eax, %%fs\n"
                     "mov %%eax, %%gs\n"
                     "ltr %w1\n"
                     :
                     : "m"(gp), "r"((u16)0x28)
                     : "rax", "memory");

    for (unsigned v = 0; v < 256; v++) {
        u8 ist = (v == 2 || v == 8 || v == 18) ? 1 : 0; /* NMI, #DF, #MC on their own stack */
        /* int3 may be used from user mode (#BP to the fault handler); an
         * `int n` at any other vector is #GP */
        set_gate(v, vector_table[v], ist, v == 3 ? 3 : 0);
    }
    struct table_ptr ip = {sizeof(idt) - 1, (u64)(uptr)idt};
    __asm__ volatile("lidt %0" ::"m"(ip));

    wrmsr(MSR_STAR, (0x10ULL << 48) | (0x08ULL << 32));
    wrmsr(MSR_LSTAR, (u64)(uptr)syscall_entry);
    wrmsr(MSR_FMASK, 0x40700); /* clear IF, TF, DF, AC on entry */
    wrmsr(MSR_EFER, rdmsr(MSR_EFER) | 0x801); /* SCE, NXE (LME is already on) */

    u64 cr4 = read_cr4();
    cr4 |= (1ULL << 9) | (1ULL << 10); /* OSFXSR, OSXMMEXCPT: user programs use SSE */
    if (cpu0.features & KEEP_CPU_GLOBAL)
        cr4 |= 1ULL << 7;
    if (cpu0.features & KEEP_CPU_SMEP)
        cr4 |= 1ULL << 20;
    if (cpu0.features & KEEP_CPU_SMAP)
        cr4 |= 1ULL << 21; /* the kernel reaches user memory through the physical window, or user_probe */
    else
        smap_sites_patch();
    if (cpu0.features & KEEP_CPU_XSAVE)
        cr4 |= 1ULL << 18; /* OSXSAVE */
    write_cr4(cr4);
    if (cpu0.features & KEEP_CPU_XSAVE)
        xsave_enable();
    u64 cr0 = read_cr0();
    cr0 &= ~((1ULL << 2) | (1ULL << 3)); /* EM, TS off */
    cr0 |= (1ULL << 1) | (1ULL << 16);   /* MP, WP */
    write_cr0(cr0);
    __asm__ volatile("fninit");
    u32 mxcsr = 0x1f80;
    __asm__ volatile("ldmxcsr %0" ::"m"(mxcsr));
    fpu_save(&fpu_template);
    if (!cpu0.fpu_size)
        cpu0.fpu_size = 512;

    cpu0.kstack_top = (u64)(uptr)(kernel_stacks.stack + sizeof kernel_stacks.stack);
}
