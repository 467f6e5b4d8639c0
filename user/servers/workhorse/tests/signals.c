/* Signals: handlers (with and without SA_SIGINFO) run and return to the
 * interrupted code, masks hold signals back until unblocked, sigsuspend,
 * SIGCHLD, SIGPIPE ignored, a handler that exits, a handler reaching a
 * process busy in a loop, abort(). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got_usr1, got_usr2, info_signo, chld;

static void on_usr1(int sig) { got_usr1 += sig == SIGUSR1; }
static void on_usr2(int sig, siginfo_t *si, void *uc) { (void)sig; (void)uc; info_signo = si->si_signo; got_usr2++; }
static void on_chld(int sig) { (void)sig; chld++; }
static void on_term(int sig) { (void)sig; _exit(42); }

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct sigaction sa = {0};
    sa.sa_handler = on_usr1;
    sigaction(SIGUSR1, &sa, NULL);
    long before = 1234567;
    kill(getpid(), SIGUSR1);
    printf("handler ran: %d, locals kept: %d\n", got_usr1, before == 1234567);

    struct sigaction si = {0};
    si.sa_sigaction = on_usr2;
    si.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR2, &si, NULL);
    raise(SIGUSR2);
    printf("SA_SIGINFO handler: %d signo %d\n", got_usr2, info_signo);

    sigset_t block, old, pend;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigprocmask(SIG_BLOCK, &block, &old);
    kill(getpid(), SIGUSR1);
    sigpending(&pend);
    printf("blocked: handler ran %d more, pending %d\n", got_usr1 - 1, sigismember(&pend, SIGUSR1));
    sigprocmask(SIG_SETMASK, &old, NULL);
    printf("unblocked: handler ran %d more\n", got_usr1 - 1);

    sigprocmask(SIG_BLOCK, &block, &old);
    pid_t c = fork();
    if (c == 0) {
        kill(getppid(), SIGUSR1);
        _exit(0);
    }
    sigset_t wait_mask;
    sigemptyset(&wait_mask);
    int r = sigsuspend(&wait_mask);
    printf("sigsuspend: %d %s, handler ran %d more\n", r, strerror(errno), got_usr1 - 2);
    sigset_t now;
    sigprocmask(SIG_SETMASK, NULL, &now);
    printf("mask restored after sigsuspend: %d\n", sigismember(&now, SIGUSR1));
    sigprocmask(SIG_SETMASK, &old, NULL);
    waitpid(c, NULL, 0);

    struct sigaction sc = {0};
    sc.sa_handler = on_chld;
    sigaction(SIGCHLD, &sc, NULL);
    for (int i = 0; i < 3; i++) {
        c = fork();
        if (c == 0)
            _exit(i);
        waitpid(c, NULL, 0);
    }
    printf("SIGCHLD handler ran: %d\n", chld);

    signal(SIGPIPE, SIG_IGN);
    int fds[2];
    pipe(fds);
    close(fds[0]);
    r = write(fds[1], "x", 1);
    printf("write to a closed pipe with SIGPIPE ignored: %d %s\n", r, strerror(errno));

    int st;
    c = fork();
    if (c == 0) {
        signal(SIGTERM, on_term);
        sigset_t none;
        sigemptyset(&none);
        kill(getppid(), SIGUSR2);
        for (;;)
            pause();
    }
    /* Waits for the child's signal, so that its handler is in place. */
    while (got_usr2 < 2)
        pause();
    kill(c, SIGTERM);
    waitpid(c, &st, 0);
    printf("child's SIGTERM handler exited: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    /* A handler reaches a process that makes no system call. */
    c = fork();
    if (c == 0) {
        signal(SIGUSR1, on_usr1);
        got_usr1 = 0;
        kill(getppid(), SIGUSR2);
        while (!got_usr1)
            ;
        _exit(7);
    }
    while (got_usr2 < 3)
        pause();
    kill(c, SIGUSR1);
    waitpid(c, &st, 0);
    printf("busy child's handler ran: exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    c = fork();
    if (c == 0)
        abort();
    waitpid(c, &st, 0);
    printf("abort: signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}
