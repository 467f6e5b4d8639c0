// pidfds: pidfd_open (close-on-exec, PIDFD_NONBLOCK), poll and epoll on
// one (readable once the process has ended, hung up once it has been
// waited for), pidfd_send_signal (signal 0, a handler's signal, a fatal
// one, a siginfo, an ended process not yet waited for, one waited for),
// waitid(P_PIDFD) (exit and kill, EAGAIN for a non-blocking pidfd), and
// the errors of each.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef PIDFD_NONBLOCK
#define PIDFD_NONBLOCK O_NONBLOCK
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

static int pidfd_open(pid_t pid, unsigned flags) {
    return syscall(SYS_pidfd_open, pid, flags);
}

static int pidfd_send_signal(int fd, int sig, siginfo_t *info, unsigned flags) {
    return syscall(SYS_pidfd_send_signal, fd, sig, info, flags);
}

// What poll says of fd now (POLLRDNORM aside: not every kernel sets it).
static void poll_now(const char *what, int fd) {
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, 0);
    printf("%s: poll %d, revents%s%s%s\n", what, n, p.revents & POLLIN ? " POLLIN" : "",
           p.revents & POLLHUP ? " POLLHUP" : "", p.revents & (POLLERR | POLLNVAL) ? " POLLERR/NVAL" : "");
    fflush(stdout);
}

// A child that ends with `code` once the pipe's write end closes.
static pid_t held_child(int *wfd, int code) {
    int p[2];
    if (pipe(p))
        exit(90);
    fflush(stdout);
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

static int report_fd = -1;
static void on_usr1(int sig) {
    (void)sig;
    if (write(report_fd, "u", 1) != 1)
        _exit(92);
}

static void *idle(void *arg) {
    *(pid_t *)arg = gettid();
    pause();
    return NULL;
}

static void waitid_report(const char *what, int fd, int options) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PIDFD, fd, &si, options);
    if (r < 0) {
        say(what, r);
        return;
    }
    printf("%s: 0, si_code %s, si_status %d\n", what,
           si.si_code == CLD_EXITED ? "CLD_EXITED" : si.si_code == CLD_KILLED ? "CLD_KILLED" : "other",
           si.si_status);
    fflush(stdout);
}

int main(void) {
    // Our own process group (for PIDFD_SIGNAL_PROCESS_GROUP below); the
    // session leader Keep starts it as is one already (EPERM).
    setpgid(0, 0);
    // Our own: running, close-on-exec.
    int self = pidfd_open(getpid(), 0);
    say("pidfd_open(getpid())", self >= 0);
    say("close-on-exec", fcntl(self, F_GETFD) & FD_CLOEXEC);
    poll_now("our own pidfd", self);
    char b[8];
    say("read of a pidfd", read(self, b, sizeof b));
    say("pidfd_send_signal(our own, 0)", pidfd_send_signal(self, 0, NULL, 0));
    say("waitid(P_PIDFD, our own)", waitid(P_PIDFD, self, &(siginfo_t){0}, WEXITED));

    // A child that exits: readable at its end, hung up once waited for.
    int w;
    pid_t c = held_child(&w, 7);
    int fd = pidfd_open(c, 0);
    say("pidfd_open(child)", fd >= 0);
    poll_now("child running", fd);
    say("pidfd_send_signal(child, 0)", pidfd_send_signal(fd, 0, NULL, 0));
    close(w);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    say("poll until it ends", poll(&p, 1, -1));
    poll_now("child ended", fd);
    say("pidfd_send_signal(ended child, SIGKILL)", pidfd_send_signal(fd, SIGKILL, NULL, 0));
    waitid_report("waitid(P_PIDFD, WEXITED)", fd, WEXITED);
    poll_now("child waited for", fd);
    say("pidfd_send_signal(waited for)", pidfd_send_signal(fd, 0, NULL, 0));
    waitid_report("waitid(P_PIDFD) again", fd, WEXITED);
    say("pidfd_open(its pid now)", pidfd_open(c, 0));
    close(fd);

    // A child ended but not waited for: pidfd_open still finds it.
    c = held_child(&w, 3);
    close(w);
    siginfo_t si;
    waitid(P_PID, c, &si, WEXITED | WNOWAIT);
    fd = pidfd_open(c, 0);
    say("pidfd_open(ended child)", fd >= 0);
    poll_now("ended child's new pidfd", fd);
    waitid_report("waitid(P_PIDFD, WNOWAIT)", fd, WEXITED | WNOWAIT);
    waitid_report("waitid(P_PIDFD)", fd, WEXITED);
    close(fd);

    // Signals: a handler's, then a fatal one.
    int r[2];
    if (pipe(r))
        return 1;
    fflush(stdout);
    c = fork();
    if (c == 0) {
        report_fd = r[1];
        struct sigaction sa = {.sa_handler = on_usr1};
        sigaction(SIGUSR1, &sa, NULL);
        if (write(r[1], "r", 1) != 1)
            _exit(93);
        for (;;)
            pause();
    }
    fd = pidfd_open(c, PIDFD_NONBLOCK);
    say("pidfd_open(PIDFD_NONBLOCK)", fd >= 0);
    say("O_NONBLOCK", (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
    char got = 0;
    say("child ready", read(r[0], &got, 1) == 1 && got == 'r');
    waitid_report("waitid(non-blocking pidfd, child running)", fd, WEXITED);
    waitid_report("waitid(non-blocking pidfd, WNOHANG)", fd, WEXITED | WNOHANG);
    say("pidfd_send_signal(SIGUSR1)", pidfd_send_signal(fd, SIGUSR1, NULL, 0));
    say("handler ran", read(r[0], &got, 1) == 1 && got == 'u');
    siginfo_t info;
    memset(&info, 0, sizeof info);
    info.si_signo = SIGUSR2;
    info.si_code = SI_QUEUE;
    say("siginfo of another signal", pidfd_send_signal(fd, SIGUSR1, &info, 0));
    info.si_signo = SIGUSR1;
    info.si_code = SI_USER;
    say("siginfo with SI_USER to another process", pidfd_send_signal(fd, SIGUSR1, &info, 0));
    info.si_code = SI_QUEUE;
    say("siginfo with SI_QUEUE", pidfd_send_signal(fd, SIGUSR1, &info, 0));
    say("its handler ran", read(r[0], &got, 1) == 1 && got == 'u');
    // epoll sees it end.
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 42};
    say("epoll_ctl(pidfd)", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
    say("epoll_wait, running", epoll_wait(ep, &ev, 1, 0));
    say("pidfd_send_signal(SIGTERM)", pidfd_send_signal(fd, SIGTERM, NULL, 0));
    int n = epoll_wait(ep, &ev, 1, -1);
    printf("epoll_wait, ended: %d, data %u, EPOLLIN %d\n", n, ev.data.u32, (ev.events & EPOLLIN) != 0);
    waitid_report("waitid(P_PIDFD) of the killed child", fd, WEXITED);
    close(ep);
    close(fd);

    // Errors.
    say("pidfd_open(0)", pidfd_open(0, 0));
    say("pidfd_open(-1)", pidfd_open(-1, 0));
    say("pidfd_open(getpid(), 1)", pidfd_open(getpid(), 1));
    pthread_t t;
    pid_t tid = 0;
    pthread_create(&t, NULL, idle, &tid);
    while (__atomic_load_n(&tid, __ATOMIC_SEQ_CST) == 0)
        sched_yield();
    say("pidfd_open(a thread's id)", pidfd_open(tid, 0));
    say("pidfd_send_signal(999)", pidfd_send_signal(999, 0, NULL, 0));
    say("pidfd_send_signal(a pipe)", pidfd_send_signal(r[0], 0, NULL, 0));
    say("pidfd_send_signal(sig 65)", pidfd_send_signal(self, 65, NULL, 0));
    say("pidfd_send_signal(sig -1)", pidfd_send_signal(self, -1, NULL, 0));
    say("pidfd_send_signal(flags 8)", pidfd_send_signal(self, 0, NULL, 8));
    say("pidfd_send_signal(flags 3)", pidfd_send_signal(self, 0, NULL, 3));
    say("pidfd_send_signal(bad siginfo)", pidfd_send_signal(self, SIGUSR1, (siginfo_t *)8, 0));
    say("waitid(P_PIDFD, -1)", waitid(P_PIDFD, -1, &si, WEXITED));
    say("waitid(P_PIDFD, a pipe)", waitid(P_PIDFD, r[0], &si, WEXITED));
    say("waitid(P_PIDFD, 999)", waitid(P_PIDFD, 999, &si, WEXITED));
    // A signal to ourselves through our pidfd: a handler's, with a siginfo
    // of SI_QUEUE; then SIG_IGN'd SIGUSR2 (nothing happens).
    report_fd = r[1];
    struct sigaction sa = {.sa_handler = on_usr1};
    sigaction(SIGUSR1, &sa, NULL);
    say("pidfd_send_signal(ourselves, SIGUSR1)", pidfd_send_signal(self, SIGUSR1, NULL, 0));
    say("our handler ran", read(r[0], &got, 1) == 1 && got == 'u');
    say("PIDFD_SIGNAL_THREAD to ourselves", pidfd_send_signal(self, SIGUSR1, NULL, 1));
    say("our handler ran", read(r[0], &got, 1) == 1 && got == 'u');
    say("PIDFD_SIGNAL_PROCESS_GROUP to ourselves", pidfd_send_signal(self, SIGUSR1, NULL, 4));
    say("our handler ran", read(r[0], &got, 1) == 1 && got == 'u');
    signal(SIGUSR2, SIG_IGN);
    say("pidfd_send_signal(ourselves, ignored)", pidfd_send_signal(self, SIGUSR2, NULL, 0));
    return 0;
}
