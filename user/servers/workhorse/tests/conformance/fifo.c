/* Named pipes (mkfifo, fifo(7)): opening each end waits for the other,
 * O_NONBLOCK opens, O_RDWR, data between processes, EOF, EPIPE, poll,
 * fstat, the buffer dropped when the last end closes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, long r)
{
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
}

static void readall(const char *what, int fd)
{
    char buf[64];
    ssize_t n, total = 0;
    char all[256] = "";
    while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
        buf[n] = 0;
        strncat(all, buf, sizeof all - strlen(all) - 1);
        total += n;
    }
    printf("%s: %zd bytes \"%s\", then %zd\n", what, total, all, n);
}

int main(int argc, char **argv)
{
    char path[512];
    snprintf(path, sizeof path, "%s/fifo-test", argc > 1 ? argv[1] : "/tmp");
    unlink(path);
    signal(SIGPIPE, SIG_IGN);
    say("mkfifo", mkfifo(path, 0600));

    /* A writer that comes later: the reader's open waits for it. */
    pid_t c = fork();
    if (c == 0) {
        usleep(200000);
        int w = open(path, O_WRONLY);
        if (w < 0)
            _exit(1);
        write(w, "late writer", 11);
        close(w);
        _exit(0);
    }
    int r = open(path, O_RDONLY);
    printf("reader's open waited for the writer: %d\n", r >= 0);
    readall("read", r);
    close(r);
    int st;
    waitpid(c, &st, 0);
    printf("writer child: %d\n", WEXITSTATUS(st));

    /* A reader that comes later: the writer's open waits for it. */
    c = fork();
    if (c == 0) {
        usleep(200000);
        int rr = open(path, O_RDONLY);
        if (rr < 0)
            _exit(1);
        char buf[64] = "";
        ssize_t n = read(rr, buf, sizeof buf - 1);
        _exit(n == 11 && memcmp(buf, "early write", 11) == 0 ? 0 : 2);
    }
    int w = open(path, O_WRONLY);
    printf("writer's open waited for the reader: %d\n", w >= 0);
    say("write", write(w, "early write", 11));
    waitpid(c, &st, 0);
    printf("reader child: %d\n", WEXITSTATUS(st));
    /* The reader is gone: EPIPE (SIGPIPE ignored). */
    say("write with no reader", write(w, "x", 1));
    close(w);

    /* O_NONBLOCK: a reader opens at once; a writer without a reader is
     * refused with ENXIO; with a reader it opens. */
    int nr = open(path, O_RDONLY | O_NONBLOCK);
    printf("non-blocking reader opens: %d\n", nr >= 0);
    say("read with no writer (EOF)", read(nr, path + 500, 1));
    close(nr);
    say("non-blocking writer with no reader", open(path, O_WRONLY | O_NONBLOCK));
    nr = open(path, O_RDONLY | O_NONBLOCK);
    int nw = open(path, O_WRONLY | O_NONBLOCK);
    printf("non-blocking writer with a reader opens: %d\n", nw >= 0);
    struct pollfd p = {.fd = nr, .events = POLLIN};
    say("poll before a write", poll(&p, 1, 0));
    say("write", write(nw, "polled", 6));
    p.revents = 0;
    say("poll after it", poll(&p, 1, 0));
    printf("POLLIN: %d\n", (p.revents & POLLIN) != 0);
    char buf[64] = "";
    say("read", read(nr, buf, sizeof buf - 1));
    printf("got \"%s\"\n", buf);
    say("read of an empty FIFO with a writer (EAGAIN)", read(nr, buf, 1));
    close(nw);
    p.revents = 0;
    poll(&p, 1, 0);
    printf("POLLHUP after the writer closed: %d\n", (p.revents & POLLHUP) != 0);
    close(nr);

    /* O_RDWR opens at once and is both ends. */
    int rw = open(path, O_RDWR);
    printf("O_RDWR opens: %d\n", rw >= 0);
    struct stat sb;
    fstat(rw, &sb);
    printf("fstat: a FIFO %d, mode %o\n", S_ISFIFO(sb.st_mode), sb.st_mode & 07777);
    say("lseek (ESPIPE)", lseek(rw, 0, SEEK_SET));
    say("write", write(rw, "to myself", 9));
    memset(buf, 0, sizeof buf);
    say("read", read(rw, buf, sizeof buf - 1));
    printf("got \"%s\"\n", buf);
    say("write left unread", write(rw, "dropped", 7));
    close(rw);
    /* All ends closed: what was left is gone. */
    rw = open(path, O_RDWR | O_NONBLOCK);
    say("read after every end closed (EAGAIN)", read(rw, buf, sizeof buf));
    close(rw);

    /* Two writers and one reader: the reader sees both lines, then EOF
     * once both have closed.  Each writer tells the parent through a pipe
     * that it has opened, so that the reader's EOF cannot come between
     * them. */
    int sync[2];
    pipe(sync);
    for (int i = 0; i < 2; i++) {
        if (fork() == 0) {
            int ww = open(path, O_WRONLY);
            write(sync[1], "o", 1);
            char line[8];
            snprintf(line, sizeof line, "w%d\n", i);
            write(ww, line, 3);
            _exit(0);
        }
    }
    close(sync[1]);
    r = open(path, O_RDONLY);
    char two[2];
    read(sync[0], two, 1);
    read(sync[0], two + 1, 1);
    char all[64] = "";
    ssize_t n, total = 0;
    while ((n = read(r, all + total, sizeof all - 1 - total)) > 0)
        total += n;
    printf("two writers: %zd bytes, w0 %d, w1 %d, then %zd\n", total, strstr(all, "w0\n") != 0,
           strstr(all, "w1\n") != 0, n);
    close(r);
    close(sync[0]);
    while (wait(&st) > 0)
        ;
    say("unlink", unlink(path));
    say("open after unlink", open(path, O_RDONLY | O_NONBLOCK));
    return 0;
}
