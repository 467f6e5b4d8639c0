#define _GNU_SOURCE
/* Descriptors: poll on pipes (ready, not ready, hang-up), non-blocking
 * reads, dup2/dup3/fcntl, readv/writev, sendfile, lseek on a pipe,
 * /dev/null, and a pipe filled past its buffer by a writer that waits. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || chdir(argv[1]) < 0)
        return 2;
    int p[2];
    pipe(p);
    struct pollfd pf = {p[0], POLLIN, 0};
    show("poll empty pipe, timeout 0", poll(&pf, 1, 0));
    show("poll empty pipe, 10 ms", poll(&pf, 1, 10));
    write(p[1], "abc", 3);
    show("poll pipe with data", poll(&pf, 1, -1));
    printf("revents POLLIN: %d\n", (pf.revents & POLLIN) != 0);
    struct pollfd wf = {p[1], POLLOUT, 0};
    show("poll write end", poll(&wf, 1, 0));
    char b[16];
    show("read", read(p[0], b, sizeof b));
    fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
    printf("O_NONBLOCK set: %d\n", (fcntl(p[0], F_GETFL) & O_NONBLOCK) != 0);
    show("non-blocking read of an empty pipe", read(p[0], b, sizeof b));
    show("lseek on a pipe", lseek(p[0], 0, SEEK_SET));
    close(p[1]);
    show("poll after the writer closed", poll(&pf, 1, 0));
    printf("revents POLLHUP: %d\n", (pf.revents & POLLHUP) != 0);
    show("read at end", read(p[0], b, sizeof b));
    close(p[0]);

    int fd = open("io.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    struct iovec v[3] = {{"one ", 4}, {"two ", 4}, {"three\n", 6}};
    show("writev", writev(fd, v, 3));
    lseek(fd, 0, SEEK_SET);
    char x[5] = {0}, y[5] = {0}, z[8] = {0};
    struct iovec r[3] = {{x, 4}, {y, 4}, {z, 7}};
    show("readv", readv(fd, r, 3));
    printf("readv got '%s' '%s' '%s'", x, y, z);
    show("dup2 to 10", dup2(fd, 10));
    show("F_GETFD of the dup", fcntl(10, F_GETFD));
    show("dup3 with O_CLOEXEC", dup3(fd, 11, O_CLOEXEC));
    show("F_GETFD with cloexec", fcntl(11, F_GETFD));
    show("dup3 to itself", dup3(fd, fd, 0));
    show("F_DUPFD from 20", fcntl(fd, F_DUPFD, 20));
    int out[2];
    pipe(out);
    off_t off = 4;
    show("sendfile from offset 4", sendfile(out[1], fd, &off, 9));
    printf("offset after: %ld\n", (long)off);
    memset(b, 0, sizeof b);
    read(out[0], b, sizeof b);
    printf("sendfile sent '%s'\n", b);
    int null = open("/dev/null", O_RDWR);
    show("write /dev/null", write(null, "x", 1));
    show("read /dev/null", read(null, b, 1));
    struct stat st;
    fstat(null, &st);
    printf("/dev/null is a character device: %d\n", S_ISCHR(st.st_mode));
    close(fd);
    unlink("io.txt");

    /* 100 KB through a pipe whose writer must wait for the reader. */
    int q[2];
    pipe(q);
    pid_t c = fork();
    if (c == 0) {
        close(q[0]);
        static char big[100000];
        memset(big, 'q', sizeof big);
        long done = 0;
        while (done < (long)sizeof big) {
            long n = write(q[1], big + done, sizeof big - done);
            if (n <= 0)
                _exit(1);
            done += n;
        }
        _exit(0);
    }
    close(q[1]);
    long total = 0, n;
    static char rb[3000];
    while ((n = read(q[0], rb, sizeof rb)) > 0)
        total += n;
    int s;
    waitpid(c, &s, 0);
    printf("100000 bytes through a small pipe: %ld, writer exit %d\n", total, WEXITSTATUS(s));
    return 0;
}
