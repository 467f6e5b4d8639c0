// Children reaped at once: SIGCHLD set to SIG_IGN, or SA_NOCLDWAIT, leaves
// no zombie (a wait blocks until every child has ended, then fails with
// ECHILD; kill(pid, 0) finds none), a handler with SA_NOCLDWAIT still gets
// SIGCHLD, SIG_DFL brings zombies back, and across execve SIG_IGN stays
// while SA_NOCLDWAIT with a handler goes (flags cleared).
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

// A child that ends with `code` once the pipe's write end closes.
static pid_t held_child(int *wfd, int code) {
    int p[2];
    if (pipe(p))
        exit(90);
    pid_t c = fork();
    if (c == 0) {
        close(p[1]);
        char b;
        while (read(p[0], &b, 1) > 0)
            ;
        _exit(code);
    }
    close(p[0]);
    *wfd = p[1];
    return c;
}

static volatile sig_atomic_t chld;
static void on_chld(int sig) {
    (void)sig;
    chld++;
}

// After execve (argv[1] names the case): forks a child that ends at once
// and says what a wait for it gives.
static int after_exec(const char *which) {
    struct sigaction sa;
    sigaction(SIGCHLD, NULL, &sa);
    printf("%s: after execve SIGCHLD is %s, SA_NOCLDWAIT %s\n", which,
           sa.sa_handler == SIG_IGN ? "SIG_IGN" : sa.sa_handler == SIG_DFL ? "SIG_DFL" : "a handler",
           sa.sa_flags & SA_NOCLDWAIT ? "set" : "clear");
    pid_t c = fork();
    if (c == 0)
        _exit(4);
    int st = 0;
    pid_t r = waitpid(c, &st, 0);
    if (r == c)
        printf("%s: waitpid found the child, status %d\n", which, WEXITSTATUS(st));
    else
        say("waitpid", r);
    return 0;
}

static void exec_self(const char *which) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        char *argv[] = {"childreap", (char *)which, NULL};
        execv("/proc/self/exe", argv);
        _exit(91);
    }
    int st;
    waitpid(c, &st, 0);
}

int main(int argc, char **argv) {
    if (argc > 1 && strncmp(argv[1], "exec-", 5) == 0)
        return after_exec(argv[1]);

    // SIG_IGN: three children; a wait returns ECHILD only when all have
    // ended (their pipes are closed one by one first).
    signal(SIGCHLD, SIG_IGN);
    int w[3];
    pid_t c[3];
    for (int i = 0; i < 3; i++)
        c[i] = held_child(&w[i], i);
    say("SIG_IGN: waitpid(WNOHANG) with children running", waitpid(-1, NULL, WNOHANG));
    for (int i = 0; i < 3; i++)
        close(w[i]);
    say("SIG_IGN: wait once they end", wait(NULL));
    for (int i = 0; i < 3; i++)
        say("SIG_IGN: kill(child, 0)", kill(c[i], 0));
    say("SIG_IGN: waitpid(WNOHANG) with none", waitpid(-1, NULL, WNOHANG));
    // A wait for one child by pid, and waitid.
    int w1;
    pid_t one = held_child(&w1, 5);
    close(w1);
    say("SIG_IGN: waitpid(that child)", waitpid(one, NULL, 0));
    held_child(&w1, 6);
    close(w1);
    siginfo_t si;
    say("SIG_IGN: waitid(P_ALL, WEXITED)", waitid(P_ALL, 0, &si, WEXITED));

    // SIG_DFL again: a zombie to wait for.
    signal(SIGCHLD, SIG_DFL);
    pid_t z = held_child(&w1, 7);
    close(w1);
    int st = 0;
    say("SIG_DFL: waitpid found the child", waitpid(z, &st, 0) == z);
    say("SIG_DFL: its status", WEXITSTATUS(st));

    // SA_NOCLDWAIT with a handler: no zombie, and SIGCHLD comes (blocked
    // here, so that it is seen pending after the wait).
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_NOCLDWAIT;
    sigaction(SIGCHLD, &sa, NULL);
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, &old);
    held_child(&w1, 8);
    close(w1);
    say("SA_NOCLDWAIT: wait", wait(NULL));
    sigset_t pend;
    sigpending(&pend);
    say("SA_NOCLDWAIT: SIGCHLD pending", sigismember(&pend, SIGCHLD));
    sigprocmask(SIG_SETMASK, &old, NULL);
    say("SA_NOCLDWAIT: handler ran", chld);

    // SA_NOCLDWAIT with SIG_DFL: no zombie either.
    sa.sa_handler = SIG_DFL;
    sigaction(SIGCHLD, &sa, NULL);
    held_child(&w1, 9);
    close(w1);
    say("SA_NOCLDWAIT and SIG_DFL: wait", wait(NULL));

    // Across execve: SIG_IGN stays; SA_NOCLDWAIT (with a handler) goes.
    signal(SIGCHLD, SIG_IGN);
    exec_self("exec-ignored");
    sa.sa_handler = on_chld;
    sa.sa_flags = SA_NOCLDWAIT;
    sigaction(SIGCHLD, &sa, NULL);
    exec_self("exec-nocldwait");
    return 0;
}
