/* The workhorse's figures (not a conformance test: its numbers differ
 * everywhere).  Under QEMU's -icount shift=0 the TSC advances by one per
 * instruction, so rdtsc differences are instruction counts
 * (docs/performance.md); tools/workhorse_bench.py runs it so.  Prints
 * "NAME instructions" lines: getppid through the server, a one-byte pipe
 * round trip between two processes, and fork+execve+wait4 of busybox true. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <x86intrin.h>

static void report(const char *name, unsigned long long t0, unsigned long long t1, long n)
{
    printf("%s %llu\n", name, (t1 - t0) / n);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 2000;
    for (int i = 0; i < 100; i++)
        syscall(SYS_getppid);
    unsigned long long t0 = __rdtsc();
    for (long i = 0; i < n; i++)
        syscall(SYS_getppid);
    report("wh.syscall.getppid", t0, __rdtsc(), n);

    int a[2], b[2];
    pipe(a);
    pipe(b);
    pid_t c = fork();
    char x = 0;
    if (c == 0) {
        close(a[1]);
        close(b[0]);
        while (read(a[0], &x, 1) == 1)
            write(b[1], &x, 1);
        _exit(0);
    }
    long m = n / 4;
    for (int i = 0; i < 10; i++) {
        write(a[1], &x, 1);
        read(b[0], &x, 1);
    }
    t0 = __rdtsc();
    for (long i = 0; i < m; i++) {
        write(a[1], &x, 1);
        read(b[0], &x, 1);
    }
    report("wh.pipe.roundtrip", t0, __rdtsc(), m);
    close(a[1]);
    waitpid(c, NULL, 0);

    long k = 20;
    t0 = __rdtsc();
    for (long i = 0; i < k; i++) {
        c = fork();
        if (c == 0) {
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        waitpid(c, NULL, 0);
    }
    report("wh.proc.fork_exec_wait", t0, __rdtsc(), k);
    return 0;
}
