/* The workhorse's figures (not a conformance test: its numbers differ
 * everywhere).  Under QEMU's -icount shift=0 the TSC advances by one per
 * instruction while the guest computes, so rdtsc differences are
 * instruction counts (docs/performance.md); these operations never wait
 * for a device.  tools/workhorse_bench.py runs it for `make bench`.  As
 * Keep's suite and tools/linuxbench do: one warm-up batch, then 21 batches,
 * the empty loop's cost subtracted; prints
 *   bench: NAME median=.. min=.. max=.. unit=instructions runs=21
 * for getppid through the server, a one-byte pipe round trip between two
 * processes, and fork+execve+wait4 of busybox true.
 *
 * `sysbench marked` also runs one more batch of each between the icount
 * plugin's markers and prints `bench-mark: NAME per=N` after it, for the
 * per-instruction profile of tools/whprof.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

#define RUNS 21
typedef unsigned long long u64;

static inline u64 tsc(void)
{
    _mm_lfence();
    return __rdtsc();
}

static int cmp(const void *a, const void *b)
{
    u64 x = *(const u64 *)a, y = *(const u64 *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *name, u64 *v)
{
    qsort(v, RUNS, sizeof *v, cmp);
    printf("bench: %s median=%llu min=%llu max=%llu unit=instructions runs=%d\n", name, v[RUNS / 2], v[0],
           v[RUNS - 1], RUNS);
    fflush(stdout);
}

static void __attribute__((noinline)) empty(void)
{
    __asm__ volatile("" ::: "memory");
}

static void __attribute__((noinline)) getppid_op(void)
{
    syscall(SYS_getppid);
}

static int a[2], b[2];

static void __attribute__((noinline)) pipe_op(void)
{
    char x = 0;
    if (write(a[1], &x, 1) != 1 || read(b[0], &x, 1) != 1)
        abort();
}

static void __attribute__((noinline)) fork_exec_op(void)
{
    pid_t c = fork();
    if (c == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    int st;
    if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        abort();
}

static u64 batch(void (*op)(void), long n)
{
    u64 t0 = tsc();
    for (long i = 0; i < n; i++)
        op();
    return tsc() - t0;
}

static int marked;

/* One warm-up batch, then RUNS batches of n, less the empty loop's median;
 * marked: one more batch between the plugin's markers. */
static void measure(const char *name, void (*op)(void), long n)
{
    u64 v[RUNS];
    batch(empty, n);
    for (int i = 0; i < RUNS; i++)
        v[i] = batch(empty, n);
    qsort(v, RUNS, sizeof *v, cmp);
    u64 loop = v[RUNS / 2];
    batch(op, n);
    for (int i = 0; i < RUNS; i++) {
        u64 t = batch(op, n);
        v[i] = (t > loop ? t - loop : 0) / n;
    }
    report(name, v);
    if (marked) {
        __asm__ volatile("nopl 0x4b455001(%%rax)" ::: "memory");
        batch(op, n);
        __asm__ volatile("nopl 0x4b455002(%%rax)" ::: "memory");
        printf("bench-mark: %s per=%ld\n", name, n);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    marked = argc > 1 && strcmp(argv[1], "marked") == 0;
    measure("wh.syscall.getppid", getppid_op, 1000);
    if (pipe(a) || pipe(b))
        return 1;
    pid_t c = fork();
    if (c == 0) {
        char x;
        close(a[1]);
        close(b[0]);
        while (read(a[0], &x, 1) == 1)
            write(b[1], &x, 1);
        _exit(0);
    }
    close(a[0]);
    close(b[1]);
    measure("wh.pipe.roundtrip", pipe_op, 200);
    close(a[1]);
    waitpid(c, NULL, 0);
    measure("wh.proc.fork_exec_wait", fork_exec_op, 4);
    return 0;
}
