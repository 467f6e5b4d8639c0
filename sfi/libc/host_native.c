/* Native host layer of the mini libc: Linux system calls, so that the same
   program can be run outside a fault domain for comparison. */
#include <sfi_host.h>

static long sys(long n, long a, long b, long c, long d, long e, long f) {
    long r;
    register long r10 __asm__("r10") = d, r8 __asm__("r8") = e, r9 __asm__("r9") = f;
    __asm__ volatile("syscall" : "=a"(r) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return r;
}
long sfi_host_write(long fd, const void *buf, long n) { return sys(1, fd, (long)buf, n, 0, 0, 0); }
long sfi_host_read(long fd, void *buf, long n) { return sys(0, fd, (long)buf, n, 0, 0, 0); }
long sfi_host_open(const char *path, long flags) { (void)flags; return sys(2, (long)path, 0 /* O_RDONLY */, 0, 0, 0, 0); }
long sfi_host_close(long fd) { return sys(3, fd, 0, 0, 0, 0, 0); }
long sfi_host_lseek(long fd, long off, long whence) { return sys(8, fd, off, whence, 0, 0, 0); }
static unsigned long heap;
#define HEAP_SIZE (1ul << 30)
unsigned long sfi_host_heap(long which) {
    if (!heap) heap = sys(9, 0, HEAP_SIZE, 3 /* RW */, 0x22 | 0x4000 /* PRIVATE|ANON|NORESERVE */, -1, 0);
    return which ? heap + HEAP_SIZE : heap;
}
unsigned long sfi_host_clock(void) {
    struct { long s, ns; } ts;
    sys(228, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0, 0, 0, 0);
    return ts.s * 1000000000ul + ts.ns;
}
_Noreturn void sfi_host_exit(long code) { for (;;) sys(231, code, 0, 0, 0, 0, 0); }

int __sfi_start(int argc, char **argv);
__asm__(".text\n.globl _start\n_start:\n xor %ebp, %ebp\n mov (%rsp), %rdi\n lea 8(%rsp), %rsi\n and $-16, %rsp\n call __sfi_start\n ud2\n");
