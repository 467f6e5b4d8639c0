// Pseudo-terminals through glibc: posix_openpt, grantpt, unlockpt,
// ptsname, the slave locked until unlockpt (EIO), TIOCGPTN, openpty's
// TIOCGPTPEER; the slave's line discipline (ONLCR, echo, canonical editing,
// raw mode), window size; a child's session taking the slave as its
// controlling terminal (TIOCSCTTY, tcgetpgrp, tcgetsid, /dev/tty), Ctrl-C
// written to the master as SIGINT to its foreground group, a background
// reader stopped by SIGTTIN; the master's EIO once the slave is closed.
// What the master reads is checked for markers, never compared whole (its
// echo of control characters differs between systems).
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

static char seen[8192];
static size_t nseen;

// Reads the master until `marker` has come (or 20 s without anything, so
// that a failure does not hang); says whether it came.
static int expect(int m, const char *marker) {
    for (;;) {
        seen[nseen] = 0;
        char *at = strstr(seen, marker);
        if (at) {
            // What came after it is kept for the next.
            size_t used = at - seen + strlen(marker);
            memmove(seen, seen + used, nseen - used);
            nseen -= used;
            return 1;
        }
        struct pollfd p = {.fd = m, .events = POLLIN};
        if (poll(&p, 1, 20000) <= 0)
            return 0;
        ssize_t n = read(m, seen + nseen, sizeof seen - 1 - nseen);
        if (n <= 0)
            return 0;
        nseen += n;
        if (nseen >= sizeof seen - 1)
            nseen = 0;
    }
}

static void say(int fd, const char *s) {
    write(fd, s, strlen(s));
}

static volatile sig_atomic_t got_int;
static void on_int(int s) {
    (void)s;
    got_int = 1;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    printf("posix_openpt: %s\n", m >= 0 ? "a descriptor" : strerror(errno));
    printf("isatty(master): %d\n", isatty(m));
    printf("grantpt: %d\n", grantpt(m));
    char *name = ptsname(m);
    printf("ptsname: %s\n", name && strncmp(name, "/dev/pts/", 9) == 0 ? "/dev/pts/N" : "other");
    char path[64];
    snprintf(path, sizeof path, "%s", name);
    int n = -1;
    int got = ioctl(m, TIOCGPTN, &n);
    printf("TIOCGPTN: %d, its number: %s\n", got, n == atoi(path + 9) ? "yes" : "no");
    int s = open(path, O_RDWR | O_NOCTTY);
    printf("open before unlockpt: %s\n", s < 0 ? strerror(errno) : "opened");
    if (s >= 0)
        close(s);
    printf("unlockpt: %d\n", unlockpt(m));
    s = open(path, O_RDWR | O_NOCTTY);
    printf("open after: %s\n", s >= 0 ? "opened" : strerror(errno));
    printf("isatty(slave): %d\n", isatty(s));
    struct stat st;
    fstat(s, &st);
    printf("slave: a character device %d\n", S_ISCHR(st.st_mode));

    struct termios t;
    tcgetattr(s, &t);
    printf("termios: ICANON %d ECHO %d ISIG %d ONLCR %d ICRNL %d VINTR %d VSUSP %d VEOF %d\n", !!(t.c_lflag & ICANON),
           !!(t.c_lflag & ECHO), !!(t.c_lflag & ISIG), !!(t.c_oflag & ONLCR), !!(t.c_iflag & ICRNL), t.c_cc[VINTR],
           t.c_cc[VSUSP], t.c_cc[VEOF]);

    say(s, "hello\n");
    printf("slave's output at the master with ONLCR: %d\n", expect(m, "hello\r\n"));
    say(m, "abc\r");
    char buf[64];
    ssize_t r = read(s, buf, sizeof buf);
    printf("a line typed at the master: %.*s", (int)r, buf);
    printf("  its echo: %d\n", expect(m, "abc\r\n"));
    say(m, "ab\x7f" "c\r");
    r = read(s, buf, sizeof buf);
    printf("edited (DEL): %.*s", (int)r, buf);
    expect(m, "\r\n");
    struct termios raw = t;
    cfmakeraw(&raw);
    tcsetattr(s, TCSANOW, &raw);
    say(m, "xy");
    r = read(s, buf, sizeof buf);
    printf("raw: %.*s\n", (int)r, buf);
    struct pollfd p = {.fd = m, .events = POLLIN};
    printf("  no echo in raw mode: %d\n", poll(&p, 1, 0) == 0);
    tcsetattr(s, TCSANOW, &t);

    struct winsize w = {.ws_row = 30, .ws_col = 100};
    printf("TIOCSWINSZ at the master: %d\n", ioctl(m, TIOCSWINSZ, &w));
    struct winsize w2 = {0};
    ioctl(s, TIOCGWINSZ, &w2);
    printf("TIOCGWINSZ at the slave: %d x %d\n", w2.ws_row, w2.ws_col);
    printf("tcgetpgrp without a controlling terminal: %s\n", tcgetpgrp(s) < 0 ? strerror(errno) : "a group");

    // A session of its own with the slave as controlling terminal.
    pid_t c = fork();
    if (c == 0) {
        setsid();
        int r1 = ioctl(s, TIOCSCTTY, 0);
        int fg = tcgetpgrp(s) == getpid(), sid = tcgetsid(s) == getpid();
        int tty = open("/dev/tty", O_RDWR);
        char msg[160];
        snprintf(msg, sizeof msg, "TIOCSCTTY %d, foreground %d, sid %d, /dev/tty %s\n", r1, fg, sid,
                 tty >= 0 ? "opened" : strerror(errno));
        say(s, msg);
        if (tty >= 0)
            say(tty, "through /dev/tty\n");
        // A background group's read of it: SIGTTIN stops the reader.
        pid_t g = fork();
        if (g == 0) {
            setpgid(0, 0);
            read(s, buf, 1);
            _exit(0);
        }
        setpgid(g, g);
        int ws;
        waitpid(g, &ws, WUNTRACED);
        snprintf(msg, sizeof msg, "background reader: %s\n",
                 WIFSTOPPED(ws) && WSTOPSIG(ws) == SIGTTIN ? "stopped by SIGTTIN" : "not stopped");
        say(s, msg);
        kill(g, SIGKILL);
        waitpid(g, &ws, 0);
        // Ctrl-C at the master: SIGINT to this, the foreground group.
        // (Blocked until it waits for it, so that it cannot come first.)
        struct sigaction sa = {.sa_handler = on_int};
        sigaction(SIGINT, &sa, NULL);
        sigset_t block, none;
        sigemptyset(&block);
        sigaddset(&block, SIGINT);
        sigprocmask(SIG_BLOCK, &block, NULL);
        sigemptyset(&none);
        say(s, "ready\n");
        while (!got_int)
            sigsuspend(&none);
        say(s, "SIGINT came\n");
        _exit(0);
    }
    printf("child: %s\n", expect(m, "TIOCSCTTY 0, foreground 1, sid 1, /dev/tty opened") ? "its terminal" : seen);
    printf("  /dev/tty reaches the master: %d\n", expect(m, "through /dev/tty\r\n"));
    printf("  %s\n", expect(m, "background reader: stopped by SIGTTIN") ? "a background reader is stopped by SIGTTIN"
                                                                          : "background reader not stopped");
    expect(m, "ready\r\n");
    say(m, "\x03");
    printf("  Ctrl-C: %s\n", expect(m, "SIGINT came") ? "SIGINT to the foreground group" : "no SIGINT");
    int ws;
    waitpid(c, &ws, 0);
    printf("  child exited %d\n", WEXITSTATUS(ws));
    close(s);
    // Every slave closed: what is left, then EIO.
    while ((r = read(m, buf, sizeof buf)) > 0)
        ;
    printf("master read with the slave closed: %s\n", r < 0 ? strerror(errno) : "0");
    close(m);

    // openpty (TIOCGPTPEER, then the name as a fallback).
    int am, as;
    struct winsize ow = {.ws_row = 12, .ws_col = 34};
    printf("openpty: %d\n", openpty(&am, &as, NULL, NULL, &ow));
    ioctl(as, TIOCGWINSZ, &w2);
    printf("  its window: %d x %d, isatty %d\n", w2.ws_row, w2.ws_col, isatty(as));
    say(am, "ping\r");
    r = read(as, buf, sizeof buf);
    printf("  line: %.*s", (int)r, buf);
    return 0;
}
