// A pseudo-terminal hung up by its master's close: the session leader
// whose controlling terminal the slave is gets SIGHUP and then SIGCONT (a
// handler sees both, in that order; a leader with the default action
// ends by SIGHUP); another member of the session, in its foreground
// group, gets neither; the slave then reads end of input and its writes
// are EIO, and the leader's end sends the terminal's foreground group then
// SIGHUP and SIGCONT; a leader that ends while its terminal is up sends
// its foreground group SIGHUP alone; a session whose terminal is another pty is not signalled; a
// master closed before any session took its slave signals nobody.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t hups, conts;

static void on_sig(int s) {
    if (s == SIGHUP)
        hups++;
    else if (s == SIGCONT)
        conts++;
}

// A new master, its slave's name in `name`.
static int new_master(char *name, size_t n) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) || unlockpt(m) || ptsname_r(m, name, n)) {
        printf("posix_openpt: %s\n", strerror(errno));
        exit(1);
    }
    return m;
}

// Waits (at most 10 s) for a byte on `fd`; the byte or -1.
static int token(int fd) {
    char c;
    alarm(10);
    ssize_t r = read(fd, &c, 1);
    alarm(0);
    return r == 1 ? c : -1;
}

static void status(const char *who, int st) {
    if (WIFEXITED(st))
        printf("%s: exit %d\n", who, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("%s: killed by %s\n", who, strsignal(WTERMSIG(st)));
    fflush(stdout);
}

// The child side: a new session taking `name` as its controlling
// terminal; with `handlers` it catches SIGHUP and SIGCONT and reports
// what came once `go` says the master is closed.  A member forked into
// the session (same group, the foreground) reports on `report`, which the
// parent prints (the member may outlive the leader).
static void leader(const char *name, int handlers, int ready, int go, int report) {
    setsid();
    int s = open(name, O_RDWR);
    if (s < 0) {
        printf("open slave: %s\n", strerror(errno));
        exit(2);
    }
    if (handlers) {
        struct sigaction sa = {.sa_handler = on_sig};
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGCONT, &sa, NULL);
    }
    int mp[2];
    if (pipe(mp))
        exit(3);
    pid_t member = fork();
    if (member == 0) {
        close(mp[0]);
        struct sigaction sa = {.sa_handler = on_sig};
        sigaction(SIGHUP, &sa, NULL);
        sigaction(SIGCONT, &sa, NULL);
        write(mp[1], "m", 1);
        // Until the leader says the hangup has come (or ended it).
        char c;
        while (read(go, &c, 1) < 0 && errno == EINTR)
            ;
        char line[128];
        snprintf(line, sizeof line, "member: SIGHUP %d, SIGCONT %d\n", (int)hups, (int)conts);
        write(report, line, strlen(line));
        _exit(0);
    }
    close(report);
    close(mp[1]);
    token(mp[0]);
    printf("  tcgetsid is this session: %d\n", tcgetsid(s) == getsid(0));
    printf("  foreground group is this: %d\n", tcgetpgrp(s) == getpgrp());
    fflush(stdout);
    write(ready, "r", 1);
    // The parent closes the master, then writes to `go`.
    char c;
    while (read(go, &c, 1) < 0 && errno == EINTR)
        ;
    // Both signals are due before the parent's write can be read.
    printf("  SIGHUP %d, SIGCONT %d\n", (int)hups, (int)conts);
    char buf[16];
    ssize_t r = read(s, buf, sizeof buf);
    printf("  slave read: %zd\n", r);
    errno = 0;
    r = write(s, "x", 1);
    printf("  slave write: %zd %s\n", r, r < 0 ? strerror(errno) : "");
    fflush(stdout);
    int st;
    waitpid(member, &st, 0);
    status("  member", st);
    exit(0);
}

static void hangup(int handlers) {
    char name[64];
    int m = new_master(name, sizeof name);
    int ready[2], go[2], report[2];
    if (pipe(ready) || pipe(go) || pipe(report))
        exit(4);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        close(m);
        close(ready[0]);
        close(go[1]);
        close(report[0]);
        leader(name, handlers, ready[1], go[0], report[1]);
    }
    close(ready[1]);
    close(go[0]);
    close(report[1]);
    printf("leader ready: %d\n", token(ready[0]) == 'r');
    fflush(stdout);
    close(m);
    // Let the signals come before the leader reads `go`: they are posted
    // at the close, and a process gets its due signals before its next
    // call returns; the write and a pause of 200 ms only order the output.
    usleep(200000);
    // One byte for the leader, one for the member.
    write(go[1], "gg", 2);
    close(go[1]);
    int st;
    waitpid(c, &st, 0);
    status("leader", st);
    char line[128];
    ssize_t n, got = 0;
    alarm(10);
    while ((n = read(report[0], line + got, sizeof line - 1 - got)) > 0)
        got += n;
    alarm(0);
    line[got] = 0;
    printf("%s", got ? line : "member: no report\n");
    close(report[0]);
}

// A leader ends while its terminal is up: its foreground group (a member
// it forked) gets SIGHUP, not SIGCONT; the master stays usable.
static void leader_ends(void) {
    char name[64];
    int m = new_master(name, sizeof name);
    int ready[2], go[2], report[2];
    if (pipe(ready) || pipe(go) || pipe(report))
        exit(6);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        close(m);
        close(ready[0]);
        close(go[1]);
        close(report[0]);
        setsid();
        if (open(name, O_RDWR) < 0)
            exit(2);
        int mp[2];
        if (pipe(mp))
            exit(3);
        if (fork() == 0) {
            close(mp[0]);
            struct sigaction sa = {.sa_handler = on_sig};
            sigaction(SIGHUP, &sa, NULL);
            sigaction(SIGCONT, &sa, NULL);
            write(mp[1], "m", 1);
            // Until the parent has seen the leader end.
            char ch;
            while (read(go[0], &ch, 1) < 0 && errno == EINTR)
                ;
            char line[128];
            snprintf(line, sizeof line, "member: SIGHUP %d, SIGCONT %d\n", (int)hups, (int)conts);
            write(report[1], line, strlen(line));
            _exit(0);
        }
        close(mp[1]);
        token(mp[0]);
        write(ready[1], "r", 1);
        exit(7);
    }
    close(ready[1]);
    close(go[0]);
    close(report[1]);
    token(ready[0]);
    int st;
    waitpid(c, &st, 0);
    status("leader", st);
    write(go[1], "g", 1);
    close(go[1]);
    char line[128];
    ssize_t n, got = 0;
    alarm(10);
    while ((n = read(report[0], line + got, sizeof line - 1 - got)) > 0)
        got += n;
    alarm(0);
    line[got] = 0;
    printf("%s", got ? line : "member: no report\n");
    close(report[0]);
    printf("master write after: %zd\n", write(m, "x", 1));
    close(m);
}

// A session whose terminal is pty B; pty A's master closes.
static void other_pty(void) {
    char a[64], b[64];
    int ma = new_master(a, sizeof a);
    int mb = new_master(b, sizeof b);
    int sa = open(a, O_RDWR | O_NOCTTY);
    int ready[2], go[2];
    if (pipe(ready) || pipe(go))
        exit(5);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        close(ma);
        close(mb);
        close(ready[0]);
        close(go[1]);
        setsid();
        int s = open(b, O_RDWR);
        struct sigaction act = {.sa_handler = on_sig};
        sigaction(SIGHUP, &act, NULL);
        sigaction(SIGCONT, &act, NULL);
        write(ready[1], "r", 1);
        char ch;
        while (read(go[0], &ch, 1) < 0 && errno == EINTR)
            ;
        printf("  other pty's session: SIGHUP %d, SIGCONT %d, tcgetsid %d\n", (int)hups, (int)conts,
               tcgetsid(s) == getsid(0));
        fflush(stdout);
        exit(0);
    }
    close(ready[1]);
    close(go[0]);
    token(ready[0]);
    close(ma);
    close(sa);
    usleep(200000);
    write(go[1], "g", 1);
    int st;
    waitpid(c, &st, 0);
    status("other pty's leader", st);
    close(mb);
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("leader with handlers:\n");
    hangup(1);
    printf("leader with the default actions:\n");
    hangup(0);
    printf("a leader ending with its terminal up:\n");
    leader_ends();
    printf("another pty's master closed:\n");
    other_pty();
    // No session: the close signals nobody (this process is no leader).
    char name[64];
    int m = new_master(name, sizeof name);
    int s = open(name, O_RDWR | O_NOCTTY);
    struct sigaction act = {.sa_handler = on_sig};
    sigaction(SIGHUP, &act, NULL);
    close(m);
    usleep(100000);
    printf("no session's master closed: SIGHUP %d, slave read %zd\n", (int)hups, read(s, name, 1));
    return 0;
}
