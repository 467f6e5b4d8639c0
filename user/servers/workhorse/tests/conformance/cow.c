/* Copy-on-write fork (docs/workhorse.md, "Memory"): after fork, parent and
 * child each write and each sees only its own values (heap, stack, .data,
 * .bss, anonymous and file mappings); writes the kernel (the workhorse)
 * makes for the program, read() into a buffer and a signal frame pushed
 * onto the stack, copy too; MAP_SHARED memory stays shared; mprotect,
 * munmap, mremap and madvise(MADV_DONTNEED) in one process leave the
 * other's pages alone; chains of forks and many children; a thread waiting
 * on a condition variable while another forks and then signals it.
 *   cow DIR   (a scratch directory) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGE 4096
#define HEAP_PAGES 8

static int data_words[2048] = {1, 2, 3}; /* .data, two pages */
static char bss[3 * PAGE];               /* .bss */
static int failures;

static void check(const char *what, int ok)
{
    printf("%s: %s\n", what, ok ? "ok" : "FAILED");
    if (!ok)
        failures++;
}

/* All `n` bytes at `p` are `c`. */
static int all(const volatile char *p, size_t n, char c)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != c)
            return 0;
    return 1;
}

/* The child's exit status (255: it did not exit normally). */
static int child_status(pid_t c)
{
    int st;
    if (waitpid(c, &st, 0) != c)
        return 254;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

/* Lockstep between parent and child: each writes its own value, waits
 * until the other has written, then checks that it still sees its own. */
static int to_child[2], to_parent[2];

static void tell(int fd)
{
    char b = 'x';
    if (write(fd, &b, 1) != 1)
        _exit(90);
}

static void await(int fd)
{
    char b;
    if (read(fd, &b, 1) != 1)
        _exit(91);
}

static void own_values(void)
{
    char *heap = malloc(HEAP_PAGES * PAGE);
    char stack[2 * PAGE];
    int fd = open("/proc/self/exe", O_RDONLY);
    char *file = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    char *anon = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char elf[4], orig = file[100];
    memcpy(elf, file, 4);
    memset(heap, 'P', HEAP_PAGES * PAGE);
    memset(stack, 'P', sizeof stack);
    memset(anon, 'P', 4 * PAGE);
    memset(bss, 'P', sizeof bss);
    file[100] = 'P';
    data_words[1000] = 7;
    if (pipe(to_child) || pipe(to_parent))
        exit(2);
    pid_t c = fork();
    if (c == 0) {
        memset(heap, 'C', HEAP_PAGES * PAGE);
        memset(stack, 'C', sizeof stack);
        memset(anon + PAGE, 'C', PAGE); /* one page of four */
        memset(bss, 'C', sizeof bss);
        file[100] = 'C';
        data_words[1000] = 8;
        tell(to_parent[1]);
        await(to_child[0]);
        int ok = all(heap, HEAP_PAGES * PAGE, 'C') && all(stack, sizeof stack, 'C') &&
                 all(anon, PAGE, 'P') && all(anon + PAGE, PAGE, 'C') && all(anon + 2 * PAGE, 2 * PAGE, 'P') &&
                 all(bss, sizeof bss, 'C') && file[100] == 'C' && data_words[1000] == 8 &&
                 data_words[0] == 1 && memcmp(file, elf, 4) == 0;
        _exit(ok ? 0 : 1);
    }
    await(to_parent[0]);
    int before = all(heap, HEAP_PAGES * PAGE, 'P') && all(stack, sizeof stack, 'P') && all(anon, 4 * PAGE, 'P') &&
                 all(bss, sizeof bss, 'P') && file[100] == 'P' && data_words[1000] == 7;
    memset(heap, 'Q', HEAP_PAGES * PAGE);
    memset(stack, 'Q', sizeof stack);
    memset(anon, 'Q', 4 * PAGE);
    memset(bss, 'Q', sizeof bss);
    file[100] = 'Q';
    data_words[1000] = 9;
    tell(to_child[1]);
    int child = child_status(c);
    check("the child's writes (heap, stack, .data, .bss, anonymous and file mappings) are not the parent's", before);
    check("the parent's writes are not the child's", child == 0);
    check("the parent keeps its own writes after the child ended",
          all(heap, HEAP_PAGES * PAGE, 'Q') && all(stack, sizeof stack, 'Q') && all(anon, 4 * PAGE, 'Q') &&
              all(bss, sizeof bss, 'Q') && file[100] == 'Q' && data_words[1000] == 9 && memcmp(file, elf, 4) == 0);
    /* The file itself is as it was. */
    char *again = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE, fd, 0);
    check("a private file mapping's writes stay out of the file", again[100] == orig && memcmp(again, elf, 4) == 0);
    munmap(again, PAGE);
    munmap(file, 2 * PAGE);
    munmap(anon, 4 * PAGE);
    close(fd);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
    free(heap);
}

/* read() writes into the reader's buffer for it: into a copy-on-write
 * page, the reader's copy only. */
static void read_into_cow(void)
{
    char *buf = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(buf, 'P', 3 * PAGE);
    int p[2], back[2];
    if (pipe(p) || pipe(back))
        exit(2);
    pid_t c = fork();
    if (c == 0) {
        close(p[1]);
        /* Across a page boundary, into pages this process has not written
         * since fork. */
        size_t n = 0;
        while (n < PAGE) {
            ssize_t r = read(p[0], buf + PAGE / 2 + n, PAGE - n);
            if (r <= 0)
                _exit(3);
            n += r;
        }
        int ok = all(buf, PAGE / 2, 'P') && all(buf + PAGE / 2, PAGE, 'r') && all(buf + PAGE / 2 + PAGE, PAGE + PAGE / 2, 'P');
        tell(back[1]);
        /* The parent's read into its own buffer is not seen here. */
        char b;
        if (read(p[0], &b, 1) != 0)
            _exit(4);
        ok = ok && all(buf + 2 * PAGE, PAGE, 'P');
        _exit(ok ? 0 : 1);
    }
    close(p[0]);
    char r[PAGE];
    memset(r, 'r', PAGE);
    if (write(p[1], r, PAGE) != PAGE)
        exit(2);
    await(back[0]);
    int mine = all(buf, 3 * PAGE, 'P');
    /* The parent reads from /proc/self/exe into its last page while the
     * child still holds it. */
    int fd = open("/proc/self/exe", O_RDONLY);
    ssize_t got = read(fd, buf + 2 * PAGE, PAGE);
    close(fd);
    close(p[1]);
    int child = child_status(c);
    check("read() into a copy-on-write buffer fills the reader's copy only", mine && child == 0);
    check("the parent's read() into a shared page", got == PAGE && memcmp(buf + 2 * PAGE, "\177ELF", 4) == 0);
    close(back[0]);
    close(back[1]);
    munmap(buf, 3 * PAGE);
}

/* A signal frame pushed onto a stack page shared with the parent. */
static char *region; /* 64 KiB of the stack below main's frame */
static volatile sig_atomic_t handled;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)si;
    (void)uc;
    handled = sig;
}

static __attribute__((noinline)) void fill_region(void)
{
    char buf[64 * 1024];
    memset(buf, 0x5a, sizeof buf);
    /* (Through asm: the address outlives the frame on purpose.) */
    __asm__ volatile("" : "=r"(region) : "0"(buf) : "memory");
}

/* kill(getpid(), SIGUSR1) with the stack pointer at `sp`: the handler's
 * frame goes right below it. */
static void kill_self_on(char *sp)
{
    long pid = getpid(), r;
    __asm__ volatile("mov %%rsp, %%r12\n\tmov %[sp], %%rsp\n\tsyscall\n\tmov %%r12, %%rsp"
                     : "=a"(r)
                     : [sp] "r"(sp), "a"(62L), "D"(pid), "S"((long)SIGUSR1)
                     : "rcx", "r11", "r12", "memory");
    (void)r;
}

static __attribute__((noinline)) void signal_frame(void)
{
    fill_region();
    struct sigaction sa = {0};
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGUSR1, &sa, NULL);
    pid_t c = fork();
    if (c == 0) {
        /* A page boundary in the middle of the region. */
        char *sp = (char *)(((unsigned long)region + 32 * 1024) & ~(unsigned long)(PAGE - 1));
        kill_self_on(sp);
        _exit(handled == SIGUSR1 ? 0 : 1);
    }
    int child = child_status(c);
    check("a signal frame pushed onto a copy-on-write stack page is the child's only",
          child == 0 && all(region + 16 * 1024, 32 * 1024, 0x5a));
    signal(SIGUSR1, SIG_DFL);
}

/* MAP_SHARED memory is the same for parent and child; MAP_PRIVATE is not. */
static void shared_memory(void)
{
    volatile int *sh = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    volatile int *pr = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    sh[0] = 1;
    pr[0] = 1;
    /* sh[PAGE/4] (the second page) is not touched before fork. */
    pid_t c = fork();
    if (c == 0) {
        sh[0] = 2;
        sh[PAGE / 4] = 3;
        pr[0] = 2;
        _exit(0);
    }
    int child = child_status(c);
    check("MAP_SHARED anonymous memory stays shared across fork (a touched and an untouched page)",
          child == 0 && sh[0] == 2 && sh[PAGE / 4] == 3);
    check("MAP_PRIVATE anonymous memory does not", pr[0] == 1);
    /* A counter both increment in turn. */
    if (pipe(to_child) || pipe(to_parent))
        exit(2);
    sh[1] = 0;
    c = fork();
    if (c == 0) {
        for (int i = 0; i < 100; i++) {
            await(to_child[0]);
            sh[1]++;
            tell(to_parent[1]);
        }
        _exit(0);
    }
    for (int i = 0; i < 100; i++) {
        sh[1]++;
        tell(to_child[1]);
        await(to_parent[0]);
    }
    child = child_status(c);
    check("parent and child take turns incrementing a shared counter", child == 0 && sh[1] == 200);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
    munmap((void *)sh, 2 * PAGE);
    munmap((void *)pr, PAGE);
}

/* mprotect, munmap, mremap and madvise in one process leave the other's
 * pages alone. */
static void map_changes(void)
{
    char *a = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memset(a, 'P', 8 * PAGE);
    pid_t c = fork();
    if (c == 0) {
        int ok = mprotect(a, 2 * PAGE, PROT_READ) == 0 && a[0] == 'P';
        ok = ok && mprotect(a, 2 * PAGE, PROT_READ | PROT_WRITE) == 0;
        a[0] = 'C';
        ok = ok && munmap(a + 2 * PAGE, PAGE) == 0;
        char *m = mremap(a + 3 * PAGE, 2 * PAGE, 6 * PAGE, MREMAP_MAYMOVE);
        ok = ok && m != MAP_FAILED && all(m, 2 * PAGE, 'P');
        if (m != MAP_FAILED)
            memset(m, 'M', 6 * PAGE);
        ok = ok && madvise(a + 6 * PAGE, 2 * PAGE, MADV_DONTNEED) == 0 && all(a + 6 * PAGE, 2 * PAGE, 0);
        a[7 * PAGE] = 'D';
        _exit(ok ? 0 : 1);
    }
    int child = child_status(c);
    check("the child's mprotect, munmap, mremap and madvise(MADV_DONTNEED) of its copy", child == 0);
    check("leave the parent's pages as they were", all(a, 8 * PAGE, 'P'));
    /* The parent's turn, with the child holding the pages. */
    if (pipe(to_child) || pipe(to_parent))
        exit(2);
    c = fork();
    if (c == 0) {
        await(to_child[0]);
        _exit(all(a, 8 * PAGE, 'P') ? 0 : 1);
    }
    int ok = madvise(a, 2 * PAGE, MADV_DONTNEED) == 0 && all(a, 2 * PAGE, 0);
    ok = ok && mprotect(a + 2 * PAGE, PAGE, PROT_READ) == 0 && mprotect(a + 2 * PAGE, PAGE, PROT_READ | PROT_WRITE) == 0;
    a[2 * PAGE] = 'Q';
    char *dst = mmap(NULL, 4 * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *m = mremap(a + 4 * PAGE, 4 * PAGE, 4 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, dst);
    ok = ok && m == dst && all(m, 4 * PAGE, 'P');
    if (m != MAP_FAILED)
        memset(m, 'Q', 4 * PAGE);
    tell(to_child[1]);
    child = child_status(c);
    check("the parent's madvise, mprotect and mremap leave the child's pages alone", ok && child == 0);
    close(to_child[0]);
    close(to_child[1]);
    close(to_parent[0]);
    close(to_parent[1]);
    munmap(a, 8 * PAGE);
    munmap(dst, 4 * PAGE);
    /* MADV_DONTNEED of a private file mapping reads the file again. */
    int fd = open("/proc/self/exe", O_RDONLY);
    char *f = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    f[0] = 'x';
    check("madvise(MADV_DONTNEED) of a written private file page gives the file's bytes again",
          madvise(f, PAGE, MADV_DONTNEED) == 0 && memcmp(f, "\177ELF", 4) == 0);
    munmap(f, PAGE);
    close(fd);
    check("madvise of an unaligned address is EINVAL", madvise(bss + 1, PAGE, MADV_DONTNEED) == -1 && errno == EINVAL);
}

/* Each generation forks the next; each sees the values its parent had at
 * the fork, whatever the parent and the descendants write after it. */
static int chain(int depth, int *heap)
{
    if (depth == 0)
        return 0;
    int mine = *heap, word = data_words[5];
    pid_t c = fork();
    if (c == 0) {
        if (*heap != mine || data_words[5] != word)
            _exit(1);
        (*heap)++;
        data_words[5] = *heap * 3;
        _exit(chain(depth - 1, heap));
    }
    *heap += 100;
    data_words[5] = -1;
    int child = child_status(c);
    return child == 0 && *heap == mine + 100 && data_words[5] == -1 ? 0 : 1;
}

static void forks(void)
{
    int *heap = malloc(sizeof *heap);
    *heap = 0;
    check("a chain of 8 forks, each changing a counter after its fork", chain(8, heap) == 0 && *heap == 100);
    /* Many children, each writing all of a buffer the parent wrote. */
    enum { KIDS = 40 };
    unsigned char *buf = malloc(4 * PAGE);
    memset(buf, 0xee, 4 * PAGE);
    pid_t kids[KIDS];
    for (int i = 0; i < KIDS; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int ok = 1;
            for (int j = 0; j < 4 * PAGE; j++)
                ok = ok && buf[j] == (j < i ? 0xdd : 0xee);
            memset(buf, i, 4 * PAGE);
            usleep(1000);
            _exit(ok && all((char *)buf, 4 * PAGE, (char)i) ? i : 200);
        }
        buf[i] = 0xdd; /* the parent writes while children hold the pages */
    }
    int ok = 1;
    for (int i = 0; i < KIDS; i++)
        ok = ok && child_status(kids[i]) == i;
    int mine = 1;
    for (int i = 0; i < 4 * PAGE; i++)
        mine = mine && buf[i] == (i < KIDS ? 0xdd : 0xee);
    check("40 children each write their own copy", ok);
    check("the parent's copy is its own", mine);
    free(buf);
    free(heap);
}

/* A thread waits on a condition variable; the main thread forks (the
 * child lives on a while, holding the pages), then signals it. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready, go;

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    ready = 1;
    pthread_cond_signal(&cv);
    while (!go)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

static void futex_after_fork(void)
{
    pthread_t t;
    pthread_create(&t, NULL, waiter, NULL);
    pthread_mutex_lock(&mu);
    while (!ready)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    usleep(20000); /* the waiter is waiting by now (the check is the same either way) */
    pid_t c = fork();
    if (c == 0) {
        usleep(200000);
        _exit(0);
    }
    pthread_mutex_lock(&mu);
    go = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    check("a thread waiting while another forks is woken after it", child_status(c) == 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    setvbuf(stdout, NULL, _IONBF, 0);
    own_values();
    read_into_cow();
    signal_frame();
    shared_memory();
    map_changes();
    forks();
    futex_after_fork();
    printf("cow: %d failed\n", failures);
    return failures ? 1 : 0;
}
