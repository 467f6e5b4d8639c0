// Positioned vector I/O and file-space calls: preadv, pwritev, preadv2 and
// pwritev2 (offsets, the file position left alone or moved, short reads at
// the end, flags), posix_fadvise and fallocate, and the errors of each.
// Prints what is the same on every Linux file system.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *err(long r) {
    static char b[32];
    if (r >= 0) {
        snprintf(b, sizeof b, "%ld", r);
        return b;
    }
    switch (errno) {
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ESPIPE: return "ESPIPE";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EISDIR: return "EISDIR";
    case ENODEV: return "ENODEV";
    default: return strerror(errno);
    }
}

static long size_of(int fd) {
    struct stat st;
    return fstat(fd, &st) ? -1 : (long)st.st_size;
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char path[512];
    snprintf(path, sizeof path, "%s/vecio.file", dir);
    unlink(path);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }

    // pwritev at an offset: both buffers, in order; the position stays.
    struct iovec w[2] = {{"hello, ", 7}, {"vectors\n", 8}};
    printf("pwritev at 10: %s\n", err(pwritev(fd, w, 2, 10)));
    printf("position after pwritev: %ld\n", (long)lseek(fd, 0, SEEK_CUR));
    printf("size: %ld\n", size_of(fd));
    char a[5] = {0}, b[32] = {0};
    struct iovec r[2] = {{a, 4}, {b, sizeof b - 1}};
    printf("preadv at 10: %s\n", err(preadv(fd, r, 2, 10)));
    printf("  first '%s' second '%s'\n", a, b);
    printf("preadv at the end: %s\n", err(preadv(fd, r, 2, 25)));
    printf("preadv past the end: %s\n", err(preadv(fd, r, 2, 4096)));
    // The hole before offset 10 reads as zeros.
    char z[10];
    memset(z, 'x', sizeof z);
    struct iovec zr = {z, sizeof z};
    long n = preadv(fd, &zr, 1, 0);
    int zeros = 0;
    for (int i = 0; i < 10; i++) zeros += z[i] == 0;
    printf("preadv of the hole: %s, %d zeros\n", err(n), zeros);

    // The ...2 forms: offset -1 is the position, which moves.
    lseek(fd, 10, SEEK_SET);
    memset(a, 0, sizeof a);
    struct iovec r1 = {a, 4};
    n = preadv2(fd, &r1, 1, -1, 0);
    printf("preadv2 at -1: %s '%s'\n", err(n), a);
    printf("position after preadv2 at -1: %ld\n", (long)lseek(fd, 0, SEEK_CUR));
    struct iovec w1 = {"HELLO", 5};
    lseek(fd, 0, SEEK_END);
    printf("pwritev2 at -1: %s\n", err(pwritev2(fd, &w1, 1, -1, 0)));
    long pos = lseek(fd, 0, SEEK_CUR);
    printf("position after pwritev2 at -1: %ld, size %ld\n", pos, size_of(fd));
    printf("pwritev2 at 0 with RWF_DSYNC: %s\n", err(pwritev2(fd, &w1, 1, 0, RWF_DSYNC)));
    printf("preadv2 with RWF_HIPRI: %s\n", err(preadv2(fd, &r1, 1, 0, RWF_HIPRI)));
    printf("preadv2 with an unknown flag: %s\n", err(preadv2(fd, &r1, 1, 0, 0x4000)));
    printf("preadv at -2: %s\n", err(preadv(fd, &r1, 1, -2)));
    printf("preadv2 at -2: %s\n", err(preadv2(fd, &r1, 1, -2, 0)));
    printf("preadv of 0 buffers: %s\n", err(preadv(fd, r, 0, 0)));
    static struct iovec many[1025];
    printf("preadv of 1025 buffers: %s\n", err(preadv(fd, many, 1025, 0)));
    printf("preadv of a closed descriptor: %s\n", err(preadv(99, r, 1, 0)));
    int p[2];
    pipe(p);
    write(p[1], "pipe", 4);
    printf("preadv of a pipe at 0: %s\n", err(preadv(p[0], r, 1, 0)));
    printf("pwritev of a pipe at 0: %s\n", err(pwritev(p[1], w, 1, 0)));
    memset(a, 0, sizeof a);
    n = preadv2(p[0], &r1, 1, -1, 0);
    printf("preadv2 of a pipe at -1: %s '%s'\n", err(n), a);

    // posix_fadvise: checked, nothing to do.
    for (int adv = 0; adv <= 5; adv++)
        printf("fadvise %d: %s\n", adv, err(syscall(SYS_fadvise64, fd, 0, 100, adv)));
    printf("fadvise 9: %s\n", err(syscall(SYS_fadvise64, fd, 0, 100, 9)));
    printf("fadvise of a pipe: %s\n", err(syscall(SYS_fadvise64, p[0], 0, 100, 0)));
    printf("fadvise of a closed descriptor: %s\n", err(syscall(SYS_fadvise64, 99, 0, 100, 0)));

    // fallocate: grows the file with zeros; KEEP_SIZE keeps the size.
    ftruncate(fd, 0);
    n = fallocate(fd, 0, 0, 8192);
    printf("fallocate 8192: %s, size %ld\n", err(n), size_of(fd));
    char buf[8192];
    memset(buf, 'x', sizeof buf);
    n = pread(fd, buf, sizeof buf, 0);
    zeros = 0;
    for (int i = 0; i < (int)sizeof buf; i++) zeros += buf[i] == 0;
    printf("  read %ld, %d zeros\n", n, zeros);
    n = fallocate(fd, 0, 100, 100);
    printf("fallocate inside: %s, size %ld\n", err(n), size_of(fd));
    n = fallocate(fd, FALLOC_FL_KEEP_SIZE, 8192, 4096);
    printf("fallocate KEEP_SIZE past the end: %s, size %ld\n", err(n), size_of(fd));
    printf("fallocate of length 0: %s\n", err(fallocate(fd, 0, 0, 0)));
    printf("fallocate at -1: %s\n", err(fallocate(fd, 0, -1, 10)));
    printf("fallocate of a pipe: %s\n", err(fallocate(p[1], 0, 0, 10)));
    int ro = open(path, O_RDONLY);
    printf("fallocate of a read-only descriptor: %s\n", err(fallocate(ro, 0, 0, 10)));
    printf("fallocate of a closed descriptor: %s\n", err(fallocate(99, 0, 0, 10)));
    close(ro);
    close(fd);
    unlink(path);
    return 0;
}
