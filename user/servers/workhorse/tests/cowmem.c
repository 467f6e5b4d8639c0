/* Copy-on-write fork's frames (run on Keep only: it counts the workhorse's
 * free frames through sysinfo, which on the host every other program
 * changes; tools/test_linux.py checks the figures it prints):
 *   - a fork of a process with a 64 MiB heap takes almost nothing (the
 *     child reads the free frames first thing);
 *   - a child writing a quarter of that heap takes a copy of that quarter;
 *   - 20 rounds of fork (children writing part of the heap, forking a
 *     grandchild, mapping and unmapping, the parent writing while they
 *     hold the pages) and exit give every frame back: the free count after
 *     them is the count before. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define HEAP (64L << 20)

static long free_frames(void)
{
    struct sysinfo si;
    if (sysinfo(&si))
        return -1;
    return (long)(si.freeram * si.mem_unit / PAGE);
}

static void child_write(char *heap, long from, long to, char c)
{
    for (long i = from; i < to; i += PAGE)
        heap[i] = c;
}

/* One round: a child writes every 8th page, forks a grandchild that
 * writes others, maps and unmaps, and ends; the parent writes meanwhile. */
static int round_trip(char *heap, int r)
{
    int p[2];
    if (pipe(p))
        return 0;
    pid_t c = fork();
    if (c == 0) {
        close(p[0]);
        for (long i = 0; i < HEAP; i += 8 * PAGE)
            heap[i] = (char)r;
        pid_t g = fork();
        if (g == 0) {
            child_write(heap, 0, HEAP / 16, 'g');
            _exit(0);
        }
        char *m = mmap(NULL, 16 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        memset(m, 1, 16 * PAGE);
        munmap(m, 16 * PAGE);
        waitpid(g, NULL, 0);
        if (write(p[1], "x", 1) != 1)
            _exit(2);
        _exit(heap[HEAP / 2] == (char)r ? 0 : 1);
    }
    close(p[1]);
    char b;
    int ok = read(p[0], &b, 1) == 1;
    /* The child holds the pages still: these are copies. */
    child_write(heap, HEAP - HEAP / 32, HEAP, 'p');
    close(p[0]);
    int st;
    return ok && waitpid(c, &st, 0) == c && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    char *heap = malloc(HEAP);
    if (!heap) {
        printf("no heap\n");
        return 1;
    }
    memset(heap, 'h', HEAP);
    int p[2];
    if (pipe(p))
        return 1;
    long before = free_frames();
    pid_t c = fork();
    if (c == 0) {
        long at_start = free_frames();
        child_write(heap, 0, HEAP / 4, 'c');
        long after_writes = free_frames();
        long w[2] = {at_start, after_writes};
        if (write(p[1], w, sizeof w) != sizeof w)
            _exit(2);
        _exit(0);
    }
    long w[2] = {0, 0};
    if (read(p[0], w, sizeof w) != sizeof w)
        return 1;
    waitpid(c, NULL, 0);
    printf("heap %ld frames; the fork took %ld frames; the child's writes to a quarter of it took %ld\n",
           HEAP / PAGE, before - w[0], w[0] - w[1]);
    /* The first rounds grow the server's own records; then they must be
     * stable. */
    int ok = round_trip(heap, 0) && round_trip(heap, 1);
    long f0 = free_frames();
    for (int r = 2; r < 22; r++)
        ok = ok && round_trip(heap, r);
    long f1 = free_frames();
    printf("20 rounds %s; free frames before them %ld, after them %ld\n", ok ? "ended well" : "FAILED", f0, f1);
    return ok ? 0 : 1;
}
