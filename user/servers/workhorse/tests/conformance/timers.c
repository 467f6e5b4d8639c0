/* Clocks and timers: CLOCK_REALTIME tells the time of day (after 2020,
 * with time and gettimeofday, advancing with CLOCK_MONOTONIC), absolute
 * clock_nanosleep on it; alarm and setitimer (ITIMER_REAL) deliver SIGALRM
 * to a process that runs, waits in pause, nanosleep, poll or read (EINTR,
 * or the read restarted with SA_RESTART), periodically; the old values
 * and the time left; the default action; fork does not inherit the alarm
 * and execve keeps it; timerfd (blocking and non-blocking read, periodic
 * counts, gettime, poll, epoll, absolute REALTIME, disarming, errors).
 * Only the order of events, results and bounds of the time left are
 * printed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
    (void)sig;
    alarms++;
}

static void handle(int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = flags;
    sigaction(SIGALRM, &sa, NULL);
}

static int64_t ns(clockid_t c)
{
    struct timespec t;
    clock_gettime(c, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void say(const char *what, long r)
{
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
}

/* setitimer(ITIMER_REAL) in ms, interval in ms. */
static int arm(long ms, long every)
{
    struct itimerval v = {{every / 1000, every % 1000 * 1000}, {ms / 1000, ms % 1000 * 1000}};
    return setitimer(ITIMER_REAL, &v, NULL);
}

static long left_us(void)
{
    struct itimerval v;
    getitimer(ITIMER_REAL, &v);
    return v.it_value.tv_sec * 1000000 + v.it_value.tv_usec;
}

static void clocks(void)
{
    int64_t real = ns(CLOCK_REALTIME);
    printf("CLOCK_REALTIME is after 2020: %d\n", real / 1000000000 > 1577836800);
    time_t t = time(NULL);
    struct timeval tv;
    gettimeofday(&tv, NULL);
    printf("time and gettimeofday agree with it: %d %d\n", labs(t - real / 1000000000) <= 2,
           labs(tv.tv_sec - real / 1000000000) <= 2);
    printf("CLOCK_REALTIME_COARSE agrees: %d\n", llabs(ns(CLOCK_REALTIME_COARSE) - real) < 1000000000);
    int64_t d0 = ns(CLOCK_REALTIME) - ns(CLOCK_MONOTONIC);
    usleep(50000);
    int64_t d1 = ns(CLOCK_REALTIME) - ns(CLOCK_MONOTONIC);
    printf("REALTIME and MONOTONIC advance together: %d\n", llabs(d1 - d0) < 20000000);
    printf("MONOTONIC and BOOTTIME count from about the same start: %d\n",
           llabs(ns(CLOCK_BOOTTIME) - ns(CLOCK_MONOTONIC)) < 1000000000LL * 3600);

    /* An absolute sleep on the real-time clock. */
    int64_t target = ns(CLOCK_REALTIME) + 100000000;
    struct timespec ts = {target / 1000000000, target % 1000000000};
    say("clock_nanosleep(REALTIME, TIMER_ABSTIME, now + 100 ms)", clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL));
    printf("woke at or after it: %d\n", ns(CLOCK_REALTIME) >= target);
    struct timespec past = {1, 0};
    say("clock_nanosleep to a time past", clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &past, NULL));
    int64_t mt = ns(CLOCK_MONOTONIC) + 30000000;
    struct timespec mts = {mt / 1000000000, mt % 1000000000};
    say("clock_nanosleep(MONOTONIC, TIMER_ABSTIME, now + 30 ms)", clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &mts, NULL));
    printf("woke at or after it: %d\n", ns(CLOCK_MONOTONIC) >= mt);
    /* clock_nanosleep answers its error as its result. */
    printf("clock_nanosleep on clock 10: %s\n", strerror(clock_nanosleep(10, 0, &past, NULL)));
    struct timespec bad = {0, 1000000000};
    printf("clock_nanosleep with tv_nsec of a second: %s\n", strerror(clock_nanosleep(CLOCK_MONOTONIC, 0, &bad, NULL)));
    say("clock_gettime of clock 10", clock_gettime(10, &ts));
}

static void alarm_and_itimers(const char *self)
{
    say("alarm(0) with none set", alarm(0));
    alarm(5);
    say("alarm(0) after alarm(5) gives its seconds left", alarm(0));
    printf("and none is left: %d\n", left_us() == 0);
    /* Timers far away (past a day; one past the clock's range). */
    alarm(200000);
    usleep(10000);
    say("alarm(0) after alarm(200000), over two days", alarm(0));
    struct itimerval far = {{0, 0}, {1000000000000LL, 0}};
    setitimer(ITIMER_REAL, &far, NULL);
    usleep(10000);
    printf("a timer 30,000 years away is armed: %d\n", left_us() > 0);
    alarm(0);

    /* pause, interrupted. */
    handle(0);
    alarms = 0;
    alarm(1);
    int r = pause();
    printf("pause: %d %s, alarms %d\n", r, strerror(errno), alarms);

    /* A process that runs (no system call) gets it. */
    alarms = 0;
    arm(50, 0);
    int64_t give_up = ns(CLOCK_MONOTONIC) + 10000000000LL;
    while (!alarms && ns(CLOCK_MONOTONIC) < give_up)
        for (volatile int i = 0; i < 100000; i++)
            ;
    printf("a running process gets SIGALRM: %d\n", alarms);

    /* nanosleep interrupted: EINTR and the time left, also with SA_RESTART. */
    for (int restart = 0; restart < 2; restart++) {
        handle(restart ? SA_RESTART : 0);
        alarms = 0;
        arm(100, 0);
        struct timespec d = {5, 0}, rem = {0, 0};
        r = nanosleep(&d, &rem);
        printf("nanosleep%s: %d %s, alarms %d, rem in (4 s, 5 s): %d\n", restart ? " (SA_RESTART)" : "", r,
               strerror(errno), alarms, rem.tv_sec == 4 && rem.tv_nsec > 0);
    }
    /* poll is never restarted. */
    handle(SA_RESTART);
    alarms = 0;
    arm(100, 0);
    r = poll(NULL, 0, 5000);
    printf("poll (SA_RESTART): %d %s, alarms %d\n", r, strerror(errno), alarms);

    /* read of a pipe: EINTR, or restarted with SA_RESTART. */
    for (int restart = 0; restart < 2; restart++) {
        int p[2];
        pipe(p);
        pid_t c = fork();
        if (c == 0) {
            usleep(400000);
            write(p[1], "x", 1);
            _exit(0);
        }
        handle(restart ? SA_RESTART : 0);
        alarms = 0;
        arm(100, 0);
        char b;
        errno = 0;
        r = read(p[0], &b, 1);
        printf("read of a pipe%s: %d %s, alarms %d\n", restart ? " (SA_RESTART)" : "", r, r < 0 ? strerror(errno) : "",
               alarms);
        waitpid(c, NULL, 0);
        close(p[0]);
        close(p[1]);
    }

    /* Periodic: five signals, then disarmed. */
    handle(0);
    alarms = 0;
    sigset_t none;
    sigemptyset(&none);
    arm(20, 20);
    while (alarms < 5)
        sigsuspend(&none);
    struct itimerval v;
    getitimer(ITIMER_REAL, &v);
    printf("periodic: %d signals, interval %ld us, armed %d\n", alarms, (long)v.it_interval.tv_usec,
           v.it_value.tv_sec > 0 || v.it_value.tv_usec > 0);
    struct itimerval off = {{0, 0}, {0, 0}}, old;
    setitimer(ITIMER_REAL, &off, &old);
    printf("disarmed: old interval %ld us, now left %ld\n", (long)old.it_interval.tv_usec, left_us());

    /* The time left. */
    arm(10000, 0);
    long l = left_us();
    printf("getitimer after 10 s: left in (9 s, 10 s]: %d\n", l > 9000000 && l <= 10000000);
    setitimer(ITIMER_REAL, &off, &old);
    l = old.it_value.tv_sec * 1000000 + old.it_value.tv_usec;
    printf("setitimer's old value in (9 s, 10 s]: %d\n", l > 9000000 && l <= 10000000);
    say("setitimer(NULL) disarms", setitimer(ITIMER_REAL, NULL, &old));

    /* Errors. */
    struct itimerval badv = {{0, 0}, {0, 1000000}};
    say("setitimer with tv_usec of a second", setitimer(ITIMER_REAL, &badv, NULL));
    say("setitimer of timer 7", setitimer(7, &off, NULL));
    say("getitimer of timer 7", getitimer(7, &v));
    say("getitimer to a bad address", getitimer(ITIMER_REAL, (struct itimerval *)8));

    /* The default action ends the process. */
    pid_t c = fork();
    if (c == 0) {
        signal(SIGALRM, SIG_DFL);
        arm(50, 0);
        for (;;)
            pause();
    }
    int st;
    waitpid(c, &st, 0);
    printf("SIGALRM's default action: signaled %d by %d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);

    /* fork: the child has no alarm; the parent keeps its own. */
    handle(0);
    alarms = 0;
    arm(300, 0);
    c = fork();
    if (c == 0)
        _exit(left_us() == 0 ? 0 : 1);
    waitpid(c, &st, 0);
    printf("a forked child has no alarm: %d\n", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    while (!alarms)
        pause();
    printf("the parent's still comes: %d\n", alarms);

    /* execve keeps it: the new program finds it set and dies of it. */
    c = fork();
    if (c == 0) {
        signal(SIGALRM, SIG_DFL);
        arm(300, 0);
        execl(self, self, "/tmp", "exec-alarm", (char *)NULL);
        _exit(5);
    }
    waitpid(c, &st, 0);
    printf("after execve: signaled %d by %d\n", WIFSIGNALED(st), WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static void timerfds(void)
{
    struct itimerspec off = {{0, 0}, {0, 0}}, cur;
    uint64_t n = 0;
    int fd = timerfd_create(CLOCK_MONOTONIC, 0);
    printf("timerfd_create: %d\n", fd >= 0);
    timerfd_gettime(fd, &cur);
    printf("a new one is disarmed: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    struct itimerspec once = {{0, 0}, {0, 50000000}};
    say("timerfd_settime 50 ms", timerfd_settime(fd, 0, &once, NULL));
    int64_t t0 = ns(CLOCK_MONOTONIC);
    say("read", read(fd, &n, 8));
    printf("one expiry: %llu, after 50 ms: %d\n", (unsigned long long)n, ns(CLOCK_MONOTONIC) - t0 >= 45000000);
    int fl = fcntl(fd, F_GETFL);
    fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    say("read again, non-blocking", read(fd, &n, 8));
    fcntl(fd, F_SETFL, fl);

    struct itimerspec every = {{0, 20000000}, {0, 20000000}};
    timerfd_settime(fd, 0, &every, NULL);
    usleep(105000);
    read(fd, &n, 8);
    printf("periodic 20 ms, read after 105 ms: at least 5 expiries: %d\n", n >= 5);
    timerfd_gettime(fd, &cur);
    printf("gettime: interval %ld ns, next within 20 ms: %d\n", cur.it_interval.tv_nsec,
           cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec > 0 && cur.it_value.tv_nsec <= 20000000);
    struct itimerspec ten = {{0, 0}, {10, 0}}, old;
    timerfd_settime(fd, 0, &ten, &old);
    printf("settime's old value: interval %ld ns\n", old.it_interval.tv_nsec);
    timerfd_gettime(fd, &cur);
    printf("10 s set, left in (9 s, 10 s]: %d\n",
           (cur.it_value.tv_sec == 9 && cur.it_value.tv_nsec > 0) || (cur.it_value.tv_sec == 10 && cur.it_value.tv_nsec == 0));
    timerfd_settime(fd, 0, &off, NULL);
    timerfd_gettime(fd, &cur);
    printf("disarmed: %d\n", cur.it_value.tv_sec == 0 && cur.it_value.tv_nsec == 0);
    close(fd);

    /* poll and epoll. */
    fd = timerfd_create(CLOCK_BOOTTIME, TFD_NONBLOCK | TFD_CLOEXEC);
    printf("TFD_NONBLOCK: %d, TFD_CLOEXEC: %d\n", (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0, fcntl(fd, F_GETFD) == FD_CLOEXEC);
    say("read before it expires", read(fd, &n, 8));
    struct pollfd p = {fd, POLLIN, 0};
    say("poll of an armed-later one, no wait", poll(&p, 1, 0));
    timerfd_settime(fd, 0, &once, NULL);
    say("poll until it expires", poll(&p, 1, 5000));
    printf("revents POLLIN: %d\n", p.revents == POLLIN);
    say("read", read(fd, &n, 8));
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 77}, got[2];
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    timerfd_settime(fd, 0, &once, NULL);
    int k = epoll_wait(ep, got, 2, 5000);
    printf("epoll_wait: %d, data %llu, EPOLLIN %d\n", k, (unsigned long long)got[0].data.u64, got[0].events == EPOLLIN);
    read(fd, &n, 8);
    say("epoll_wait once read, no wait", epoll_wait(ep, got, 2, 0));
    close(ep);
    close(fd);

    /* An absolute time on the real-time clock. */
    fd = timerfd_create(CLOCK_REALTIME, 0);
    int64_t target = ns(CLOCK_REALTIME) + 100000000;
    struct itimerspec at = {{0, 0}, {target / 1000000000, target % 1000000000}};
    say("settime REALTIME, TFD_TIMER_ABSTIME, now + 100 ms", timerfd_settime(fd, TFD_TIMER_ABSTIME, &at, NULL));
    say("read", read(fd, &n, 8));
    printf("expired at or after it: %d\n", ns(CLOCK_REALTIME) >= target);
    struct itimerspec past = {{0, 0}, {1, 0}};
    timerfd_settime(fd, TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET, &past, NULL);
    say("a time past expires at once", read(fd, &n, 8));

    /* Errors. */
    say("timerfd_create(CLOCK_PROCESS_CPUTIME_ID)", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
    say("timerfd_create with a bad flag", timerfd_create(CLOCK_MONOTONIC, 1));
    struct itimerspec bad = {{0, 0}, {0, 1000000000}};
    say("settime with tv_nsec of a second", timerfd_settime(fd, 0, &bad, NULL));
    say("settime with a bad flag", timerfd_settime(fd, 8, &once, NULL));
    say("settime from a bad address", timerfd_settime(fd, 0, (struct itimerspec *)8, NULL));
    int pp[2];
    pipe(pp);
    say("settime of a pipe", timerfd_settime(pp[0], 0, &once, NULL));
    say("gettime of a bad descriptor", timerfd_gettime(99, &cur));
    say("read of 4 bytes", read(fd, &n, 4));
    say("write", write(fd, &n, 8));
    close(pp[0]);
    close(pp[1]);
    close(fd);
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[2], "exec-alarm") == 0) {
        /* After execve: the alarm is still set; it ends this program. */
        if (left_us() == 0)
            return 3;
        for (;;)
            pause();
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = 0;
    clocks();
    alarm_and_itimers(self);
    timerfds();
    return 0;
}
