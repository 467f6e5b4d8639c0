#define _GNU_SOURCE
/* futex: WAIT with a value that changed (EAGAIN), WAIT with a time-out
 * (ETIMEDOUT), WAKE counts, private and shared variants, WAIT_BITSET and
 * WAKE_BITSET masks, an absolute time-out, a bad address (EFAULT) and an
 * unknown operation (ENOSYS), and waiters in threads woken one by one. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long futex(void *addr, int op, uint32_t val, const struct timespec *ts, void *addr2, uint32_t val3)
{
    return syscall(SYS_futex, addr, op, val, ts, addr2, val3);
}

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

static _Atomic uint32_t word;
static atomic_int waiting, woken;

struct waiter {
    int op;
    uint32_t bitset;
    long result;
};

static void *wait_thread(void *arg)
{
    struct waiter *w = arg;
    atomic_fetch_add(&waiting, 1);
    w->result = futex(&word, w->op, 0, NULL, NULL, w->bitset);
    atomic_fetch_add(&woken, 1);
    return NULL;
}

/* Until `n` threads wait in the server (they said so, then had time to
 * make the call: each yields). */
static void settle(int n)
{
    while (atomic_load(&waiting) < n)
        sched_yield();
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    uint32_t v = 1;
    show("WAIT with the value changed", futex(&v, FUTEX_WAIT, 2, NULL, NULL, 0));
    show("WAIT_PRIVATE with the value changed", futex(&v, FUTEX_WAIT_PRIVATE, 2, NULL, NULL, 0));
    struct timespec ts = {0, 20 * 1000 * 1000};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    show("WAIT 20 ms, nobody wakes", futex(&v, FUTEX_WAIT_PRIVATE, 1, &ts, NULL, 0));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
    printf("waited at least 20 ms: %d\n", ms >= 19);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct timespec abs = t0;
    abs.tv_nsec += 20 * 1000 * 1000;
    if (abs.tv_nsec >= 1000000000) {
        abs.tv_sec++;
        abs.tv_nsec -= 1000000000;
    }
    show("WAIT_BITSET to an absolute monotonic time", futex(&v, FUTEX_WAIT_BITSET_PRIVATE, 1, &abs, NULL,
                                                             FUTEX_BITSET_MATCH_ANY));
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("reached the deadline: %d\n", t1.tv_sec > abs.tv_sec || (t1.tv_sec == abs.tv_sec && t1.tv_nsec >= abs.tv_nsec - 1000000));
    struct timespec bad = {0, 2000000000};
    show("WAIT with a bad time-out", futex(&v, FUTEX_WAIT, 1, &bad, NULL, 0));
    show("WAIT_BITSET with bitset 0", futex(&v, FUTEX_WAIT_BITSET, 1, NULL, NULL, 0));
    show("WAKE with nobody waiting", futex(&v, FUTEX_WAKE, 1, NULL, NULL, 0));
    show("WAIT on a bad address", futex((void *)8, FUTEX_WAIT, 0, NULL, NULL, 0));
    show("unknown operation", futex(&v, 99, 0, NULL, NULL, 0));

    /* Three waiters: wake 2, then the rest. */
    struct waiter w[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct waiter){FUTEX_WAIT_PRIVATE, 0, -99};
        pthread_create(&t[i], NULL, wait_thread, &w[i]);
    }
    settle(3);
    show("WAKE 2 of 3 waiters", futex(&word, FUTEX_WAKE_PRIVATE, 2, NULL, NULL, 0));
    while (atomic_load(&woken) < 2)
        sched_yield();
    printf("woken: %d\n", atomic_load(&woken));
    atomic_store(&word, 1);
    show("WAKE all (the last one)", futex(&word, FUTEX_WAKE_PRIVATE, 100, NULL, NULL, 0));
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    printf("results: %ld %ld %ld\n", w[0].result, w[1].result, w[2].result);

    /* Bitsets: a waiter on bit 1 is not woken by a wake of bit 2. */
    atomic_store(&word, 0);
    atomic_store(&waiting, 0);
    atomic_store(&woken, 0);
    struct waiter b = {FUTEX_WAIT_BITSET_PRIVATE, 1, -99};
    pthread_t bt;
    pthread_create(&bt, NULL, wait_thread, &b);
    settle(1);
    show("WAKE_BITSET bit 2 (the waiter waits on bit 1)", futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 2));
    atomic_store(&word, 1);
    show("WAKE_BITSET bit 1|2", futex(&word, FUTEX_WAKE_BITSET_PRIVATE, 1, NULL, NULL, 3));
    pthread_join(bt, NULL);
    printf("bitset waiter result: %ld\n", b.result);

    /* The shared (not private) operations on the same word. */
    atomic_store(&word, 0);
    atomic_store(&waiting, 0);
    struct waiter s = {FUTEX_WAIT, 0, -99};
    pthread_create(&bt, NULL, wait_thread, &s);
    settle(1);
    atomic_store(&word, 1);
    show("shared WAKE of a shared waiter", futex(&word, FUTEX_WAKE, 1, NULL, NULL, 0));
    pthread_join(bt, NULL);
    printf("shared waiter result: %ld\n", s.result);
    return 0;
}
