/* Error paths: bad pointers get EFAULT (and the server carries on), an
 * unknown system call gets ENOSYS, a crashing child is reported to its
 * parent as killed by SIGSEGV. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld %s\n", what, r, r < 0 ? strerror(errno) : "");
}

int main(void)
{
    show("write from a bad pointer", syscall(SYS_write, 1, (void *)16, 5));
    int fds[2];
    pipe(fds);
    write(fds[1], "data", 4);
    show("read into a bad pointer", syscall(SYS_read, fds[0], (void *)0xffff800000000000, 4));
    show("read into an unmapped page", syscall(SYS_read, fds[0], (void *)4096, 4));
    show("open with a bad path", syscall(SYS_openat, AT_FDCWD, (void *)8, O_RDONLY));
    show("stat into a bad buffer", syscall(SYS_newfstatat, AT_FDCWD, "/", (void *)24, 0));
    show("pipe2 into a bad array", syscall(SYS_pipe2, (void *)32, 0));
    show("unknown system call 999", syscall(999));
    show("unknown system call 500", syscall(500));
    show("bad dup2", syscall(SYS_dup2, 1000, 5));
    show("munmap unaligned", syscall(SYS_munmap, 1, 4096));
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        *(volatile int *)0 = 1;
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("crashing child: signaled %d signal %d\n", WIFSIGNALED(st), WTERMSIG(st));
    c = fork();
    if (c == 0) {
        __asm__ volatile("ud2");
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("ud2 child: signal %d\n", WTERMSIG(st));
    printf("still running\n");
    return 0;
}
