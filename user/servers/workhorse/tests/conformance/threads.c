#define _GNU_SOURCE
/* Threads: glibc's pthreads (create, join, return values, mutexes,
 * condition variables, thread-local storage, detached threads), thread ids
 * (gettid, getpid in a thread), a signal sent to one thread with tgkill,
 * a raw clone(CLONE_VM|CLONE_THREAD|...) whose CLONE_CHILD_CLEARTID word is
 * cleared and woken when it exits with SYS_exit, exit_group from a thread
 * ending the whole process, fork from a thread.  Only main prints, after
 * the threads are done, so the output is the same on every run. */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 20000

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static __thread int tls_value = 5;
static int tls_seen[THREADS];
static pid_t tids[THREADS];
static pid_t pids[THREADS];

static void *adder(void *arg)
{
    int i = (int)(long)arg;
    tls_value += i * 10;
    for (int n = 0; n < ROUNDS; n++) {
        pthread_mutex_lock(&lock);
        counter++;
        pthread_mutex_unlock(&lock);
    }
    tls_seen[i] = tls_value;
    tids[i] = gettid();
    pids[i] = getpid();
    return (void *)(long)(100 + i);
}

/* A bounded queue: a producer and a consumer on two condition variables. */
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER, not_full = PTHREAD_COND_INITIALIZER;
static int queue[4], head, count;
static long consumed_sum;

static void *producer(void *arg)
{
    (void)arg;
    for (int v = 1; v <= 1000; v++) {
        pthread_mutex_lock(&lock);
        while (count == 4)
            pthread_cond_wait(&not_full, &lock);
        queue[(head + count++) % 4] = v;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

static void *consumer(void *arg)
{
    (void)arg;
    for (int n = 0; n < 1000; n++) {
        pthread_mutex_lock(&lock);
        while (count == 0)
            pthread_cond_wait(&not_empty, &lock);
        consumed_sum += queue[head];
        head = (head + 1) % 4;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

/* tgkill: the handler runs in the thread the signal was sent to. */
static volatile pid_t handler_tid;
static atomic_int target_ready, target_go;
static pid_t target_tid;

static void on_usr1(int sig)
{
    (void)sig;
    handler_tid = gettid();
}

static void *target(void *arg)
{
    (void)arg;
    target_tid = gettid();
    atomic_store(&target_ready, 1);
    while (!atomic_load(&target_go))
        sched_yield();
    return NULL;
}

/* Raw clone: the child runs on its own stack, writes a value and exits
 * with SYS_exit (only itself); the kernel clears *ctid and wakes it. */
static volatile int raw_value;
static volatile pid_t raw_ctid, raw_ptid;

static int raw_child(void *arg)
{
    raw_value = (int)(long)arg + gettid() - gettid();
    syscall(SYS_exit, 0);
    return 0;
}

static void *ender(void *arg)
{
    (void)arg;
    syscall(SYS_exit_group, 7);
    return NULL;
}

static atomic_int detached_done;

static void *detached_fn(void *arg)
{
    (void)arg;
    atomic_fetch_add(&detached_done, 1);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

static void *forker(void *arg)
{
    (void)arg;
    pid_t c = fork();
    if (c == 0)
        _exit(getpid() == gettid() ? 21 : 22);
    int st;
    waitpid(c, &st, 0);
    return (void *)(long)WEXITSTATUS(st);
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_t t[THREADS];
    for (long i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, adder, (void *)i);
    long sum = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        sum += (long)r;
    }
    printf("counter after %d threads x %d locked increments: %ld\n", THREADS, ROUNDS, counter);
    printf("sum of return values: %ld\n", sum);
    printf("thread-local values: %d %d %d %d (main's still %d)\n", tls_seen[0], tls_seen[1], tls_seen[2],
           tls_seen[3], tls_value);
    int distinct = 1, same_pid = 1;
    for (int i = 0; i < THREADS; i++) {
        same_pid &= pids[i] == getpid();
        distinct &= tids[i] != getpid();
        for (int j = 0; j < i; j++)
            distinct &= tids[i] != tids[j];
    }
    printf("getpid in threads is the process's: %d; thread ids distinct and not the pid: %d\n", same_pid,
           distinct);
    printf("main's gettid is its pid: %d\n", gettid() == getpid());

    pthread_t p, c;
    pthread_create(&p, NULL, producer, NULL);
    pthread_create(&c, NULL, consumer, NULL);
    pthread_join(p, NULL);
    pthread_join(c, NULL);
    printf("producer/consumer through a 4-slot queue: sum %ld\n", consumed_sum);

    pthread_attr_t detached;
    pthread_attr_init(&detached);
    pthread_attr_setdetachstate(&detached, PTHREAD_CREATE_DETACHED);
    for (int i = 0; i < 8; i++) {
        pthread_t d;
        if (pthread_create(&d, &detached, detached_fn, NULL) != 0)
            printf("detached thread %d not created\n", i);
    }
    while (atomic_load(&detached_done) < 8)
        sched_yield();
    printf("8 detached threads ran\n");

    signal(SIGUSR1, on_usr1);
    pthread_t tg;
    pthread_create(&tg, NULL, target, NULL);
    while (!atomic_load(&target_ready))
        sched_yield();
    long r = syscall(SYS_tgkill, getpid(), target_tid, SIGUSR1);
    while (handler_tid == 0)
        sched_yield();
    atomic_store(&target_go, 1);
    pthread_join(tg, NULL);
    printf("tgkill: %ld; the handler ran in the target thread: %d\n", r, handler_tid == target_tid);
    r = syscall(SYS_tgkill, getpid() + 100000, target_tid, 0);
    printf("tgkill to a thread of another process: %ld %s\n", r, strerror(errno));

    char *stack = malloc(65536);
    raw_ctid = -1;
    int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM |
                CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
    int tid = clone(raw_child, stack + 65536, flags, (void *)42L, &raw_ptid, NULL, &raw_ctid);
    printf("raw clone: %s; parent's tid word set: %d\n", tid > 0 ? "ok" : strerror(errno), raw_ptid == tid);
    while (raw_ctid != 0) {
        pid_t seen = raw_ctid;
        if (seen != 0)
            syscall(SYS_futex, &raw_ctid, FUTEX_WAIT, seen, NULL, NULL, 0);
    }
    printf("child-clear tid word cleared at its exit; it wrote %d\n", raw_value);
    printf("process still here after a thread's SYS_exit: %d\n", kill(getpid(), 0) == 0);

    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        pthread_t a, b;
        pthread_create(&a, NULL, sleeper, NULL);
        pthread_create(&b, NULL, ender, NULL);
        pthread_join(a, NULL);
        _exit(1);
    }
    int st;
    waitpid(child, &st, 0);
    printf("exit_group from a thread ends all threads: exited %d status %d\n", WIFEXITED(st), WEXITSTATUS(st));

    child = fork();
    if (child == 0) {
        pthread_t a;
        pthread_create(&a, NULL, sleeper, NULL);
        kill(getpid(), SIGTERM);
        for (;;)
            pause();
    }
    waitpid(child, &st, 0);
    printf("SIGTERM to a process with threads: signaled %d by %d\n", WIFSIGNALED(st), WTERMSIG(st));

    pthread_t f;
    void *fr;
    pthread_create(&f, NULL, forker, NULL);
    pthread_join(f, &fr);
    printf("fork from a thread: child exited %ld (21: a one-thread process)\n", (long)fr);
    return 0;
}
