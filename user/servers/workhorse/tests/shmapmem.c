/* Shared file mappings' frames, and a /data file's stores surviving the
 * workhorse (run on Keep only: it counts the workhorse's free frames
 * through sysinfo, which on the host every other program changes;
 * tools/test_linux.py checks what it prints).
 *
 *   shmapmem DIR: a file of 256 pages in DIR is mapped shared and every
 *     page written, by the process and a forked child, with a second
 *     mapping beside; 10 rounds.  It prints the frames the mapping took
 *     (an in-memory file's pages are its frames already: none; a /data
 *     file's page cache: one a page), the free frames before the rounds
 *     and after them (every frame back once the last mapping went), and,
 *     for a file that is unlinked, before the file was made and after.
 *   shmapmem --persist FILE: maps FILE shared, writes a pattern into its
 *     first page and msyncs it (MS_SYNC), writes another into its second
 *     page without, prints "started" and sleeps: test_linux kills the
 *     workhorse meanwhile.
 *   shmapmem --check FILE: whether FILE's first page holds the pattern. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096
#define PAGES 256

static long free_frames(void)
{
    struct sysinfo si;
    if (sysinfo(&si))
        return -1;
    return (long)(si.freeram * si.mem_unit / PG);
}

static unsigned char persist_byte(int i)
{
    return (unsigned char)(i * 13 + 5);
}

static int persist(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, 2 * PG))
        return 1;
    unsigned char *m = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED)
        return 2;
    for (int i = 0; i < PG; i++)
        m[i] = persist_byte(i);
    if (msync(m, PG, MS_SYNC))
        return 3;
    memset(m + PG, 'u', PG);
    printf("started\n");
    fflush(stdout);
    sleep(60);
    printf("not reached\n");
    return 0;
}

static int check(const char *path)
{
    unsigned char b[PG];
    int fd = open(path, O_RDONLY);
    int ok = fd >= 0 && pread(fd, b, PG, 0) == PG;
    for (int i = 0; ok && i < PG; i++)
        ok = b[i] == persist_byte(i);
    printf("the page written through a shared mapping and msynced is in the file: %d\n", ok);
    return 0;
}

/* One round: the file mapped twice, every page written by the process
 * and by a child, unmapped; returns the frames the first mapping took. */
static long round_trip(int fd, int r)
{
    long before = free_frames();
    unsigned char *m = mmap(NULL, PAGES * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    unsigned char *m2 = mmap(NULL, PAGES * PG / 2, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PAGES * PG / 2);
    if (m == MAP_FAILED || m2 == MAP_FAILED)
        return -1 << 20;
    for (int i = 0; i < PAGES; i++)
        m[i * PG] = (unsigned char)r;
    long took = before - free_frames();
    pid_t c = fork();
    if (c == 0) {
        for (int i = 0; i < PAGES; i++)
            m[i * PG + 1] = (unsigned char)r;
        m2[5] = (unsigned char)r;
        _exit(0);
    }
    waitpid(c, NULL, 0);
    munmap(m, PAGES * PG);
    munmap(m2, PAGES * PG / 2);
    return took;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--persist") == 0)
        return persist(argv[2]);
    if (argc > 2 && strcmp(argv[1], "--check") == 0)
        return check(argv[2]);
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/shmapmem.file", dir);
    long start = free_frames();
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    char *page = calloc(1, PG);
    for (int i = 0; i < PAGES; i++)
        write(fd, page, PG);
    long before = free_frames(), took = 0;
    for (int r = 1; r <= 10; r++)
        took = round_trip(fd, r);
    long after = free_frames();
    unsigned char b[2];
    int ok = 1;
    for (int i = 0; i < PAGES; i++)
        ok &= pread(fd, b, 2, (off_t)i * PG) == 2 && b[0] == 10 && b[1] == 10;
    close(fd);
    unlink(path);
    long end = free_frames();
    printf("%s: the mapping took %ld frames; free frames before the rounds %ld, after them %ld; "
           "before the file %ld, after its unlink %ld; contents %d\n",
           dir, took, before, after, start, end, ok);
    return 0;
}
