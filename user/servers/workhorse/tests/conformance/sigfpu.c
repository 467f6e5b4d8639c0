// The vector registers across a signal handler, as Linux keeps them: the
// interrupted code's xmm (and, with AVX, ymm) registers and MXCSR come
// back after a handler that changes its own; the handler starts with the
// initial MXCSR; the frame's fpstate holds the interrupted values (with
// FP_XSTATE_MAGIC1/2 when the frame is in XSAVE format) and a change the
// handler makes there is what the interrupted code finds after it; a
// corrupted fpstate ends the process with SIGSEGV.
#define _GNU_SOURCE
#include <cpuid.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

static int avx;
static volatile uint32_t handler_mxcsr, saved_mxcsr, saved_xmm3, magic_ok;
static volatile int patch_xmm3, corrupt;

static int avx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_AVX) || !(c & bit_OSXSAVE))
        return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 6) == 6;
}

static void handler(int sig, siginfo_t *si, void *ctx) {
    (void)sig;
    (void)si;
    uint32_t m;
    __asm__ volatile("stmxcsr %0" : "=m"(m));
    handler_mxcsr = m;
    // The handler's own values, in every register the interrupted code uses.
    uint32_t mine = 0xdeadbeef;
    __asm__ volatile("movd %0, %%xmm3\n pshufd $0, %%xmm3, %%xmm3\n movdqa %%xmm3, %%xmm9" ::"m"(mine) : "xmm3", "xmm9");
    if (avx)
        __asm__ volatile("vbroadcastss %0, %%ymm3\n vbroadcastss %0, %%ymm9" ::"m"(mine) : "xmm3", "xmm9");
    uint32_t m2 = 0x7f80; // round toward zero
    __asm__ volatile("ldmxcsr %0" ::"m"(m2));
    ucontext_t *uc = ctx;
    struct _libc_fpstate *fp = uc->uc_mcontext.fpregs;
    saved_mxcsr = fp->mxcsr;
    memcpy((void *)&saved_xmm3, &fp->_xmm[3], 4);
    uint32_t *sw = (uint32_t *)((char *)fp + 464);
    if (uc->uc_flags & 1) { // UC_FP_XSTATE
        uint32_t size = sw[1];
        uint32_t m2v;
        memcpy(&m2v, (char *)fp + sw[4], 4);
        magic_ok = sw[0] == 0x46505853 && size == sw[4] + 4 && m2v == 0x46505845;
    } else {
        magic_ok = 1;
    }
    if (patch_xmm3) {
        uint32_t v = 0x01020304;
        memcpy(&fp->_xmm[3], &v, 4);
    }
    if (corrupt)
        fp->mxcsr = 0xffffffff; // reserved bits: the restore is refused
}

// Sets xmm3/xmm9 (ymm with AVX) to `v` and MXCSR to round-down, signals
// itself, and reports what it finds afterwards.
static void run(uint32_t v, uint32_t *x3, uint32_t *x9, uint32_t *up9, uint32_t *mx) {
    uint32_t round_down = 0x3f80, out3, out9, upper9 = 0, mxo;
    long pid = getpid();
    if (avx) {
        __asm__ volatile(
            "ldmxcsr %[rd]\n vbroadcastss %[v], %%ymm3\n vbroadcastss %[v], %%ymm9\n"
            "mov $62, %%eax\n mov %[pid], %%rdi\n mov $10, %%esi\n syscall\n"
            "vmovd %%xmm3, %[o3]\n vmovd %%xmm9, %[o9]\n vextractf128 $1, %%ymm9, %%xmm0\n vmovd %%xmm0, %[u9]\n"
            "stmxcsr %[mo]\n vzeroupper\n"
            : [o3] "=m"(out3), [o9] "=m"(out9), [u9] "=m"(upper9), [mo] "=m"(mxo)
            : [rd] "m"(round_down), [v] "m"(v), [pid] "r"(pid)
            : "rax", "rcx", "rdi", "rsi", "r11", "memory", "xmm0", "xmm3", "xmm9");
    } else {
        __asm__ volatile(
            "ldmxcsr %[rd]\n movd %[v], %%xmm3\n pshufd $0, %%xmm3, %%xmm3\n movdqa %%xmm3, %%xmm9\n"
            "mov $62, %%eax\n mov %[pid], %%rdi\n mov $10, %%esi\n syscall\n"
            "movd %%xmm3, %[o3]\n movd %%xmm9, %[o9]\n stmxcsr %[mo]\n"
            : [o3] "=m"(out3), [o9] "=m"(out9), [mo] "=m"(mxo)
            : [rd] "m"(round_down), [v] "m"(v), [pid] "r"(pid)
            : "rax", "rcx", "rdi", "rsi", "r11", "memory", "xmm3", "xmm9");
        upper9 = v;
    }
    uint32_t normal = 0x1f80;
    __asm__ volatile("ldmxcsr %0" ::"m"(normal));
    *x3 = out3, *x9 = out9, *up9 = upper9, *mx = mxo;
}

int main(void) {
    avx = avx_usable();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = handler;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, 0);

    uint32_t x3, x9, u9, mx;
    run(0x5a5a5a5a, &x3, &x9, &u9, &mx);
    printf("kept: xmm3 %s, xmm9 %s, upper ymm9 %s, mxcsr %s\n", x3 == 0x5a5a5a5a ? "yes" : "no",
           x9 == 0x5a5a5a5a ? "yes" : "no", u9 == 0x5a5a5a5a ? "yes" : "no", mx == 0x3f80 ? "yes" : "no");
    printf("handler: mxcsr %#x, frame mxcsr %#x, frame xmm3 %#x, software bytes %s\n", handler_mxcsr & 0xffc0,
           saved_mxcsr & 0xffc0, saved_xmm3, magic_ok ? "ok" : "wrong");

    patch_xmm3 = 1;
    run(0x6b6b6b6b, &x3, &x9, &u9, &mx);
    printf("patched in the frame: xmm3 %#x, xmm9 %#x\n", x3, x9);
    patch_xmm3 = 0;

    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        corrupt = 1;
        run(1, &x3, &x9, &u9, &mx);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("corrupted fpstate: %s\n", WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "returned");
    return 0;
}
