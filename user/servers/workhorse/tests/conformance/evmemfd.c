// eventfd and memfd_create: an eventfd's counter (writes add, a read takes
// it all or one with EFD_SEMAPHORE, non-blocking reads and writes at the
// ends, a blocked read woken by a child's write, poll, epoll), and a memfd
// (read, write, mmap, ftruncate, fstat, shared with a child, no name in any
// directory), with the errors of each.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(long r) {
    static char b[32];
    if (r >= 0) {
        snprintf(b, sizeof b, "%ld", r);
        return b;
    }
    switch (errno) {
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    case EBADF: return "EBADF";
    default: return strerror(errno);
    }
}

static long rd(int fd) {
    uint64_t v = 0;
    long n = read(fd, &v, 8);
    return n == 8 ? (long)v : n;
}

static long wr(int fd, uint64_t v) { return write(fd, &v, 8); }

static short ev(int fd) {
    struct pollfd p = {fd, POLLIN | POLLOUT, 0};
    poll(&p, 1, 0);
    return p.revents;
}

int main(void) {
    int e = eventfd(5, EFD_NONBLOCK);
    printf("eventfd: %s\n", e >= 0 ? "ok" : err(e));
    printf("poll: in %d out %d\n", !!(ev(e) & POLLIN), !!(ev(e) & POLLOUT));
    printf("write 3: %s\n", err(wr(e, 3)));
    printf("read: %s\n", err(rd(e)));
    printf("read again: %s\n", err(rd(e)));
    printf("poll: in %d out %d\n", !!(ev(e) & POLLIN), !!(ev(e) & POLLOUT));
    printf("write of 4 bytes: %s\n", err(write(e, "abcd", 4)));
    char small[4];
    printf("read into 4 bytes: %s\n", err(read(e, small, 4)));
    printf("write of all ones: %s\n", err(wr(e, UINT64_MAX)));
    printf("write of the largest: %s\n", err(wr(e, UINT64_MAX - 1)));
    printf("poll at the largest: in %d out %d\n", !!(ev(e) & POLLIN), !!(ev(e) & POLLOUT));
    printf("write 1 more: %s\n", err(wr(e, 1)));
    printf("read: %s\n", rd(e) == (long)(UINT64_MAX - 1) ? "the largest" : "another");
    close(e);

    int sem = eventfd(3, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
    long r1 = rd(sem), r2 = rd(sem), r3 = rd(sem);
    printf("semaphore reads: %ld %ld %ld %s\n", r1, r2, r3, err(rd(sem)));
    printf("cloexec: %d\n", !!(fcntl(sem, F_GETFD) & FD_CLOEXEC));
    close(sem);
    printf("eventfd2 of a bad flag: %s\n", err(eventfd(0, 0x10)));

    // A blocking read waits for a child's write.
    int b = eventfd(0, 0);
    int ep = epoll_create1(0);
    struct epoll_event in = {.events = EPOLLIN, .data.u32 = 7};
    epoll_ctl(ep, EPOLL_CTL_ADD, b, &in);
    struct epoll_event out;
    printf("epoll before: %d\n", epoll_wait(ep, &out, 1, 0));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        usleep(100000);
        wr(b, 42);
        _exit(0);
    }
    printf("blocking read: %ld\n", rd(b));
    waitpid(c, NULL, 0);
    wr(b, 1);
    int n = epoll_wait(ep, &out, 1, 1000);
    printf("epoll after a write: %d data %u\n", n, n > 0 ? out.data.u32 : 0);
    close(ep);
    close(b);

    // memfd: a file in memory.
    int m = memfd_create("conformance", MFD_CLOEXEC);
    printf("memfd_create: %s\n", m >= 0 ? "ok" : err(m));
    printf("cloexec: %d\n", !!(fcntl(m, F_GETFD) & FD_CLOEXEC));
    struct stat st;
    fstat(m, &st);
    printf("regular %d size %ld links %ld\n", S_ISREG(st.st_mode), (long)st.st_size, (long)st.st_nlink);
    printf("write: %s\n", err(write(m, "memory file\n", 12)));
    printf("ftruncate 8192: %s\n", err(ftruncate(m, 8192)));
    char *p = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, m, 0);
    printf("mmap: %s, '%.11s'\n", p == MAP_FAILED ? "failed" : "ok", p);
    fflush(stdout);
    c = fork();
    if (c == 0) {
        memcpy(p + 4096, "from the child", 14);
        _exit(0);
    }
    waitpid(c, NULL, 0);
    char buf[15] = {0};
    pread(m, buf, 14, 4096);
    printf("the child's store read back: '%s'\n", buf);
    fstat(m, &st);
    printf("size %ld\n", (long)st.st_size);
    munmap(p, 8192);
    close(m);
    int m2 = memfd_create("sealing", MFD_ALLOW_SEALING);
    printf("MFD_ALLOW_SEALING: %s\n", m2 >= 0 ? "ok" : err(m2));
    close(m2);
    char longname[300];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    printf("memfd of a 299-byte name: %s\n", err(memfd_create(longname, 0)));
    printf("memfd of a bad flag: %s\n", err(memfd_create("x", 0x100)));
    printf("memfd of a bad name pointer: %s\n", err(syscall(SYS_memfd_create, (void *)8, 0)));
    return 0;
}
