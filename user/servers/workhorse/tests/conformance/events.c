#define _GNU_SOURCE
/* Waiting for descriptors: select, pselect6 (and its signal mask), ppoll
 * (and its mask), epoll (create1, ctl ADD/MOD/DEL and their errors, level-
 * and edge-triggered, one-shot, wait and pwait with and without time-out,
 * hang-up, a member closed, an epoll descriptor polled), each on pipes and
 * regular files; a wait that blocks until a child writes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

static volatile int got_usr1;

static void on_usr1(int sig)
{
    (void)sig;
    got_usr1++;
}

static void show_events(const char *what, int n, struct epoll_event *ev)
{
    printf("%s: %d", what, n);
    if (n < 0)
        printf(" %s", strerror(errno));
    for (int i = 0; i < n; i++)
        printf(" [data %llu events %#x]", (unsigned long long)ev[i].data.u64, ev[i].events);
    printf("\n");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2 || chdir(argv[1]) < 0)
        return 2;
    int p[2];
    pipe(p);
    char b[64];

    /* select */
    fd_set r, w;
    struct timeval tv = {0, 0};
    FD_ZERO(&r);
    FD_SET(p[0], &r);
    show("select on an empty pipe, no wait", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("read end still in the set: %d\n", FD_ISSET(p[0], &r));
    FD_SET(p[0], &r);
    tv = (struct timeval){0, 10000};
    show("select on an empty pipe, 10 ms", select(p[0] + 1, &r, NULL, NULL, &tv));
    printf("time left: %ld %ld\n", (long)tv.tv_sec, (long)tv.tv_usec);
    write(p[1], "x", 1);
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(p[0], &r);
    FD_SET(p[1], &w);
    show("select, data in the pipe (read end) and the write end", select(p[1] + 1, &r, &w, NULL, NULL));
    printf("readable %d writable %d\n", FD_ISSET(p[0], &r), FD_ISSET(p[1], &w));
    int f = open("events.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    FD_ZERO(&r);
    FD_ZERO(&w);
    FD_SET(f, &r);
    FD_SET(f, &w);
    show("select on a regular file", select(f + 1, &r, &w, NULL, NULL));
    FD_ZERO(&r);
    FD_SET(40, &r);
    show("select on a closed descriptor", select(41, &r, NULL, NULL, NULL));
    show("select with nfds -1", select(-1, NULL, NULL, NULL, NULL));
    read(p[0], b, sizeof b);

    /* pselect6 and ppoll with a mask that lets a pending signal in */
    signal(SIGUSR1, on_usr1);
    sigset_t block, none;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    sigemptyset(&none);
    sigprocmask(SIG_BLOCK, &block, NULL);
    kill(getpid(), SIGUSR1);
    FD_ZERO(&r);
    FD_SET(p[0], &r);
    struct timespec ts = {1, 0};
    show("pselect with SIGUSR1 pending, unblocked by its mask", pselect(p[0] + 1, &r, NULL, NULL, &ts, &none));
    printf("handler ran: %d\n", got_usr1);
    sigset_t now;
    sigprocmask(SIG_BLOCK, NULL, &now);
    printf("SIGUSR1 blocked again after: %d\n", sigismember(&now, SIGUSR1));
    kill(getpid(), SIGUSR1);
    struct pollfd pf = {p[0], POLLIN, 0};
    show("ppoll with SIGUSR1 pending, unblocked by its mask", ppoll(&pf, 1, &ts, &none));
    printf("handler ran: %d\n", got_usr1);
    ts = (struct timespec){0, 10000000};
    show("ppoll with a mask that blocks it, 10 ms", ppoll(&pf, 1, &ts, &block));
    ts = (struct timespec){0, 0};
    show("pselect, nothing ready, no wait", pselect(p[0] + 1, &r, NULL, NULL, &ts, &block));
    sigprocmask(SIG_UNBLOCK, &block, NULL);

    /* epoll */
    int ep = epoll_create1(EPOLL_CLOEXEC);
    printf("epoll_create1(EPOLL_CLOEXEC): close-on-exec %d\n", fcntl(ep, F_GETFD) & FD_CLOEXEC);
    show("epoll_create(0)", epoll_create(0));
    show("epoll_create1(bad flags)", epoll_create1(1));
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1001}, out[8];
    show("ADD the read end", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    show("ADD it again", epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &ev));
    show("MOD a descriptor not in the set", epoll_ctl(ep, EPOLL_CTL_MOD, p[1], &ev));
    show("DEL a descriptor not in the set", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
    show("ADD the epoll descriptor to itself", epoll_ctl(ep, EPOLL_CTL_ADD, ep, &ev));
    show("ADD a regular file", epoll_ctl(ep, EPOLL_CTL_ADD, f, &ev));
    show("ADD a closed descriptor", epoll_ctl(ep, EPOLL_CTL_ADD, 40, &ev));
    show("ctl on a pipe, not an epoll", epoll_ctl(p[0], EPOLL_CTL_ADD, p[1], &ev));
    show("unknown op", epoll_ctl(ep, 9, p[0], &ev));
    show_events("wait, nothing ready, no wait", epoll_wait(ep, out, 8, 0), out);
    show_events("wait, nothing ready, 10 ms", epoll_wait(ep, out, 8, 10), out);
    show_events("wait with maxevents 0", epoll_wait(ep, out, 0, 0), out);
    write(p[1], "abc", 3);
    show_events("wait, data in the pipe", epoll_wait(ep, out, 8, -1), out);
    show_events("again (level-triggered: still ready)", epoll_wait(ep, out, 8, 0), out);
    read(p[0], b, sizeof b);
    show_events("after reading it all", epoll_wait(ep, out, 8, 0), out);

    ev = (struct epoll_event){.events = EPOLLIN | EPOLLET, .data.u64 = 1002};
    show("MOD to edge-triggered", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    write(p[1], "a", 1);
    show_events("edge: data came", epoll_wait(ep, out, 8, 0), out);
    show_events("edge: nothing new", epoll_wait(ep, out, 8, 0), out);
    write(p[1], "b", 1);
    show_events("edge: more data came", epoll_wait(ep, out, 8, 0), out);
    read(p[0], b, sizeof b);

    ev = (struct epoll_event){.events = EPOLLIN | EPOLLONESHOT, .data.u64 = 1003};
    show("MOD to one-shot", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    write(p[1], "c", 1);
    show_events("one-shot: first", epoll_wait(ep, out, 8, 0), out);
    show_events("one-shot: disarmed", epoll_wait(ep, out, 8, 0), out);
    show("MOD re-arms it", epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev));
    show_events("one-shot: re-armed", epoll_wait(ep, out, 8, 0), out);
    read(p[0], b, sizeof b);

    ev = (struct epoll_event){.events = EPOLLOUT, .data.u64 = 2001};
    show("ADD the write end for EPOLLOUT", epoll_ctl(ep, EPOLL_CTL_ADD, p[1], &ev));
    show_events("the write end is writable", epoll_wait(ep, out, 8, 0), out);
    show("DEL the write end", epoll_ctl(ep, EPOLL_CTL_DEL, p[1], NULL));
    show_events("after DEL", epoll_wait(ep, out, 8, 0), out);

    struct pollfd epf = {ep, POLLIN, 0};
    write(p[1], "d", 1);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = 1004};
    epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &ev);
    show("poll on the epoll descriptor with a member ready", poll(&epf, 1, 0));
    printf("revents %#x\n", epf.revents);
    read(p[0], b, sizeof b);
    show("poll on it with none ready", poll(&epf, 1, 0));

    /* Blocks until a child writes, then sees the hang-up. */
    int q[2], hold[2];
    pipe(q);
    pipe(hold);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = 3001};
    epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        struct timespec d = {0, 30000000};
        nanosleep(&d, NULL);
        write(q[1], "late", 4);
        close(hold[1]);
        read(hold[0], b, 1); /* until the parent has seen the data */
        _exit(0);
    }
    close(q[1]);
    close(hold[0]);
    show_events("wait until the child writes", epoll_wait(ep, out, 8, 5000), out);
    close(hold[1]);
    waitpid(c, NULL, 0);
    read(q[0], b, sizeof b);
    show_events("the writer is gone: hang-up", epoll_wait(ep, out, 8, 0), out);

    /* pwait with a mask letting a pending signal in. */
    sigprocmask(SIG_BLOCK, &block, NULL);
    kill(getpid(), SIGUSR1);
    epoll_ctl(ep, EPOLL_CTL_DEL, q[0], NULL);
    show_events("epoll_pwait, SIGUSR1 let in", epoll_pwait(ep, out, 8, 1000, &none), out);
    printf("handler ran: %d\n", got_usr1);
    sigprocmask(SIG_UNBLOCK, &block, NULL);

    /* A member closed leaves the set. */
    int s[2];
    pipe(s);
    ev = (struct epoll_event){.events = EPOLLIN, .data.u64 = 4001};
    epoll_ctl(ep, EPOLL_CTL_ADD, s[0], &ev);
    write(s[1], "z", 1);
    close(s[0]);
    show_events("a ready member closed", epoll_wait(ep, out, 8, 0), out);
    close(p[0]);
    close(p[1]);
    close(q[0]);
    close(ep);
    close(f);
    unlink("events.txt");
    return 0;
}
