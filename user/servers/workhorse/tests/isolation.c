/* Isolation of Linux programs from Keep (Keep only: on Linux several of these work, int $0x80
 * first of all).  A Linux program tries every way out of the workhorse it
 * has, and each must fail:
 *   - Keep invocations with raw `syscall`: capability addresses (the slots
 *     Keep programs use, the console's among them, and random ones), every
 *     kernel method label, the fault and reply labels, every mode, with
 *     capabilities to send, receive slots and a string naming "ESCAPED";
 *     in emulation mode the kernel hands each to the workhorse as a Linux
 *     call, which answers an error (the process has no capability space);
 *   - the other instructions that enter the kernel or need privilege:
 *     int $N for the vectors a kernel could serve, sysenter, int1, far
 *     jumps and calls to the kernel's segments, loading them, iretq to
 *     ring 0, hlt, cli, in/out, rdmsr/wrmsr, control and debug registers,
 *     descriptor tables, swapgs, rdpmc, a single-step trap (each in a child,
 *     which must be killed by a signal);
 *   - memory: the kernel half, the server's windows (its copy of the root
 *     file system at 0x1000_0000_0000 and its view of the processes' pages
 *     at 0x2000_0000_0000) and the trampoline page, touched, passed to a
 *     system call, mapped over, made writable or unmapped.
 * tools/test_linux.py checks the summary lines and that "ESCAPED" never
 * reaches the console. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/prctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char msg[] = "ESCAPED through a Keep invocation\n";

static long raw(long rax, long rdi, long rsi, long rdx, long r10, long r8, long r9)
{
    register long a10 asm("r10") = r10, a8 asm("r8") = r8, a9 asm("r9") = r9;
    asm volatile("syscall" : "+a"(rax), "+D"(rdi), "+S"(rsi), "+d"(rdx), "+r"(a10), "+r"(a8), "+r"(a9)
                 : : "rcx", "r11", "memory");
    return rax;
}

/* Keep invocations; a child with no descriptors but `out`, so that a
 * capability address read as a Linux descriptor finds nothing. */
static int invocations(int out)
{
    /* rax: Keep's receive time-out (0 = for ever); for the workhorse the
     * Linux call number: read, write, fstat, and numbers Linux lacks. */
    static const long raxes[] = {0, 1, 5, 1000, 100000, 0xffffffffL, 1L << 40};
    long caps[80];
    int ncaps = 0;
    for (int i = 0; i < 64; i++)
        caps[ncaps++] = i; /* the slots Keep programs use (1: the console) */
    long more[] = {0xfff, 0x1000, 1L << 20, 1L << 32, 0x7fffffffffffL, -1L, 0x123456789abcdefL, 0x5a5a5a5a5aL};
    for (unsigned i = 0; i < sizeof more / sizeof *more; i++)
        caps[ncaps++] = more[i];
    long labels[24];
    int nlabels = 0;
    for (int i = 0; i < 17; i++)
        labels[nlabels++] = i; /* every kernel object's methods */
    for (int i = 0xff00; i <= 0xff04; i++)
        labels[nlabels++] = i; /* the kernel-made messages' labels (and reply labels) */
    /* mode (bits 24-25), string, 4 capabilities to send, 5 receive slots,
     * non-blocking bits */
    static const long extras[] = {0, 1L << 24, 2L << 24, 3L << 24, 0x400000, 4L << 16 | 5L << 19,
                                  0x400000 | 3L << 24 | 0xc000000};
    long made = 0, refused = 0, bad = 0;
    for (unsigned r = 0; r < sizeof raxes / sizeof *raxes; r++)
        for (int c = 0; c < ncaps; c++) {
            if (caps[c] == out)
                continue;
            for (int l = 0; l < nlabels; l++)
                for (unsigned e = 0; e < sizeof extras / sizeof *extras; e++) {
                    long tag = labels[l] | extras[e];
                    /* data words: the console's WRITE (ptr, len) */
                    long ret = raw(raxes[r], caps[c], tag, (long)msg, sizeof msg - 1, (long)msg, 0);
                    made++;
                    if (ret < 0 && ret >= -4095)
                        refused++;
                    else if (bad++ < 5)
                        dprintf(out, "ESCAPED? rax %#lx cap %#lx tag %#lx gave %ld\n", raxes[r], caps[c], tag, ret);
                }
        }
    dprintf(out, "keep invocations: %ld made, %ld answered with a Linux error, %ld otherwise\n", made, refused, bad);
    return bad != 0;
}

/* One instruction that must not run in user mode; the child prints
 * ESCAPED and exits 99 if it does. */
#define ATTEMPT(name, code)                                                        \
    static void name(void)                                                         \
    {                                                                              \
        asm volatile(code ::: "memory", "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r11"); \
    }
ATTEMPT(int80, "mov $4, %%eax; mov $1, %%ebx; lea msg(%%rip), %%rcx; mov $10, %%edx; int $0x80")
ATTEMPT(int81, "int $0x81")
ATTEMPT(int2e, "int $0x2e")
ATTEMPT(int20, "int $0x20")
ATTEMPT(int30, "int $0x30")
ATTEMPT(int34, "int $0x34")
ATTEMPT(intff, "int $0xff")
ATTEMPT(int0e, "int $0x0e")
ATTEMPT(int02, "int $0x02")
ATTEMPT(int01, ".byte 0xf1") /* int1 (icebp) */
ATTEMPT(sysenter, "sysenter")
ATTEMPT(ljmp_kernel, "ljmp *1f(%%rip); 1: .long 0; .word 0x08")
ATTEMPT(lcall_kernel, "lcall *1f(%%rip); 1: .long 0; .word 0x08")
ATTEMPT(ljmp_tss, "ljmp *1f(%%rip); 1: .long 0; .word 0x28")
ATTEMPT(ljmp_data, "ljmp *1f(%%rip); 1: .long 0; .word 0x1b")
ATTEMPT(mov_ss_kernel, "mov $0x10, %%eax; mov %%eax, %%ss")
ATTEMPT(mov_ds_tss, "mov $0x28, %%eax; mov %%eax, %%ds")
ATTEMPT(iretq_ring0, "mov %%rsp, %%rax; push $0x10; push %%rax; pushf; push $0x08; lea 1f(%%rip), %%rax; push %%rax; iretq; 1:")
ATTEMPT(sysret, "sysretq")
ATTEMPT(hlt, "hlt")
ATTEMPT(cli, "cli")
ATTEMPT(out_port, "mov $0x3f8, %%dx; mov $'E', %%al; outb %%al, %%dx")
ATTEMPT(in_port, "mov $0x60, %%dx; inb %%dx, %%al")
ATTEMPT(out_exit, "mov $0xf4, %%dx; xor %%eax, %%eax; outl %%eax, %%dx")
ATTEMPT(rdmsr, "mov $0xc0000082, %%ecx; rdmsr")
ATTEMPT(wrmsr, "mov $0xc0000082, %%ecx; xor %%eax, %%eax; xor %%edx, %%edx; wrmsr")
ATTEMPT(read_cr3, "mov %%cr3, %%rax")
ATTEMPT(write_cr3, "xor %%eax, %%eax; mov %%rax, %%cr3")
ATTEMPT(write_cr4, "xor %%eax, %%eax; mov %%rax, %%cr4")
ATTEMPT(write_dr7, "mov $0x1, %%eax; mov %%rax, %%dr7")
ATTEMPT(lgdt, "lgdt msg(%%rip)")
ATTEMPT(lidt, "lidt msg(%%rip)")
ATTEMPT(ltr, "mov $0x28, %%ax; ltr %%ax")
ATTEMPT(invlpg, "invlpg msg(%%rip)")
ATTEMPT(wbinvd, "wbinvd")
ATTEMPT(swapgs, "swapgs")
ATTEMPT(rdpmc, "xor %%ecx, %%ecx; rdpmc")
ATTEMPT(clts, "clts")
ATTEMPT(single_step, "pushf; orq $0x100, (%%rsp); popf; nop; nop")
ATTEMPT(syscall_single_step, "pushf; orq $0x100, (%%rsp); popf; mov $39, %%eax; syscall; nop")

/* Memory outside the Linux process's own. */
static volatile uint64_t sink;
static void touch(uint64_t va) { sink = *(volatile uint64_t *)va; }
static void kernel_half(void) { touch(0xffff800000000000ULL); }
static void kernel_top(void) { touch(0xffffffff80000000ULL); }
static void server_archive(void) { touch(0x100000000000ULL); }
static void server_pages(void) { touch(0x200000000000ULL); }
static void trampoline_write(void) { *(volatile uint64_t *)(0x100000000000ULL - 4096) = 0; }
static void noncanonical(void) { touch(0x8000000000000000ULL); }

struct attempt {
    const char *name;
    void (*fn)(void);
};

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    int failed = 0;

    /* 1. Keep invocations, from a child with only one descriptor. */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int out = dup2(1, 300);
        for (int fd = 0; fd < 300; fd++)
            close(fd);
        _exit(invocations(out));
    }
    int st;
    waitpid(pid, &st, 0);
    failed |= !(WIFEXITED(st) && WEXITSTATUS(st) == 0);

    /* 2. Instructions and memory, each in a child. */
    struct attempt list[] = {
#define A(n) {#n, n}
        A(int80), A(int81), A(int2e), A(int20), A(int30), A(int34), A(intff), A(int0e), A(int02),
        A(int01), A(sysenter), A(ljmp_kernel), A(lcall_kernel), A(ljmp_tss), A(ljmp_data),
        A(mov_ss_kernel), A(mov_ds_tss), A(iretq_ring0), A(sysret), A(hlt), A(cli), A(out_port),
        A(in_port), A(out_exit), A(rdmsr), A(wrmsr), A(read_cr3), A(write_cr3), A(write_cr4),
        A(write_dr7), A(lgdt), A(lidt), A(ltr), A(invlpg), A(wbinvd), A(swapgs), A(rdpmc), A(clts),
        A(single_step), A(syscall_single_step), A(kernel_half), A(kernel_top), A(server_archive),
        A(server_pages), A(trampoline_write), A(noncanonical),
    };
    int n = sizeof list / sizeof *list, killed = 0;
    for (int i = 0; i < n; i++) {
        if (argc > 1 && strcmp(argv[1], list[i].name) != 0) { /* `isolation NAME`: that one only */
            killed++;
            continue;
        }
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            list[i].fn();
            printf("ESCAPED: %s ran in user mode\n", list[i].name);
            _exit(99);
        }
        waitpid(pid, &st, 0);
        if (WIFSIGNALED(st) && (WTERMSIG(st) == SIGSEGV || WTERMSIG(st) == SIGILL || WTERMSIG(st) == SIGTRAP ||
                                WTERMSIG(st) == SIGBUS)) {
            killed++;
        } else {
            printf("%s: not stopped (status %#x)\n", list[i].name, st);
            failed = 1;
        }
    }
    printf("instructions and addresses: %d tried, %d stopped by a signal\n", n, killed);

    /* 3. The server's windows and the trampoline through system calls. */
    int refused = 0, tries = 0;
    long r;
#define REFUSED(call, err)                                                            \
    do {                                                                              \
        tries++;                                                                      \
        errno = 0;                                                                    \
        r = (long)(call);                                                             \
        if (r == -1 && errno == (err))                                                \
            refused++;                                                                \
        else                                                                          \
            printf("%s: %ld (%s), not %s\n", #call, r, strerror(errno), strerror(err)); \
    } while (0)
    REFUSED(write(1, (void *)0x100000000000UL, 16), EFAULT);
    REFUSED(write(1, (void *)0x200000000000UL, 16), EFAULT);
    REFUSED(write(1, (void *)0xffff800000000000UL, 16), EFAULT);
    int p[2];
    pipe(p);
    write(p[1], "into the trampoline", 19);
    REFUSED(read(p[0], (void *)(0x100000000000UL - 4096), 16), EFAULT);
    REFUSED(read(p[0], (void *)0x200000000000UL, 16), EFAULT);
    REFUSED(mprotect((void *)(0x100000000000UL - 4096), 4096, PROT_READ | PROT_WRITE), EINVAL);
    REFUSED(munmap((void *)(0x100000000000UL - 4096), 4096), EINVAL);
    REFUSED(mremap((void *)(0x100000000000UL - 4096), 4096, 4096, MREMAP_MAYMOVE), EFAULT);
    /* ... and the trampoline is still there: arch_prctl goes through it. */
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        unsigned long fs;
        munmap((void *)(0x100000000000UL - 4096), 4096);
        syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
        _exit(syscall(SYS_arch_prctl, ARCH_SET_FS, fs) == 0 ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    tries++;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        refused++;
    else
        printf("arch_prctl after munmap of the trampoline: status %#x\n", st);
    void *m = mmap((void *)0x200000000000UL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    tries++;
    if (m == MAP_FAILED)
        refused++;
    else
        printf("mmap MAP_FIXED at the server's window: %p\n", m);
    m = mmap((void *)(0x100000000000UL - 4096), 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    tries++;
    if (m == MAP_FAILED)
        refused++;
    else
        printf("mmap MAP_FIXED over the trampoline: %p\n", m);
    printf("system calls at the server's addresses: %d tried, %d refused\n", tries, refused);
    failed |= refused != tries;
    printf("isolation: %s\n", failed ? "FAILED" : "every way out refused");
    return failed;
}
