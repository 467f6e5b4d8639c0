// CPU-time clocks: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID
// (resolution, never going back, advancing while the process computes, even
// for microseconds, and hardly while it sleeps), getrusage (self, thread, children), times and
// wait4's rusage agreeing with them, a thread's clock (its own, through
// pthread_getcpuclockid, and the process's taking it in while the main
// thread waits), another process's clock (clock_getcpuclockid), and the
// errors.  Only comparisons are printed: the amounts differ on every run.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/times.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MS 1000000LL

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

static void yes(const char *what, int cond) {
    printf("%s: %s\n", what, cond ? "yes" : "no");
    fflush(stdout);
}

static long long ns(clockid_t c) {
    struct timespec t;
    if (clock_gettime(c, &t))
        return -1;
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static long long tv(struct timeval t) {
    return t.tv_sec * 1000000000LL + t.tv_usec * 1000LL;
}

static long long rusage_ns(int who) {
    struct rusage r;
    if (getrusage(who, &r))
        return -1;
    return tv(r.ru_utime) + tv(r.ru_stime);
}

static int monotonic = 1;

// Computes until `clock` has advanced by `amount` (or a minute of real
// time has gone: then it says so); notes whether it ever went back.
static int burn(clockid_t clock, long long amount) {
    long long start = ns(clock), last = start, wall = ns(CLOCK_MONOTONIC);
    volatile unsigned long x = 1;
    for (;;) {
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005UL + 1;
        long long t = ns(clock);
        if (t < last)
            monotonic = 0;
        last = t;
        if (t - start >= amount)
            return 1;
        if (ns(CLOCK_MONOTONIC) - wall > 60000 * MS)
            return 0;
    }
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

static void *burner(void *arg) {
    (void)arg;
    int ok = burn(CLOCK_THREAD_CPUTIME_ID, 60 * MS);
    pthread_mutex_lock(&m);
    stage = ok ? 1 : 2;
    pthread_cond_broadcast(&cv);
    while (stage != 3)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    return NULL;
}

int main(void) {
    struct timespec res;
    say("clock_getres(CLOCK_PROCESS_CPUTIME_ID)", clock_getres(CLOCK_PROCESS_CPUTIME_ID, &res));
    yes("its resolution is at most 10 ms", res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10 * MS);
    say("its resolution in ns", res.tv_nsec);
    say("clock_getres(CLOCK_THREAD_CPUTIME_ID)", clock_getres(CLOCK_THREAD_CPUTIME_ID, &res));
    yes("its resolution is at most 10 ms", res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10 * MS);
    say("its resolution in ns", res.tv_nsec);

    // Each of 20 short computations (10,000 steps: microseconds) advances
    // both clocks: they count the time run, not ticks of a coarser clock.
    int fine_p = 1, fine_t = 1;
    for (int round = 0; round < 20; round++) {
        long long p = ns(CLOCK_PROCESS_CPUTIME_ID), t = ns(CLOCK_THREAD_CPUTIME_ID);
        volatile unsigned long x = 1;
        for (int i = 0; i < 10000; i++)
            x = x * 6364136223846793005UL + 1;
        if (ns(CLOCK_PROCESS_CPUTIME_ID) <= p)
            fine_p = 0;
        if (ns(CLOCK_THREAD_CPUTIME_ID) <= t)
            fine_t = 0;
    }
    yes("a short computation advances the process clock", fine_p);
    yes("and the thread clock", fine_t);

    // Computing advances both clocks; sleeping hardly either.
    long long p0 = ns(CLOCK_PROCESS_CPUTIME_ID), t0 = ns(CLOCK_THREAD_CPUTIME_ID);
    yes("computing advances the process clock by 50 ms", burn(CLOCK_PROCESS_CPUTIME_ID, 50 * MS));
    long long p1 = ns(CLOCK_PROCESS_CPUTIME_ID), t1 = ns(CLOCK_THREAD_CPUTIME_ID);
    yes("the thread clock with it", t1 - t0 >= 40 * MS);
    yes("and never back", monotonic && p1 >= p0 && t1 >= t0);
    struct tms tm0, tm1;
    clock_t c0 = times(&tm0);
    struct timespec nap = {0, 300 * MS};
    nanosleep(&nap, NULL);
    clock_t c1 = times(&tm1);
    long long p2 = ns(CLOCK_PROCESS_CPUTIME_ID);
    yes("300 ms asleep take less than 100 ms of CPU time", p2 - p1 < 100 * MS);
    yes("times' return value advances across the sleep", c1 - c0 >= 25);
    long long ticks = sysconf(_SC_CLK_TCK);
    say("_SC_CLK_TCK", ticks);
    long long tms_ns = (tm1.tms_utime + tm1.tms_stime) * (1000000000LL / ticks);
    yes("times' user and system time is the process clock's (to a tick)",
        tms_ns >= 40 * MS && tms_ns <= ns(CLOCK_PROCESS_CPUTIME_ID) + 10 * MS);
    long long self = rusage_ns(RUSAGE_SELF);
    yes("RUSAGE_SELF is the process clock's", self >= 45 * MS && self <= ns(CLOCK_PROCESS_CPUTIME_ID) + MS);
    long long thr = rusage_ns(RUSAGE_THREAD);
    yes("RUSAGE_THREAD is the thread clock's", thr >= 40 * MS && thr <= ns(CLOCK_THREAD_CPUTIME_ID) + MS);
    say("RUSAGE_CHILDREN before any child", rusage_ns(RUSAGE_CHILDREN));
    yes("times' children's time before any child", tm1.tms_cutime + tm1.tms_cstime == 0);

    // Children: one waited for with waitpid (RUSAGE_CHILDREN, times), one
    // with wait4 (its rusage).
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(burn(CLOCK_PROCESS_CPUTIME_ID, 60 * MS) ? 0 : 1);
    clockid_t cc;
    int e = clock_getcpuclockid(c, &cc);
    say("clock_getcpuclockid(child)", e);
    yes("the child's clock is readable", e == 0 && ns(cc) >= 0);
    int st;
    waitpid(c, &st, 0);
    say("child computed 60 ms", WIFEXITED(st) && WEXITSTATUS(st) == 0);
    long long ch = rusage_ns(RUSAGE_CHILDREN);
    yes("RUSAGE_CHILDREN has the child's", ch >= 50 * MS);
    struct tms tm2;
    times(&tm2);
    yes("times' children's time has it", (tm2.tms_cutime + tm2.tms_cstime) * (1000000000LL / ticks) >= 40 * MS);
    c = fork();
    if (c == 0)
        _exit(burn(CLOCK_PROCESS_CPUTIME_ID, 60 * MS) ? 0 : 1);
    struct rusage ru;
    say("wait4", wait4(c, &st, 0, &ru) == c);
    yes("wait4's rusage has the child's", tv(ru.ru_utime) + tv(ru.ru_stime) >= 50 * MS);
    yes("RUSAGE_CHILDREN has both", rusage_ns(RUSAGE_CHILDREN) >= ch + 50 * MS);
    e = clock_getcpuclockid(c, &cc);
    say("clock_getcpuclockid(the child waited for)", e);

    // A thread computes while the main thread waits.
    long long mt0 = ns(CLOCK_THREAD_CPUTIME_ID), mp0 = ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_t t;
    pthread_create(&t, NULL, burner, NULL);
    pthread_mutex_lock(&m);
    while (stage == 0)
        pthread_cond_wait(&cv, &m);
    pthread_mutex_unlock(&m);
    say("the thread computed 60 ms of its clock", stage == 1);
    clockid_t tc;
    say("pthread_getcpuclockid", pthread_getcpuclockid(t, &tc));
    yes("its clock read from the main thread", ns(tc) >= 60 * MS);
    yes("the main thread's clock, waiting, hardly moved", ns(CLOCK_THREAD_CPUTIME_ID) - mt0 < 30 * MS);
    yes("the process clock has the thread's", ns(CLOCK_PROCESS_CPUTIME_ID) - mp0 >= 60 * MS);
    clockid_t own;
    say("clock_getcpuclockid(0)", clock_getcpuclockid(0, &own));
    long long by_id = ns(own);
    yes("our clock by id is the process clock", by_id >= mp0 && by_id <= ns(CLOCK_PROCESS_CPUTIME_ID));
    long long before_join = ns(CLOCK_PROCESS_CPUTIME_ID);
    pthread_mutex_lock(&m);
    stage = 3;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&m);
    pthread_join(t, NULL);
    yes("the process clock keeps an ended thread's time", ns(CLOCK_PROCESS_CPUTIME_ID) >= before_join);
    yes("and never went back", monotonic);

    // Errors.
    struct timespec ts;
    clockid_t bad = ((~(clockid_t)getpid()) << 3) | 3;
    errno = 0;
    say("clock_gettime(kind 3)", syscall(SYS_clock_gettime, bad, &ts));
    say("clock_gettime(no such process)", syscall(SYS_clock_gettime, ((~(clockid_t)999999) << 3) | 2, &ts));
    say("clock_gettime(another process's thread)", syscall(SYS_clock_gettime, ((~(clockid_t)c) << 3) | 6, &ts));
    say("clock_gettime(a bad pointer)", syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, (void *)8));
    say("clock_getres(no such process)", syscall(SYS_clock_getres, ((~(clockid_t)999999) << 3) | 2, &ts));
    say("clock_getres(NULL)", syscall(SYS_clock_getres, CLOCK_THREAD_CPUTIME_ID, NULL));
    say("clock_settime(CLOCK_PROCESS_CPUTIME_ID)", syscall(SYS_clock_settime, CLOCK_PROCESS_CPUTIME_ID, &ts));
    say("clock_nanosleep(CLOCK_THREAD_CPUTIME_ID)", clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &nap, NULL));
    say("getrusage(5)", syscall(SYS_getrusage, 5, &ru));
    say("getrusage(a bad pointer)", syscall(SYS_getrusage, RUSAGE_SELF, (void *)8));
    say("times(a bad pointer)", syscall(SYS_times, (void *)8));
    say("times(NULL) is a time", syscall(SYS_times, NULL) > 0);
    return 0;
}
