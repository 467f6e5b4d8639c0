// Job control without a terminal: the stop signals stop a process (all
// its threads) unless handled or ignored, SIGCONT continues it and runs
// its handler, the parent is told through wait4 (WUNTRACED, WCONTINUED),
// waitid (WSTOPPED, WCONTINUED, WNOWAIT) and SIGCHLD (CLD_STOPPED,
// CLD_CONTINUED, CLD_EXITED; none for stops with SA_NOCLDSTOP); SIGKILL
// ends a stopped process, other signals wait until it is continued; SIGTSTP does nothing to an
// orphaned process group; a stopped group orphaned by its parent's end
// gets SIGHUP and SIGCONT; orphans go to a PR_SET_CHILD_SUBREAPER.
// Every child is synchronised by a wait or a pipe, never by time.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static void describe(const char *what, int st) {
    if (WIFSTOPPED(st))
        printf("%s: stopped by %s\n", what, sigabbrev_np(WSTOPSIG(st)));
    else if (WIFCONTINUED(st))
        printf("%s: continued\n", what);
    else if (WIFEXITED(st))
        printf("%s: exited %d\n", what, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("%s: killed by %s\n", what, sigabbrev_np(WTERMSIG(st)));
    else
        printf("%s: status %#x\n", what, st);
}

static int wait_for(pid_t c, int options, const char *what) {
    int st = 0;
    pid_t r = waitpid(c, &st, options);
    if (r != c) {
        printf("%s: waitpid returned %d (%s)\n", what, (int)r, r < 0 ? strerror(errno) : "-");
        return -1;
    }
    describe(what, st);
    return st;
}

// A child that sends itself `sig`, then exits 7 (or 8 if a handler ran).
static volatile sig_atomic_t handled, conts;
static void on_sig(int s) {
    (void)s;
    handled++;
}
static void on_cont(int s) {
    (void)s;
    conts++;
}

// The child's end waits for a byte from its parent (`release`), so that
// what is told of it before is never overtaken by its exit.
static int go_w = -1;
static void release(void) {
    if (go_w >= 0) {
        write(go_w, "x", 1);
        close(go_w);
        go_w = -1;
    }
}

static pid_t self_signaller(int sig, int handle, int own_group) {
    int go[2];
    release();
    pipe(go);
    pid_t c = fork();
    if (c == 0) {
        close(go[1]);
        if (own_group)
            setpgid(0, 0);
        if (handle == 1)
            signal(sig, on_sig);
        if (handle == 2)
            signal(sig, SIG_IGN);
        signal(SIGCONT, on_cont);
        raise(sig);
        char x;
        read(go[0], &x, 1);
        _exit(handled ? 8 : conts ? 9 : 7);
    }
    close(go[0]);
    go_w = go[1];
    if (own_group)
        setpgid(c, c);
    return c;
}

static void stop_signals(void) {
    int sigs[] = {SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU};
    for (int i = 0; i < 4; i++) {
        char what[64];
        pid_t c = self_signaller(sigs[i], 0, 1);
        snprintf(what, sizeof what, "%s, default action", sigabbrev_np(sigs[i]));
        wait_for(c, WUNTRACED, what);
        // Without WUNTRACED the stop is not reported.
        int st;
        printf("  WNOHANG without WUNTRACED: %d\n", (int)waitpid(c, &st, WNOHANG));
        kill(c, SIGCONT);
        wait_for(c, WCONTINUED, "  after SIGCONT");
        release();
        wait_for(c, 0, "  then");
    }
    // Handled and ignored stop signals do not stop.
    pid_t c = self_signaller(SIGTSTP, 1, 1);
    release();
    wait_for(c, WUNTRACED, "SIGTSTP handled");
    c = self_signaller(SIGTTIN, 2, 1);
    release();
    wait_for(c, WUNTRACED, "SIGTTIN ignored");
    // SIGSTOP cannot be caught or ignored.
    struct sigaction sa = {.sa_handler = on_sig};
    printf("sigaction(SIGSTOP): %s\n", sigaction(SIGSTOP, &sa, NULL) < 0 ? strerror(errno) : "accepted");
    sa.sa_handler = SIG_IGN;
    printf("sigaction(SIGSTOP, SIG_IGN): %s\n", sigaction(SIGSTOP, &sa, NULL) < 0 ? strerror(errno) : "accepted");
}

static void kill_stopped(void) {
    pid_t c = self_signaller(SIGSTOP, 0, 1);
    wait_for(c, WUNTRACED, "to be killed");
    kill(c, SIGKILL);
    wait_for(c, 0, "  SIGKILL while stopped");
    c = self_signaller(SIGSTOP, 0, 1);
    wait_for(c, WUNTRACED, "to be terminated");
    // A fatal signal waits too: it ends the process once continued.
    kill(c, SIGTERM);
    int st;
    printf("  SIGTERM while stopped, WNOHANG: %d\n", (int)waitpid(c, &st, WNOHANG));
    kill(c, SIGCONT);
    wait_for(c, 0, "  SIGTERM then SIGCONT");
    // A handled signal waits until the process is continued.
    c = fork();
    if (c == 0) {
        setpgid(0, 0);
        signal(SIGUSR1, on_sig);
        raise(SIGSTOP);
        _exit(handled == 1 ? 0 : 1);
    }
    wait_for(c, WUNTRACED, "with a handler for SIGUSR1");
    kill(c, SIGUSR1);
    kill(c, SIGCONT);
    wait_for(c, 0, "  SIGUSR1 then SIGCONT");
    // SIGCONT's handler runs when it continues the process.
    c = self_signaller(SIGSTOP, 0, 1);
    wait_for(c, WUNTRACED, "with a SIGCONT handler");
    kill(c, SIGCONT);
    wait_for(c, WCONTINUED, "  SIGCONT");
    release();
    wait_for(c, 0, "  then (9: the handler ran)");
}

static void waitid_reports(void) {
    pid_t c = self_signaller(SIGTSTP, 0, 1);
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, c, &si, WSTOPPED | WNOWAIT);
    printf("waitid WSTOPPED|WNOWAIT: %d, code %s, status %s, pid %s\n", r,
           si.si_code == CLD_STOPPED ? "CLD_STOPPED" : "other", sigabbrev_np(si.si_status),
           si.si_pid == c ? "the child's" : "another");
    memset(&si, 0, sizeof si);
    r = waitid(P_PID, c, &si, WSTOPPED);
    printf("  again without WNOWAIT: %d, code %s\n", r, si.si_code == CLD_STOPPED ? "CLD_STOPPED" : "other");
    memset(&si, 0, sizeof si);
    r = waitid(P_PID, c, &si, WSTOPPED | WNOHANG);
    printf("  a third time with WNOHANG: %d, pid %d\n", r, si.si_pid);
    kill(c, SIGCONT);
    memset(&si, 0, sizeof si);
    r = waitid(P_PID, c, &si, WCONTINUED);
    release();
    printf("waitid WCONTINUED: %d, code %s, status %s\n", r, si.si_code == CLD_CONTINUED ? "CLD_CONTINUED" : "other",
           sigabbrev_np(si.si_status));
    memset(&si, 0, sizeof si);
    r = waitid(P_PID, c, &si, WEXITED);
    printf("waitid WEXITED: %d, code %s, status %d\n", r, si.si_code == CLD_EXITED ? "CLD_EXITED" : "other",
           si.si_status);
}

static volatile sig_atomic_t chld_codes[8], chld_status[8], nchld;
static void on_chld(int s, siginfo_t *si, void *uc) {
    (void)s, (void)uc;
    if (nchld < 8) {
        chld_codes[nchld] = si->si_code;
        chld_status[nchld] = si->si_status;
        nchld++;
    }
}

static const char *cld(int code) {
    switch (code) {
    case CLD_EXITED: return "CLD_EXITED";
    case CLD_KILLED: return "CLD_KILLED";
    case CLD_STOPPED: return "CLD_STOPPED";
    case CLD_CONTINUED: return "CLD_CONTINUED";
    default: return "other";
    }
}

// Waits (SIGCHLD blocked but here) until the handler has seen `n`.
static void await_chld(int n) {
    sigset_t none;
    sigemptyset(&none);
    while (nchld < n)
        sigsuspend(&none);
}

// Each step waits for its SIGCHLD before the next (a standard signal
// posted twice before its handler runs is taken once).
static void sigchld(int flags) {
    struct sigaction sa = {.sa_sigaction = on_chld, .sa_flags = SA_SIGINFO | SA_RESTART | flags};
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    nchld = 0;
    int go[2];
    pipe(go);
    pid_t c = fork();
    if (c == 0) {
        close(go[1]);
        setpgid(0, 0);
        raise(SIGSTOP);
        char x;
        read(go[0], &x, 1);
        _exit(9);
    }
    close(go[0]);
    wait_for(c, WUNTRACED, flags ? "SA_NOCLDSTOP child" : "SIGCHLD child");
    if (!flags)
        await_chld(1);
    kill(c, SIGCONT);
    wait_for(c, WCONTINUED, "  continued");
    if (!flags)
        await_chld(2);
    write(go[1], "x", 1);
    await_chld(flags ? 1 : 3);
    wait_for(c, 0, "  ended");
    close(go[1]);
    printf("  SIGCHLD%s:", flags ? " with SA_NOCLDSTOP" : "");
    for (int i = 0; i < nchld; i++)
        printf(" %s/%d", cld(chld_codes[i]), chld_status[i]);
    printf("\n");
    sigprocmask(SIG_SETMASK, &old, NULL);
    signal(SIGCHLD, SIG_DFL);
}

// A threaded process stops as a whole: its threads finish their work
// after SIGCONT.
static void *spin(void *arg) {
    volatile long *n = arg;
    for (long i = 0; i < 20000000; i++)
        (*n)++;
    return NULL;
}

static void threaded(void) {
    pid_t c = fork();
    if (c == 0) {
        setpgid(0, 0);
        long n1 = 0, n2 = 0;
        pthread_t t1, t2;
        pthread_create(&t1, NULL, spin, (void *)&n1);
        pthread_create(&t2, NULL, spin, (void *)&n2);
        pthread_join(t1, NULL);
        pthread_join(t2, NULL);
        _exit(n1 == 20000000 && n2 == 20000000 ? 0 : 1);
    }
    kill(c, SIGSTOP);
    wait_for(c, WUNTRACED, "threaded child");
    kill(c, SIGCONT);
    wait_for(c, WCONTINUED, "  continued");
    wait_for(c, 0, "  its threads' work done");
}

// A process group orphaned with a stopped member gets SIGHUP and SIGCONT:
// the child's group (in its parent's new session) is orphaned when the
// parent ends, its new parent being in another session.
static void orphaned_groups(void) {
    int p[2];
    pipe(p);
    pid_t a = fork();
    if (a == 0) {
        setsid();
        close(p[0]);
        pid_t b = fork();
        if (b == 0) {
            setpgid(0, 0);
            // SIGHUP's handler says it ran, after SIGCONT.
            signal(SIGHUP, on_sig);
            raise(SIGSTOP);
            char m = handled ? 'H' : 'n';
            write(p[1], &m, 1);
            _exit(0);
        }
        setpgid(b, b);
        int st;
        waitpid(b, &st, WUNTRACED);
        _exit(WIFSTOPPED(st) ? 0 : 1);
    }
    close(p[1]);
    wait_for(a, 0, "parent of a stopped child");
    char m = '?';
    read(p[0], &m, 1);
    printf("  the orphaned stopped child: %s\n", m == 'H' ? "SIGHUP, then SIGCONT" : "not hung up");
    close(p[0]);
}

// SIGTSTP to an orphaned group does nothing; run in the child of a new
// session whose leader has ended.  Writes what happened to `fd`.
static void orphan(int fd, pid_t old_parent, int say_parent) {
    while (getppid() == old_parent)
        sched_yield();
    char buf[64];
    if (say_parent) {
        pid_t pp = getppid();
        snprintf(buf, sizeof buf, "orphan's parent: %s\n", pp == 1 ? "1" : "not 1");
    } else {
        raise(SIGTSTP);
        snprintf(buf, sizeof buf, "SIGTSTP to an orphaned group: %s\n", "not stopped");
    }
    write(fd, buf, strlen(buf));
    _exit(0);
}

static void orphaned_tstp(int say_parent) {
    int p[2];
    pipe(p);
    pid_t a = fork();
    if (a == 0) {
        setsid();
        close(p[0]);
        pid_t me = getpid();
        if (fork() == 0)
            orphan(p[1], me, say_parent);
        _exit(0);
    }
    close(p[1]);
    waitpid(a, NULL, 0);
    char buf[64];
    ssize_t n = read(p[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = 0;
    printf("%s", n > 0 ? buf : "the orphan said nothing\n");
    close(p[0]);
}

// PR_SET_CHILD_SUBREAPER: an orphaned grandchild comes to this process,
// which waits for it.
static void subreaper(void) {
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    int on = 0;
    prctl(PR_GET_CHILD_SUBREAPER, &on);
    printf("PR_GET_CHILD_SUBREAPER: %d\n", on);
    int p[2];
    pipe(p);
    pid_t me = getpid();
    pid_t a = fork();
    if (a == 0) {
        close(p[0]);
        pid_t a_pid = getpid();
        if (fork() == 0) {
            while (getppid() == a_pid)
                sched_yield();
            char m = getppid() == me ? 'S' : 'x';
            write(p[1], &m, 1);
            _exit(5);
        }
        _exit(0);
    }
    close(p[1]);
    wait_for(a, 0, "the grandchild's parent");
    char m = '?';
    read(p[0], &m, 1);
    printf("  the orphaned grandchild's parent: %s\n", m == 'S' ? "the subreaper" : "another");
    int st = 0;
    pid_t r = waitpid(-1, &st, 0);
    printf("  the subreaper's wait: %s, exited %d\n", r > 0 && r != a ? "the grandchild" : "another", WEXITSTATUS(st));
    close(p[0]);
    prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, SIG_IGN); // release() of a child that was killed
    // `jobctl init`: where an orphan goes without a subreaper (pid 1 on
    // Keep; the host's may be a subreaper).
    if (argc > 1 && strcmp(argv[1], "init") == 0) {
        orphaned_tstp(1);
        return 0;
    }
    stop_signals();
    kill_stopped();
    waitid_reports();
    sigchld(0);
    sigchld(SA_NOCLDSTOP);
    threaded();
    orphaned_groups();
    orphaned_tstp(0);
    subreaper();
    return 0;
}
