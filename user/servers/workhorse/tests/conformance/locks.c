// Advisory locks between processes: fcntl record locks (F_SETLK,
// F_SETLKW, F_GETLK; open-file-description locks F_OFD_*), lockf and
// flock, their conflicts, splitting and merging, and their release at
// close and exit.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

static char path[512];

static const char *err(int r) {
    if (r >= 0) return "ok";
    switch (errno) {
    case EAGAIN: return "EAGAIN";
    case EACCES: return "EACCES";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case EDEADLK: return "EDEADLK";
    case EINTR: return "EINTR";
    case ENOSYS: return "ENOSYS";
    default: return strerror(errno);
    }
}

static int setlk(int fd, int cmd, int type, off_t start, off_t len) {
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET, .l_start = start, .l_len = len};
    return fcntl(fd, cmd, &fl);
}

// F_GETLK of [start, start+len) as a write lock: what is in the way.
static void getlk(const char *who, int fd, int cmd, off_t start, off_t len, pid_t owner) {
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = start, .l_len = len, .l_pid = cmd == F_OFD_GETLK ? 0 : 12345};
    int r = fcntl(fd, cmd, &fl);
    if (r < 0) {
        printf("%s: getlk %lld+%lld: %s\n", who, (long long)start, (long long)len, err(r));
        return;
    }
    if (fl.l_type == F_UNLCK)
        printf("%s: getlk %lld+%lld: unlocked\n", who, (long long)start, (long long)len);
    else
        printf("%s: getlk %lld+%lld: %s %lld+%lld, owner %s\n", who, (long long)start, (long long)len,
               fl.l_type == F_WRLCK ? "write" : "read", (long long)fl.l_start, (long long)fl.l_len,
               fl.l_pid == owner ? "right" : fl.l_pid == -1 ? "-1" : "wrong");
}

// Runs `f` in a child with a fresh descriptor of the file; the parent
// waits for it (so that the output is in order).
static void child(void (*f)(int fd, pid_t parent)) {
    pid_t parent = getpid();
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        int fd = open(path, O_RDWR);
        f(fd, parent);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
}

static void c_conflicts(int fd, pid_t parent) {
    getlk("child", fd, F_GETLK, 0, 10, parent);
    getlk("child", fd, F_GETLK, 5, 100, parent);
    getlk("child", fd, F_GETLK, 10, 10, parent);
    getlk("child", fd, F_GETLK, 20, 0, parent);
    printf("child: write lock 0+10: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 10)));
    printf("child: read lock 0+10: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 0, 10)));
    printf("child: write lock 10+10: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 10, 10)));
    printf("child: read lock 20+5: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 20, 5)));
    printf("child: write lock 22+1: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 22, 1)));
    printf("child: unlock a range it does not hold: %s\n", err(setlk(fd, F_SETLK, F_UNLCK, 0, 100)));
}

static void c_split(int fd, pid_t parent) {
    getlk("child", fd, F_GETLK, 0, 0, parent);
    getlk("child", fd, F_GETLK, 40, 20, parent);
    getlk("child", fd, F_GETLK, 55, 10, parent);
    getlk("child", fd, F_GETLK, 150, 10, parent);
    printf("child: write lock 40+20: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 40, 20)));
}

static void c_free(int fd, pid_t parent) {
    getlk("child", fd, F_GETLK, 0, 0, parent);
    printf("child: write lock of the whole file: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 0)));
}

static void c_readers(int fd, pid_t parent) {
    (void)parent;
    printf("child: read lock 0+0: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 0, 0)));
    printf("child: write lock 0+0: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 0)));
}

static void c_lockf(int fd, pid_t parent) {
    (void)parent;
    lseek(fd, 0, SEEK_SET);
    printf("child: lockf F_TEST: %s\n", err(lockf(fd, F_TEST, 10)));
    printf("child: lockf F_TLOCK: %s\n", err(lockf(fd, F_TLOCK, 10)));
    lseek(fd, 10, SEEK_SET);
    printf("child: lockf F_TLOCK at 10: %s\n", err(lockf(fd, F_TLOCK, 10)));
}

static void c_flock(int fd, pid_t parent) {
    (void)parent;
    printf("child: flock LOCK_EX|LOCK_NB of its own open: %s\n", err(flock(fd, LOCK_EX | LOCK_NB)));
    printf("child: flock LOCK_SH|LOCK_NB of its own open: %s\n", err(flock(fd, LOCK_SH | LOCK_NB)));
    printf("child: fcntl write lock (record locks are apart from flock's): %s\n",
           err(setlk(fd, F_SETLK, F_WRLCK, 0, 0)));
}

static void c_flock_sh(int fd, pid_t parent) {
    (void)parent;
    printf("child: flock LOCK_SH|LOCK_NB: %s\n", err(flock(fd, LOCK_SH | LOCK_NB)));
    printf("child: flock LOCK_EX|LOCK_NB: %s\n", err(flock(fd, LOCK_EX | LOCK_NB)));
}

static void on_alarm(int sig) { (void)sig; }

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    snprintf(path, sizeof path, "%s/locks.file", dir);
    setvbuf(stdout, NULL, _IONBF, 0);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    write(fd, "0123456789abcdefghij", 20);
    pid_t me = getpid();

    getlk("parent", fd, F_GETLK, 0, 0, me);
    printf("write lock 0+10: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 10)));
    printf("read lock 20+10: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 20, 10)));
    getlk("parent (its own locks are no conflict)", fd, F_GETLK, 0, 0, me);
    printf("its own write lock again, as a read lock: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 5, 5)));
    printf("and back to write: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 5, 5)));
    child(c_conflicts);

    // Errors.
    printf("bad type: %s\n", err(setlk(fd, F_SETLK, 7, 0, 1)));
    printf("negative start: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, -5, 1)));
    printf("closed descriptor: %s\n", err(setlk(99, F_SETLK, F_WRLCK, 0, 1)));
    int ro = open(path, O_RDONLY);
    printf("write lock through a read-only descriptor: %s\n", err(setlk(ro, F_SETLK, F_WRLCK, 0, 1)));
    close(ro);
    int wo = open(path, O_WRONLY);
    printf("read lock through a write-only descriptor: %s\n", err(setlk(wo, F_SETLK, F_RDLCK, 0, 1)));
    printf("bad pointer: %s\n", err(fcntl(fd, F_SETLK, (struct flock *)8)));
    struct flock neg = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = -5};
    printf("negative length (5..9): %s\n", err(fcntl(fd, F_SETLK, &neg)));
    struct flock cur = {.l_type = F_WRLCK, .l_whence = SEEK_END, .l_start = -2, .l_len = 2};
    printf("SEEK_END -2: %s\n", err(fcntl(fd, F_SETLK, &cur)));

    // The ranges: the parent holds write 0+10, read 20+10, write 18+2.
    // Closing another descriptor of the file drops every lock of the
    // process on it (POSIX).
    close(wo);
    child(c_free);

    // Splitting: 0+100 locked, 40+20 unlocked in the middle.
    printf("write lock 0+100: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 100)));
    printf("unlock 40+20: %s\n", err(setlk(fd, F_SETLK, F_UNLCK, 40, 20)));
    printf("read lock 150 to the end: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 150, 0)));
    child(c_split);
    setlk(fd, F_SETLK, F_UNLCK, 0, 0);
    child(c_free);

    // Read locks are shared.
    printf("read lock 0+0: %s\n", err(setlk(fd, F_SETLK, F_RDLCK, 0, 0)));
    child(c_readers);
    setlk(fd, F_SETLK, F_UNLCK, 0, 0);

    // F_SETLKW waits until the holder lets go; a child holding it exits.
    int p2c[2], c2p[2];
    pipe(p2c);
    pipe(c2p);
    pid_t c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        setlk(cfd, F_SETLK, F_WRLCK, 0, 0);
        write(c2p[1], "l", 1);
        char b;
        read(p2c[0], &b, 1);
        usleep(100000);
        _exit(0); // its lock goes with it
    }
    char b;
    read(c2p[0], &b, 1);
    printf("while a child holds the file: F_SETLK %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 0, 0)));
    write(p2c[1], "g", 1);
    printf("F_SETLKW waits for the child's exit: %s\n", err(setlk(fd, F_SETLKW, F_WRLCK, 0, 0)));
    int st;
    waitpid(c, &st, 0);
    getlk("parent", fd, F_GETLK, 0, 0, me);
    setlk(fd, F_SETLK, F_UNLCK, 0, 0);

    // F_SETLKW interrupted by a signal: EINTR.
    c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        setlk(cfd, F_SETLK, F_WRLCK, 0, 1);
        write(c2p[1], "l", 1);
        read(p2c[0], &b, 1);
        _exit(0);
    }
    read(c2p[0], &b, 1);
    struct sigaction sa = {0};
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(1);
    printf("F_SETLKW interrupted by SIGALRM: %s\n", err(setlk(fd, F_SETLKW, F_WRLCK, 0, 1)));
    write(p2c[1], "g", 1);
    waitpid(c, &st, 0);

    // A deadlock is refused: the child holds 0 and waits for 1; the
    // parent, holding 1, asks for 0.
    printf("write lock 1+1: %s\n", err(setlk(fd, F_SETLK, F_WRLCK, 1, 1)));
    c = fork();
    if (c == 0) {
        int cfd = open(path, O_RDWR);
        setlk(cfd, F_SETLK, F_WRLCK, 0, 1);
        write(c2p[1], "l", 1);
        int r = setlk(cfd, F_SETLKW, F_WRLCK, 1, 1);
        _exit(r == 0 ? 0 : 1);
    }
    read(c2p[0], &b, 1);
    usleep(200000); // the child is waiting by now
    printf("the parent asks for the child's byte: %s\n", err(setlk(fd, F_SETLKW, F_WRLCK, 0, 1)));
    setlk(fd, F_SETLK, F_UNLCK, 0, 0);
    waitpid(c, &st, 0);
    printf("and the child got its byte once the parent let go: %d\n", WEXITSTATUS(st) == 0);

    // lockf.
    lseek(fd, 0, SEEK_SET);
    printf("lockf F_LOCK 10: %s\n", err(lockf(fd, F_LOCK, 10)));
    child(c_lockf);
    printf("lockf F_ULOCK: %s\n", err(lockf(fd, F_ULOCK, 10)));
    getlk("parent", fd, F_GETLK, 0, 0, me);

    // OFD locks: held by the open file description; two opens in one
    // process conflict; F_OFD_GETLK's owner is -1.
    struct flock ofd = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 10};
    printf("F_OFD_SETLK 0+10: %s\n", err(fcntl(fd, F_OFD_SETLK, &ofd)));
    int fd2 = open(path, O_RDWR);
    ofd.l_type = F_RDLCK;
    printf("F_OFD_SETLK through another open of the same process: %s\n", err(fcntl(fd2, F_OFD_SETLK, &ofd)));
    getlk("parent, another open", fd2, F_OFD_GETLK, 0, 0, -1);
    printf("a process lock over it: %s\n", err(setlk(fd2, F_SETLK, F_WRLCK, 5, 1)));
    ofd.l_pid = 1;
    printf("F_OFD_SETLK with l_pid set: %s\n", err(fcntl(fd2, F_OFD_SETLK, &ofd)));
    close(fd2);
    getlk("parent, after the other open closed", fd, F_GETLK, 0, 0, -1);
    int fd3 = dup(fd);
    close(fd3);
    fd2 = open(path, O_RDWR);
    getlk("parent, after closing a dup", fd2, F_OFD_GETLK, 0, 0, -1);
    ofd.l_type = F_UNLCK;
    ofd.l_pid = 0;
    fcntl(fd, F_OFD_SETLK, &ofd);
    getlk("parent, unlocked", fd2, F_OFD_GETLK, 0, 0, -1);
    close(fd2);

    // flock: the open file description's; a child's own open conflicts,
    // the inherited descriptor shares it.
    printf("flock LOCK_EX: %s\n", err(flock(fd, LOCK_EX)));
    child(c_flock);
    c = fork();
    if (c == 0) _exit(flock(fd, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
    waitpid(c, &st, 0);
    printf("the child's inherited descriptor shares the lock: %d\n", WEXITSTATUS(st) == 0);
    printf("flock LOCK_SH (converting): %s\n", err(flock(fd, LOCK_SH)));
    child(c_flock_sh);
    printf("flock LOCK_UN: %s\n", err(flock(fd, LOCK_UN)));
    printf("flock bad operation: %s\n", err(flock(fd, 77)));
    printf("flock closed descriptor: %s\n", err(flock(99, LOCK_EX)));
    fd2 = open(path, O_RDONLY);
    printf("flock LOCK_EX through a read-only open: %s\n", err(flock(fd2, LOCK_EX | LOCK_NB)));
    printf("another open of the same process conflicts: %s\n", err(flock(fd, LOCK_EX | LOCK_NB)));
    close(fd2);
    printf("after closing it: %s\n", err(flock(fd, LOCK_EX | LOCK_NB)));
    close(fd);
    fd = open(path, O_RDWR);
    printf("and after closing the locked one: %s\n", err(flock(fd, LOCK_EX | LOCK_NB)));
    close(fd);
    unlink(path);
    return 0;
}
