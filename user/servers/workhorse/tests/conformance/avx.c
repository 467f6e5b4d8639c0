// AVX state, as a program that checks CPUID alone sees it: when CPUID
// says AVX, the extended state is enabled (OSXSAVE, XCR0's SSE and AVX
// bits) and a 256-bit instruction runs; the sixteen ymm registers of a
// parent and a forked child, each filled with its own values, survive
// 200 round trips through a pipe between them (every one a switch).
// The system calls are made from the same asm block that fills and checks
// the registers, so that no library code (whose memcpy may use AVX) runs
// in between.
#include <cpuid.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

static int avx_usable(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d))
        return 0;
    if (!(c & bit_AVX))
        return 0;
    if (!(c & bit_OSXSAVE)) {
        printf("CPUID shows AVX without OSXSAVE\n");
        return 0;
    }
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) != 6) {
        printf("XCR0 %#x lacks SSE or AVX\n", lo);
        return 0;
    }
    return 1;
}

// Fills ymm0-15 with `seed` + register number in every dword, makes
// `rounds` round trips (write one byte to wfd, read one from rfd), and
// returns how many registers no longer hold their values (0-16), or -1
// when a system call failed.
static long ping_with_ymm(uint32_t seed, int wfd, int rfd, int rounds) {
    uint32_t vals[16], out[16 * 8] __attribute__((aligned(32)));
    for (int i = 0; i < 16; i++)
        vals[i] = seed + (uint32_t)i;
    long bad = 0;
    char byte = 'x';
    __asm__ volatile(
        "vbroadcastss 0(%[v]), %%ymm0\n vbroadcastss 4(%[v]), %%ymm1\n"
        "vbroadcastss 8(%[v]), %%ymm2\n vbroadcastss 12(%[v]), %%ymm3\n"
        "vbroadcastss 16(%[v]), %%ymm4\n vbroadcastss 20(%[v]), %%ymm5\n"
        "vbroadcastss 24(%[v]), %%ymm6\n vbroadcastss 28(%[v]), %%ymm7\n"
        "vbroadcastss 32(%[v]), %%ymm8\n vbroadcastss 36(%[v]), %%ymm9\n"
        "vbroadcastss 40(%[v]), %%ymm10\n vbroadcastss 44(%[v]), %%ymm11\n"
        "vbroadcastss 48(%[v]), %%ymm12\n vbroadcastss 52(%[v]), %%ymm13\n"
        "vbroadcastss 56(%[v]), %%ymm14\n vbroadcastss 60(%[v]), %%ymm15\n"
        "1:\n"
        "mov $1, %%eax\n mov %[w], %%edi\n mov %[b], %%rsi\n mov $1, %%edx\n syscall\n"
        "cmp $1, %%rax\n jne 2f\n"
        "mov $0, %%eax\n mov %[r], %%edi\n mov %[b], %%rsi\n mov $1, %%edx\n syscall\n"
        "cmp $1, %%rax\n jne 2f\n"
        "dec %[n]\n jnz 1b\n"
        "vmovdqu %%ymm0, 0(%[o])\n vmovdqu %%ymm1, 32(%[o])\n"
        "vmovdqu %%ymm2, 64(%[o])\n vmovdqu %%ymm3, 96(%[o])\n"
        "vmovdqu %%ymm4, 128(%[o])\n vmovdqu %%ymm5, 160(%[o])\n"
        "vmovdqu %%ymm6, 192(%[o])\n vmovdqu %%ymm7, 224(%[o])\n"
        "vmovdqu %%ymm8, 256(%[o])\n vmovdqu %%ymm9, 288(%[o])\n"
        "vmovdqu %%ymm10, 320(%[o])\n vmovdqu %%ymm11, 352(%[o])\n"
        "vmovdqu %%ymm12, 384(%[o])\n vmovdqu %%ymm13, 416(%[o])\n"
        "vmovdqu %%ymm14, 448(%[o])\n vmovdqu %%ymm15, 480(%[o])\n"
        "jmp 3f\n"
        "2: movq $-1, %[bad]\n"
        "3: vzeroupper\n"
        : [n] "+r"(rounds), [bad] "+m"(bad)
        : [v] "r"(vals), [o] "r"(out), [w] "r"(wfd), [r] "r"(rfd), [b] "r"(&byte)
        : "rax", "rcx", "rdx", "rsi", "rdi", "r11", "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4",
          "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15");
    if (bad)
        return bad;
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++)
            if (out[i * 8 + j] != vals[i]) {
                bad++;
                break;
            }
    return bad;
}

int main(void) {
    int usable = avx_usable();
    printf("avx usable: %s\n", usable ? "yes" : "no");
    if (!usable)
        return 0;
    int to_child[2], to_parent[2];
    if (pipe(to_child) || pipe(to_parent)) {
        perror("pipe");
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        // The child answers each byte; its registers hold other values.
        char b;
        if (read(to_child[0], &b, 1) != 1)
            _exit(2);
        long bad = ping_with_ymm(0x11110000, to_parent[1], to_child[0], 199);
        if (bad == 0 && write(to_parent[1], &b, 1) != 1)
            bad = -1;
        _exit(bad == 0 ? 0 : 3);
    }
    long bad = ping_with_ymm(0x77770000, to_child[1], to_parent[0], 200);
    int status;
    waitpid(pid, &status, 0);
    printf("parent: %ld of 16 ymm registers changed\n", bad);
    printf("child: %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "all 16 ymm registers kept" : "changed or failed");
    return 0;
}
