/* File mappings, as ld.so and programs use them: mmap of the program's own
 * file (in the root file system's archive on Keep) private and shared
 * read-only, compared with pread64; past the end of the file; private
 * writes that the file and other mappings do not see; MAP_FIXED over a
 * reservation; munmap of a middle page (a child touching it is killed by
 * SIGSEGV); mprotect of a file page to writable; mremap growing and moving
 * with the contents; fork copying a written private mapping; a written
 * file mapped; and the errors.  Usage: mmapfile DIR (writable). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static int same_as_file(int fd, const unsigned char *m, off_t off, size_t n)
{
    unsigned char buf[PG];
    if (n > sizeof buf || pread(fd, buf, n, off) != (ssize_t)n)
        return 0;
    return memcmp(buf, m, n) == 0;
}

static int segv_on(volatile unsigned char *p, int write)
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
    return WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
}

static int segv_on_touch(volatile unsigned char *p)
{
    return segv_on(p, 0);
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    struct stat st;
    printf("open and fstat: %d %d\n", fd >= 0, fstat(fd, &st) == 0 && st.st_size > 3 * PG);
    size_t size = st.st_size, len = (size + PG - 1) & ~(size_t)(PG - 1);

    unsigned char *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("private read-only mapping: %d, ELF magic: %d\n", m != MAP_FAILED, memcmp(m, "\177ELF", 4) == 0);
    int match = 1;
    for (size_t off = 0; off + 256 <= size; off += 3 * PG + 100)
        match &= same_as_file(fd, m + off, off, 256);
    printf("mapping matches pread64: %d\n", match && same_as_file(fd, m + size - 100, size - 100, 100));
    int zero = 1;
    for (size_t i = size; i < len; i++)
        zero &= m[i] == 0;
    printf("past the end of the file, zeros: %d\n", zero);
    unsigned char *s = mmap(NULL, 2 * PG, PROT_READ, MAP_SHARED, fd, PG);
    printf("shared read-only mapping at an offset: %d\n", s != MAP_FAILED && memcmp(s, m + PG, 2 * PG) == 0);

    unsigned char *w = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    w[0] = 'X';
    w[PG + 5] ^= 0xff;
    printf("private write: %d, file unchanged: %d, other mapping unchanged: %d\n", w[0] == 'X',
           same_as_file(fd, (const unsigned char *)"\177ELF", 0, 4), m[0] == 0x7f && m[PG + 5] != w[PG + 5]);

    /* ld.so's way: reserve, then map pieces of the file over it. */
    unsigned char *r = mmap(NULL, 4 * PG, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    unsigned char *f = mmap(r + PG, 2 * PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 2 * PG);
    printf("MAP_FIXED over a reservation: %d, contents: %d\n", f == r + PG, memcmp(f, m + 2 * PG, 2 * PG) == 0);
    printf("around it still reserved: %d\n", segv_on_touch(r) && segv_on_touch(r + 3 * PG));
    printf("mprotect of the reservation's last page: %d\n", mprotect(r + 3 * PG, PG, PROT_READ | PROT_WRITE));
    r[3 * PG] = 1;
    printf("anonymous page after it: %d %d\n", r[3 * PG], r[3 * PG + 1]);

    unsigned char *t = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
    printf("munmap of the middle page: %d\n", munmap(t + PG, PG));
    printf("first and last pages stay: %d, middle gone: %d\n",
           memcmp(t, m, PG) == 0 && memcmp(t + 2 * PG, m + 2 * PG, PG) == 0, segv_on_touch(t + PG));

    unsigned char *p = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, PG);
    printf("mprotect file page writable: %d\n", mprotect(p, PG, PROT_READ | PROT_WRITE));
    p[0] ^= 0x55;
    printf("written: %d, file and shared mapping unchanged: %d\n", p[0] == (m[PG] ^ 0x55),
           same_as_file(fd, m + PG, PG, 16) && s[0] == m[PG]);
    printf("mprotect back to read-only: %d, a write is SIGSEGV: %d, still holds it: %d\n", mprotect(p, PG, PROT_READ),
           segv_on(p, 1), p[0] == (m[PG] ^ 0x55));

    unsigned char *g = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < 2 * PG; i++)
        g[i] = (unsigned char)(i * 7);
    /* Another mapping right after it, so that growing must move it. */
    unsigned char *block = mmap(g + 2 * PG, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    unsigned char *g2 = mremap(g, 2 * PG, 64 * PG, MREMAP_MAYMOVE);
    int kept = g2 != MAP_FAILED;
    for (int i = 0; kept && i < 2 * PG; i++)
        kept &= g2[i] == (unsigned char)(i * 7);
    printf("mremap grows (moved: %d), contents kept: %d, new part zero: %d\n", block == g + 2 * PG && g2 != g,
           kept, g2[63 * PG] == 0);
    g2[63 * PG] = 9;
    unsigned char *g3 = mremap(g2, 64 * PG, PG, 0);
    printf("mremap shrinks in place: %d, kept: %d, cut part gone: %d\n", g3 == g2, g3[PG - 1] == (unsigned char)((PG - 1) * 7),
           segv_on_touch(g2 + PG));
    printf("mremap without MAYMOVE cannot grow into a mapping: %d\n",
           mremap(f, 2 * PG, 3 * PG, 0) == MAP_FAILED && errno == ENOMEM);

    pid_t c = fork();
    if (c == 0) {
        w[1] = 'Y';
        _exit(w[0] == 'X' ? 3 : 4);
    }
    int status;
    waitpid(c, &status, 0);
    printf("fork copies a private mapping: child saw %d, parent unchanged: %d\n", WEXITSTATUS(status), w[1] != 'Y');

    char path[512];
    snprintf(path, sizeof path, "%s/mmapfile.data", dir);
    int wf = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(wf, "written data", 12);
    unsigned char *d = mmap(NULL, PG, PROT_READ, MAP_PRIVATE, wf, 0);
    printf("a written file mapped: %d, zeros after: %d\n", memcmp(d, "written data", 12) == 0, d[12] == 0 && d[PG - 1] == 0);

    int pfd[2];
    pipe(pfd);
    errno = 0;
    printf("mmap of a pipe: %d\n", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, pfd[0], 0) == MAP_FAILED ? errno : 0);
    errno = 0;
    printf("neither private nor shared: %d\n", mmap(NULL, PG, PROT_READ, MAP_ANONYMOUS, -1, 0) == MAP_FAILED ? errno : 0);
    int wo = open(path, O_WRONLY);
    errno = 0;
    printf("write-only descriptor: %d\n", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, wo, 0) == MAP_FAILED ? errno : 0);
    errno = 0;
    printf("unaligned offset: %d\n", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, fd, 100) == MAP_FAILED ? errno : 0);
    errno = 0;
    printf("bad descriptor: %d\n", mmap(NULL, PG, PROT_READ, MAP_PRIVATE, 999, 0) == MAP_FAILED ? errno : 0);
    errno = 0;
    printf("MAP_FIXED_NOREPLACE over a mapping: %d\n",
           mmap(m, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED ? errno : 0);
    errno = 0;
    printf("mremap of nothing: %d\n", mremap((void *)0x10000, PG, 2 * PG, MREMAP_MAYMOVE) == MAP_FAILED ? errno : 0);
    unlink(path);
    return 0;
}
