/* Shared file mappings (MAP_SHARED of a regular file): stores through a
 * mapping seen by read/pread, by a second mapping, by a new open's mapping,
 * by a forked child and its parent (never copy-on-write); write, pwrite and
 * ftruncate seen through the mappings; the end of the file (zeros to the
 * page's end, SIGBUS a whole page past it, EFAULT for a system call there);
 * the stores reaching the file at munmap, exit and exec, after close and
 * unlink; mremap of a shared mapping; msync and its errors; mprotect and
 * mmap refusing write access a descriptor does not have; pipes,
 * directories, sockets.  Usage: shmap DIR (writable; run on Keep for /tmp,
 * in memory, and /data, the store on the disk). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static char path[512], path2[512];

/* The status of a child that touches p (a read, or a write of 1). */
static int touch_status(volatile unsigned char *p, int write)
{
    pid_t c = fork();
    if (c == 0) {
        if (write)
            *p = 1;
        else
            (void)*p;
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    return WIFSIGNALED(st) ? WTERMSIG(st) : 100 + WEXITSTATUS(st);
}

static const char *sig_name(int s)
{
    return s == SIGBUS ? "SIGBUS" : s == SIGSEGV ? "SIGSEGV" : s == 100 ? "none" : "other";
}

static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 31 + 7);
}

/* The file's bytes [off, off+n) equal m[0..n). */
static int file_is(int fd, const unsigned char *m, off_t off, size_t n)
{
    unsigned char buf[4 * PG];
    if (n > sizeof buf || pread(fd, buf, n, off) != (ssize_t)n)
        return 0;
    return memcmp(buf, m, n) == 0;
}

/* The permissions /proc/self/maps shows for the mapping at p. */
static const char *maps_perms(void *p)
{
    static char line[512], perms[8];
    char want[32];
    snprintf(want, sizeof want, "%08lx-", (unsigned long)p);
    FILE *f = fopen("/proc/self/maps", "r");
    strcpy(perms, "none");
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, want, strlen(want)) == 0)
            sscanf(line, "%*s %4s", perms);
    if (f)
        fclose(f);
    return perms;
}

static int err(long r)
{
    return r == -1 ? errno : 0;
}

static int map_err(void *m)
{
    return m == MAP_FAILED ? errno : 0;
}

static void wait_child(pid_t c, const char *what)
{
    int st;
    waitpid(c, &st, 0);
    printf("%s: exit %d\n", what, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--store-and-exec") == 0) {
        /* Second part of the exec case: the new program checks the file. */
        int fd = open(argv[2], O_RDONLY);
        char b[8] = {0};
        pread(fd, b, 7, 3 * PG / 2);
        return strcmp(b, "by-exec") == 0 ? 0 : 1;
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    snprintf(path, sizeof path, "%s/shmap.file", dir);
    snprintf(path2, sizeof path2, "%s/shmap.other", dir);
    unlink(path);
    unlink(path2);

    /* A file of two and a half pages, written with write(). */
    size_t size = 2 * PG + PG / 2;
    unsigned char *data = malloc(size);
    for (size_t i = 0; i < size; i++)
        data[i] = pattern(i);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    printf("file written: %d\n", write(fd, data, size) == (ssize_t)size);

    unsigned char *m = mmap(NULL, 4 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("shared writable mapping: %d\n", m != MAP_FAILED);
    printf("it holds the file: %d; /proc/self/maps: %s\n", memcmp(m, data, size) == 0, maps_perms(m));
    int zeros = 1;
    for (size_t i = size; i < 3 * PG; i++)
        zeros &= m[i] == 0;
    printf("past the end of the file to the page's end: zeros %d\n", zeros);

    /* Stores through the mapping: read and pread see them. */
    memcpy(m + 100, "through the mapping", 19);
    m[PG + 50] = 'Z';
    printf("pread sees a store: %d %d\n", file_is(fd, (const unsigned char *)"through the mapping", 100, 19),
           file_is(fd, (const unsigned char *)"Z", PG + 50, 1));
    char rb[32] = {0};
    lseek(fd, 100, SEEK_SET);
    printf("read sees it: %d\n", read(fd, rb, 19) == 19 && memcmp(rb, "through the mapping", 19) == 0);

    /* pwrite and write: the mapping sees them. */
    pwrite(fd, "by pwrite", 9, 2 * PG + 10);
    printf("a mapping sees pwrite: %d\n", memcmp(m + 2 * PG + 10, "by pwrite", 9) == 0);
    lseek(fd, PG - 3, SEEK_SET);
    write(fd, "across pages", 12);
    printf("a mapping sees write across two pages: %d\n", memcmp(m + PG - 3, "across pages", 12) == 0);

    /* A second mapping of the same file (at an offset) and another open's. */
    unsigned char *m2 = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
    printf("second mapping at an offset shows the first's stores: %d\n", m2[50] == 'Z' && memcmp(m2, "oss pages", 9) == 0);
    m2[6] = 'Y';
    printf("and the first shows the second's: %d\n", m[PG + 6] == 'Y');
    int fd2 = open(path, O_RDWR);
    unsigned char *m3 = mmap(NULL, 3 * PG, PROT_READ, MAP_SHARED, fd2, 0);
    printf("a new open's read-only mapping shows them: %d\n", m3[PG + 6] == 'Y' && memcmp(m3 + 100, "through", 7) == 0);
    m[7] = 'Q';
    printf("and later stores too: %d\n", m3[7] == 'Q');

    /* The file's size does not change by a store past its end. */
    m[size + 10] = 'E';
    struct stat st;
    fstat(fd, &st);
    printf("a store past the end of the file: size %ld\n", (long)st.st_size);

    /* A whole page past the end: SIGBUS; a system call there: EFAULT. */
    printf("a read of the page past the end: %s\n", sig_name(touch_status(m + 3 * PG, 0)));
    printf("a write there: %s\n", sig_name(touch_status(m + 3 * PG, 1)));
    int pfd[2];
    pipe(pfd);
    errno = 0;
    printf("write() from that page: %d\n", err(write(pfd[1], m + 3 * PG, 10)));

    /* fork: the child's stores are the parent's and the other way round,
     * also on pages the parent touched before. */
    int back[2];
    pipe(back);
    pid_t c = fork();
    if (c == 0) {
        m[200] = 'c';
        m[2 * PG + 100] = 'C';
        write(back[1], "1", 1);
        char b;
        read(pfd[0], &b, 1);
        _exit(m[201] == 'p' && m2[10] == 'P' ? 0 : 1);
    }
    char b;
    read(back[0], &b, 1);
    printf("after fork the parent sees the child's stores: %d %d\n", m[200] == 'c', m[2 * PG + 100] == 'C');
    printf("and the file: %d\n", file_is(fd, (const unsigned char *)"c", 200, 1));
    m[201] = 'p';
    m[PG + 10] = 'P';
    write(pfd[1], "1", 1);
    wait_child(c, "the child sees the parent's stores after fork");

    /* ftruncate shorter: the tail of the last page reads zeros, a page
     * past the new end is SIGBUS; longer again: zeros, not the old bytes. */
    ftruncate(fd, PG + 100);
    printf("after ftruncate to a page and 100: the tail reads zeros %d, the bytes before stay %d\n",
           m[PG + 100] == 0 && m[PG + 200] == 0 && m3[PG + 100] == 0, m[PG + 99] == pattern(PG + 99));
    printf("the next page: %s\n", sig_name(touch_status(m + 2 * PG, 0)));
    ftruncate(fd, 3 * PG);
    printf("grown again: zeros %d %d\n", m[2 * PG + 100] == 0 && m[2 * PG + 10] == 0, m3[PG + 200] == 0);
    m[2 * PG + 1] = 'G';
    printf("a store in the grown part reaches the file: %d\n", file_is(fd, (const unsigned char *)"G", 2 * PG + 1, 1));
    pwrite(fd, "grown by write", 14, 3 * PG + 20);
    printf("grown by write past the mapping's page: mapping shows %d\n", memcmp(m + 3 * PG + 20, "grown by write", 14) == 0);

    /* msync and its errors. */
    printf("msync MS_SYNC %d, MS_ASYNC %d, MS_INVALIDATE %d, none %d, length 0 %d\n", err(msync(m, 4 * PG, MS_SYNC)),
           err(msync(m, PG, MS_ASYNC)), err(msync(m, PG, MS_INVALIDATE)), err(msync(m, PG, 0)), err(msync(m, 0, MS_SYNC)));
    unsigned char *holed = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    munmap(holed + PG, PG);
    errno = 0;
    printf("msync errors: unknown flag %d, MS_SYNC|MS_ASYNC %d, unaligned %d, unmapped %d, partly unmapped %d\n",
           err(msync(m, PG, 8)), err(msync(m, PG, MS_SYNC | MS_ASYNC)), err(msync(m + 1, PG, MS_SYNC)),
           err(msync((void *)0x10000, PG, MS_SYNC)), err(msync(holed, 3 * PG, MS_SYNC)));

    /* mremap: the moved mapping is the file's still. */
    unsigned char *to = mmap(NULL, 8 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *moved = mremap(m, 4 * PG, 8 * PG, MREMAP_MAYMOVE | MREMAP_FIXED, to);
    printf("mremap moves it: %d\n", moved == to);
    printf("the moved mapping holds the file: %d; stores reach it: ", moved[200] == 'c' && moved[2 * PG + 1] == 'G');
    moved[300] = 'M';
    printf("%d\n", file_is(fd, (const unsigned char *)"M", 300, 1) && m3[300] == 'M');
    printf("the old place is gone: %s\n", sig_name(touch_status(m, 0)));
    printf("the grown part past the end: %s\n", sig_name(touch_status(moved + 5 * PG, 0)));
    unsigned char *shrunk = mremap(moved, 8 * PG, 2 * PG, 0);
    printf("mremap shrinks it: %d, still the file's: %d\n", shrunk == moved, shrunk[300] == 'M');
    m = shrunk;

    /* munmap, exit and exec: the stores are the file's. */
    unsigned char *u = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, PG);
    memcpy(u + 50, "before munmap", 13);
    munmap(u, PG);
    printf("after munmap the file holds the stores: %d\n", file_is(fd, (const unsigned char *)"before munmap", PG + 50, 13));
    c = fork();
    if (c == 0) {
        unsigned char *x = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        memcpy(x + 400, "by a child that exits", 21);
        _exit(0);
    }
    wait_child(c, "a child maps the file, stores and exits");
    printf("the file holds its stores: %d\n", file_is(fd, (const unsigned char *)"by a child that exits", 400, 21));
    c = fork();
    if (c == 0) {
        int f = open(path, O_RDWR);
        unsigned char *x = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
        memcpy(x + 3 * PG / 2, "by-exec", 7);
        execl("/proc/self/exe", "shmap", "--store-and-exec", path, (char *)NULL);
        _exit(9);
    }
    wait_child(c, "a child stores and execs a program that reads the file (0: it read the stores)");

    /* After close and unlink the mapping goes on. */
    int fd3 = open(path2, O_RDWR | O_CREAT | O_TRUNC, 0644);
    ftruncate(fd3, 2 * PG);
    unsigned char *k = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED, fd3, 0);
    close(fd3);
    memcpy(k + PG, "closed", 6);
    fd3 = open(path2, O_RDONLY);
    printf("a mapping outlives its descriptor: %d\n", file_is(fd3, (const unsigned char *)"closed", PG, 6));
    unlink(path2);
    memcpy(k + PG, "unlinked", 8);
    printf("and its name: %d\n", file_is(fd3, (const unsigned char *)"unlinked", PG, 8));
    close(fd3);
    munmap(k, 2 * PG);

    /* Access modes: a read-only descriptor gives no writable shared
     * mapping, now or by mprotect; a private one may write. */
    int ro = open(path, O_RDONLY);
    errno = 0;
    printf("MAP_SHARED PROT_WRITE of an O_RDONLY descriptor: %d\n",
           map_err(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0)));
    unsigned char *r = mmap(NULL, PG, PROT_READ, MAP_SHARED, ro, 0);
    printf("read-only: %d, it shows the stores: %d\n", r != MAP_FAILED, r[400] == 'b');
    errno = 0;
    printf("mprotect to write: %d, a write is %s\n", err(mprotect(r, PG, PROT_READ | PROT_WRITE)), sig_name(touch_status(r, 1)));
    unsigned char *pr = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, ro, 0);
    printf("a private mapping of it may: %d", err(mprotect(pr, PG, PROT_READ | PROT_WRITE)));
    pr[400] = 'X';
    printf(", its store stays its own: %d\n", r[400] == 'b' && file_is(ro, (const unsigned char *)"b", 400, 1));
    unsigned char *rw = mmap(NULL, PG, PROT_READ, MAP_SHARED, fd, 0);
    printf("a read-only shared mapping of an O_RDWR descriptor made writable: %d", err(mprotect(rw, PG, PROT_READ | PROT_WRITE)));
    rw[401] = 'W';
    printf(", the store reaches the file: %d\n", file_is(ro, (const unsigned char *)"W", 401, 1));
    int wo = open(path, O_WRONLY);
    errno = 0;
    printf("MAP_SHARED of an O_WRONLY descriptor: %d\n", map_err(mmap(NULL, PG, PROT_WRITE, MAP_SHARED, wo, 0)));
    errno = 0;
    printf("of a pipe's read end: %d, write end: %d\n", map_err(mmap(NULL, PG, PROT_READ, MAP_SHARED, pfd[0], 0)),
           map_err(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, pfd[1], 0)));
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    errno = 0;
    printf("of a directory: %d, writable: %d\n", map_err(mmap(NULL, PG, PROT_READ, MAP_SHARED, dfd, 0)),
           map_err(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, dfd, 0)));
    int sv[2];
    socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
    errno = 0;
    printf("of a socket: %d\n", map_err(mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, sv[0], 0)));

    /* Last: the whole file as read() sees it, against what was stored. */
    unsigned char all[3 * PG];
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, all, sizeof all);
    unsigned long sum = 0;
    for (ssize_t i = 0; i < n; i++)
        sum = sum * 131 + all[i];
    fstat(fd, &st);
    printf("the file at the end: %ld bytes, checksum %lu, the mapping agrees: %d\n", (long)st.st_size, sum,
           memcmp(all, m, 2 * PG) == 0);
    unlink(path);
    return 0;
}
