// Pipe sizes: F_GETPIPE_SZ and F_SETPIPE_SZ on both ends of a pipe and on
// a named pipe (rounded up to a power of two pages, at least one; the
// size read back; a pipe filled to it and no further; EBUSY below what it
// holds; the bytes kept across a resize) and their errors (EBADF for a
// file, EINVAL past 2^31).  The default size is not printed: it is the
// system's choice.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

// Bytes a non-blocking write of more than `size` gets in.
static long fill(int w, long size) {
    static char buf[1 << 17];
    memset(buf, 'x', sizeof buf);
    long n = 0;
    for (;;) {
        ssize_t r = write(w, buf, size + 4096 - n > 0 ? (size_t)(size + 4096 - n) : 1);
        if (r < 0)
            return errno == EAGAIN ? n : -1;
        n += r;
    }
}

int main(int argc, char **argv) {
    int p[2];
    if (pipe2(p, O_NONBLOCK))
        return 1;
    say("F_GETPIPE_SZ is at least a page", fcntl(p[1], F_GETPIPE_SZ) >= 4096);
    say("F_SETPIPE_SZ 8192", fcntl(p[1], F_SETPIPE_SZ, 8192));
    say("F_GETPIPE_SZ (write end)", fcntl(p[1], F_GETPIPE_SZ));
    say("F_GETPIPE_SZ (read end)", fcntl(p[0], F_GETPIPE_SZ));
    say("F_SETPIPE_SZ 5000 (rounded up)", fcntl(p[0], F_SETPIPE_SZ, 5000));
    say("F_SETPIPE_SZ 1 (a page)", fcntl(p[1], F_SETPIPE_SZ, 1));
    say("F_SETPIPE_SZ 0 (a page)", fcntl(p[1], F_SETPIPE_SZ, 0));
    say("F_SETPIPE_SZ 3 pages (rounded up)", fcntl(p[1], F_SETPIPE_SZ, 3 * 4096));
    say("bytes a full pipe took", fill(p[1], 16384));
    say("F_SETPIPE_SZ a page, holding more", fcntl(p[1], F_SETPIPE_SZ, 4096));
    say("F_GETPIPE_SZ after EBUSY", fcntl(p[1], F_GETPIPE_SZ));
    say("F_SETPIPE_SZ 65536, full", fcntl(p[1], F_SETPIPE_SZ, 65536));
    say("bytes it took more", fill(p[1], 65536 - 16384));
    static char got[1 << 17];
    long n = 0;
    ssize_t r;
    while ((r = read(p[0], got + n, sizeof got - n)) > 0)
        n += r;
    say("bytes read back", n);
    say("F_SETPIPE_SZ past 2^31", fcntl(p[1], F_SETPIPE_SZ, (1UL << 31) + 1));
    close(p[0]);
    close(p[1]);

    char dir[512], fifo[600], file[600];
    snprintf(dir, sizeof dir, "%s/pipesz-test", argc > 1 ? argv[1] : "/tmp");
    mkdir(dir, 0755);
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    snprintf(file, sizeof file, "%s/file", dir);
    unlink(fifo);
    say("mkfifo", mkfifo(fifo, 0644));
    int f = open(fifo, O_RDWR | O_NONBLOCK);
    say("a named pipe: F_SETPIPE_SZ 16384", fcntl(f, F_SETPIPE_SZ, 16384));
    say("its F_GETPIPE_SZ", fcntl(f, F_GETPIPE_SZ));
    say("bytes it took", fill(f, 16384));
    close(f);
    unlink(fifo);
    int g = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    say("a file: F_GETPIPE_SZ", fcntl(g, F_GETPIPE_SZ));
    say("a file: F_SETPIPE_SZ", fcntl(g, F_SETPIPE_SZ, 8192));
    close(g);
    unlink(file);
    rmdir(dir);
    say("a closed descriptor: F_GETPIPE_SZ", fcntl(g, F_GETPIPE_SZ));
    return 0;
}
