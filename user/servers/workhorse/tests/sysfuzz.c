/* The workhorse's system-call fuzzer (docs/workhorse.md, "The system-call
 * fuzzer"; Keep only: on Linux it would fuzz the host's kernel).
 *
 *   sysfuzz SEED CALLS [CHILDREN-BETWEEN-CHECKS]
 *
 * Children make CALLS random system calls in all, from a table of the
 * calls the workhorse answers (user/servers/workhorse/src/syscall_table.rs) and
 * numbers it does not know, with arguments drawn per kind: descriptors
 * (the child's open ones, -1, huge), pointers (valid, NULL, unmapped, the
 * kernel half, non-canonical, misaligned, running into a guard page),
 * lengths (0, small, a page, huge), flags (random bits), paths (real,
 * missing, longer than PATH_MAX, unterminated), pids and signals.  Each
 * child is a session of its own; a child that has not ended in time is
 * killed with its process group, and how a child ends does not matter.
 * Left out: only what would turn the calls on the parent (a signal or a
 * limit for its pid, its group or every process) or on files outside the
 * fuzz's own directories (system paths go only to calls that read).
 *
 * Between batches the parent checks the server still serves an honest
 * program: a file written and read back in /tmp and /data, a pipe round
 * trip, fork+exec of busybox with its output compared, stat of known
 * files unchanged, all under alarm().  A mismatch or a hang fails the run
 * (exit status 1).  The calls each child makes follow from SEED alone;
 * where a slow child is killed depends on time. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Argument kinds. */
enum { X = 0, FD, BUF, LEN, FLG, PATH, RPATH, PID, SIG, NUM, ADDR, TIME, OFF };

struct sc {
    int nr;
    unsigned char a[6];
};

/* The workhorse's table, with the kind of each argument; the unknown
 * numbers are drawn apart. */
static const struct sc table[] = {
    {0, {FD, BUF, LEN}}, {1, {FD, BUF, LEN}}, {2, {RPATH, FLG, NUM}}, {3, {FD}},
    {4, {RPATH, BUF}}, {5, {FD, BUF}}, {6, {RPATH, BUF}}, {7, {BUF, NUM, NUM}},
    {8, {FD, OFF, NUM}}, {9, {ADDR, LEN, FLG, FLG, FD, OFF}}, {10, {ADDR, LEN, FLG}},
    {11, {ADDR, LEN}}, {12, {ADDR}}, {13, {SIG, BUF, BUF, NUM}}, {14, {NUM, BUF, BUF, NUM}},
    {15, {X}}, {16, {FD, NUM, BUF}}, {17, {FD, BUF, LEN, OFF}}, {18, {FD, BUF, LEN, OFF}},
    {19, {FD, BUF, NUM}}, {20, {FD, BUF, NUM}}, {21, {RPATH, NUM}}, {22, {BUF}},
    {23, {NUM, BUF, BUF, BUF, TIME}}, {24, {X}}, {25, {ADDR, LEN, LEN, FLG, ADDR}},
    {26, {ADDR, LEN, FLG}}, {28, {ADDR, LEN, NUM}}, {32, {FD}}, {33, {FD, FD}}, {34, {X}},
    {35, {TIME, BUF}}, {36, {NUM, BUF}}, {37, {NUM}}, {38, {NUM, TIME, BUF}}, {39, {X}},
    {40, {FD, FD, BUF, LEN}}, {41, {NUM, FLG, NUM}}, {42, {FD, BUF, LEN}}, {43, {FD, BUF, BUF}},
    {44, {FD, BUF, LEN, FLG, BUF, LEN}}, {45, {FD, BUF, LEN, FLG, BUF, BUF}},
    {46, {FD, BUF, FLG}}, {47, {FD, BUF, FLG}}, {48, {FD, NUM}}, {49, {FD, BUF, LEN}},
    {50, {FD, NUM}}, {51, {FD, BUF, BUF}}, {52, {FD, BUF, BUF}}, {53, {NUM, FLG, NUM, BUF}},
    {54, {FD, NUM, NUM, BUF, LEN}}, {55, {FD, NUM, NUM, BUF, BUF}},
    {56, {FLG, ADDR, BUF, BUF, NUM}}, {57, {X}}, {58, {X}}, {59, {PATH, BUF, BUF}},
    {60, {NUM}}, {61, {PID, BUF, FLG, BUF}}, {62, {PID, SIG}}, {63, {BUF}},
    {72, {FD, NUM, NUM}}, {73, {FD, FLG}}, {74, {FD}}, {75, {FD}}, {76, {PATH, OFF}},
    {77, {FD, OFF}}, {79, {BUF, LEN}}, {80, {PATH}}, {81, {FD}}, {82, {PATH, PATH}},
    {83, {PATH, NUM}}, {84, {PATH}}, {85, {PATH, NUM}}, {86, {PATH, PATH}}, {87, {PATH}},
    {88, {PATH, PATH}}, {89, {RPATH, BUF, LEN}}, {90, {PATH, NUM}}, {91, {FD, NUM}},
    {92, {PATH, NUM, NUM}}, {93, {FD, NUM, NUM}}, {94, {PATH, NUM, NUM}}, {95, {NUM}},
    {96, {BUF, BUF}}, {97, {NUM, BUF}}, {98, {NUM, BUF}}, {99, {BUF}}, {102, {X}},
    {104, {X}}, {105, {NUM}}, {106, {NUM}}, {107, {X}}, {108, {X}}, {109, {PID, PID}},
    {110, {X}}, {111, {X}}, {112, {X}}, {115, {NUM, BUF}}, {116, {NUM, BUF}},
    {117, {NUM, NUM, NUM}}, {118, {BUF, BUF, BUF}}, {119, {NUM, NUM, NUM}},
    {120, {BUF, BUF, BUF}}, {121, {PID}}, {124, {PID}}, {127, {BUF, NUM}}, {130, {BUF, NUM}},
    {131, {BUF, BUF}}, {132, {PATH, BUF}}, {133, {PATH, NUM, NUM}}, {137, {RPATH, BUF}},
    {138, {FD, BUF}}, {157, {NUM, BUF, NUM, NUM, NUM}}, {158, {NUM, ADDR}}, {160, {NUM, BUF}},
    {162, {X}}, {164, {BUF, BUF}}, {186, {X}}, {188, {PATH, BUF, BUF, LEN, FLG}},
    {189, {PATH, BUF, BUF, LEN, FLG}}, {190, {FD, BUF, BUF, LEN, FLG}},
    {191, {RPATH, BUF, BUF, LEN}}, {192, {RPATH, BUF, BUF, LEN}}, {193, {FD, BUF, BUF, LEN}},
    {194, {RPATH, BUF, LEN}}, {195, {RPATH, BUF, LEN}}, {196, {FD, BUF, LEN}},
    {197, {PATH, BUF}}, {198, {PATH, BUF}}, {199, {FD, BUF}}, {200, {PID, SIG}}, {201, {BUF}},
    {202, {BUF, NUM, NUM, TIME, BUF, NUM}}, {203, {PID, LEN, BUF}}, {204, {PID, LEN, BUF}},
    {213, {NUM}}, {217, {FD, BUF, LEN}}, {218, {BUF}}, {227, {NUM, TIME}}, {228, {NUM, BUF}},
    {229, {NUM, BUF}}, {230, {NUM, FLG, TIME, BUF}}, {231, {NUM}}, {232, {FD, BUF, NUM, NUM}},
    {233, {FD, NUM, FD, BUF}}, {234, {PID, PID, SIG}}, {235, {PATH, BUF}},
    {257, {FD, RPATH, FLG, NUM}}, {258, {FD, PATH, NUM}}, {259, {FD, PATH, NUM, NUM}},
    {260, {FD, PATH, NUM, NUM, FLG}}, {262, {FD, RPATH, BUF, FLG}}, {263, {FD, PATH, FLG}},
    {264, {FD, PATH, FD, PATH}}, {265, {FD, PATH, FD, PATH, FLG}}, {266, {PATH, FD, PATH}},
    {267, {FD, RPATH, BUF, LEN}}, {268, {FD, PATH, NUM}}, {269, {FD, RPATH, NUM}},
    {270, {NUM, BUF, BUF, BUF, TIME, BUF}}, {271, {BUF, NUM, TIME, BUF, NUM}},
    {273, {BUF, LEN}}, {280, {FD, PATH, BUF, FLG}}, {281, {FD, BUF, NUM, NUM, BUF, NUM}},
    {283, {NUM, FLG}}, {286, {FD, FLG, BUF, BUF}}, {287, {FD, BUF}},
    {288, {FD, BUF, BUF, FLG}}, {291, {FLG}}, {292, {FD, FD, FLG}}, {293, {BUF, FLG}},
    {302, {PID, NUM, BUF, BUF}}, {306, {FD}}, {316, {FD, PATH, FD, PATH, FLG}},
    {318, {BUF, LEN, FLG}}, {334, {BUF, LEN, FLG, NUM}}, {435, {BUF, LEN}},
    {436, {FD, FD, FLG}}, {439, {FD, RPATH, NUM, FLG}}, {441, {FD, BUF, NUM, TIME, BUF, NUM}},
};
#define NTABLE (sizeof table / sizeof table[0])

static uint64_t state;

static uint64_t rnd(void)
{
    /* splitmix64: any seed, 0 included, gives a good sequence. */
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

#define BUFSZ (64 * 1024)
/* The buffer area: BUFSZ bytes, then a PROT_NONE guard page. */
static char *area;
static char *unmapped;
static char *unterminated; /* a name running into the guard page */
static char longpath[5000];
static pid_t parent, parent_pgid;
static char fuzzdir[2][64];
static int depth; /* 0 in a child, more in what it forked */
static int trace;  /* each call written to descriptor 100 (the output) first */

/* Counters the children keep in memory shared with the parent. */
struct counts {
    uint64_t calls, ok, unknown, einval, efault, ebadf, enoent, enosys, other;
};
static struct counts *shared;

static const char *sys_paths[] = {
    "/bin/busybox", "/tests/hello", "/", "/tmp", "/bin", "/dev/null", "/dev/zero",
    "/dev/urandom", "/dev/full", "/proc/self/status", "/proc/self/maps", "/proc/self/fd",
    "/proc/self/exe", "/proc/meminfo", "/proc/1/stat", "/proc", "/data", "/dev/shm",
};
static const char *names[] = {"a", "b", "c", "d/e", "d", "p", "s"};

static uint64_t any_ptr(void)
{
    switch (rnd() % 12) {
    case 0: return 0;
    case 1: return (uint64_t)unmapped + rnd() % 4096;
    case 2: return 0xffff800000000000ull + (rnd() & 0xffffffff);
    case 3: return 0x0000800000000000ull - (rnd() % 64);
    case 4: return (uint64_t)area + BUFSZ - (rnd() % 64); /* crosses into the guard page */
    case 5: return (uint64_t)area + 1 + rnd() % 7;          /* misaligned */
    case 6: return rnd();
    case 7: return (uint64_t)-1 - (rnd() % 4096);
    default: return (uint64_t)area + (rnd() % (BUFSZ / 64)) * 64;
    }
}

static uint64_t fuzz_path(void)
{
    static char p[4][128];
    static int n;
    char *s = p[n++ % 4];
    snprintf(s, 128, "%s/%s", fuzzdir[rnd() % 4 == 0], names[rnd() % 7]);
    return (uint64_t)s;
}

static uint64_t path(int readonly)
{
    switch (rnd() % 10) {
    case 0: return readonly ? (uint64_t)sys_paths[rnd() % (sizeof sys_paths / sizeof *sys_paths)] : fuzz_path();
    case 1: return (uint64_t)"/no/such/file";
    case 2: return (uint64_t)longpath + rnd() % 1000;
    case 3: return (uint64_t)unterminated;
    case 4: return (uint64_t)"";
    case 5: return (uint64_t)"sfz.a"; /* relative: the working directory or the dirfd */
    case 6: return any_ptr();
    default: return fuzz_path();
    }
}

static int fds[64];
static int nfds;

static uint64_t fd(void)
{
    switch (rnd() % 10) {
    case 0: return (uint64_t)-1;
    case 1: return rnd() % 2 ? 1u << 20 : 0x7fffffff;
    case 2: return -100; /* AT_FDCWD */
    case 3: return rnd() % 8;
    default: return nfds ? (uint64_t)fds[rnd() % nfds] : rnd() % 8;
    }
}

static uint64_t len(void)
{
    switch (rnd() % 8) {
    case 0: return 0;
    case 1: return 1 + rnd() % 64;
    case 2: return 4096;
    case 3: return rnd() % 2 ? (uint64_t)-1 : 1ull << 40;
    case 4: return rnd();
    default: return rnd() % BUFSZ;
    }
}

static uint64_t num(void)
{
    switch (rnd() % 6) {
    case 0: return 0;
    case 1: return (uint64_t)-1;
    case 2: return rnd();
    default: return rnd() % 32;
    }
}

static uint64_t pid_arg(void)
{
    switch (rnd() % 6) {
    case 0: return 0;
    case 1: return getpid();
    case 2: return 99999;
    case 3: return (uint64_t)-1;
    case 4: return -(int64_t)getpid();
    default: return rnd() % 64;
    }
}

/* A short time most of the time: sleeps and time-outs end in the run. */
static uint64_t time_arg(void)
{
    if (rnd() % 4 == 0)
        return any_ptr();
    struct timespec *t = (struct timespec *)(area + BUFSZ - 4096 - 64 * (1 + rnd() % 4));
    t->tv_sec = rnd() % 8 == 0 ? -1 : 0;
    t->tv_nsec = rnd() % 8 == 0 ? 2000000000 : rnd() % 2000000;
    return (uint64_t)t;
}

static uint64_t draw(int kind)
{
    switch (kind) {
    case FD: return fd();
    case BUF: return any_ptr();
    case LEN: return len();
    case FLG: return rnd() % 4 == 0 ? 0 : rnd() & (rnd() | rnd());
    case PATH: return path(0);
    case RPATH: return path(1);
    case PID: return pid_arg();
    case SIG: return rnd() % 70;
    case NUM: return num();
    case ADDR:
        switch (rnd() % 5) {
        case 0: return 0;
        case 1: return (uint64_t)area + (rnd() % 16) * 4096;
        case 2: return (uint64_t)unmapped;
        case 3: return 0x0fffff000000ull - (rnd() % 8192) * 4096; /* the stack, mmap's areas, the trampoline */
        default: return any_ptr();
        }
    case TIME: return time_arg();
    case OFF: return rnd() % 3 == 0 ? rnd() : rnd() % 3 == 0 ? (uint64_t)-1 : rnd() % 65536;
    default: return rnd();
    }
}

/* Calls that would reach the parent: a signal or limits for its pid, its
 * group or every process (the child is a session of its own, so 0 and its
 * own group are its own). */
static int reaches_parent(long nr, const uint64_t *a)
{
    int64_t p0 = (int64_t)(int32_t)a[0], p1 = (int64_t)(int32_t)a[1];
    switch (nr) {
    case SYS_kill: return p0 == parent || p0 == -1 || p0 == -parent_pgid;
    case SYS_tkill: return p0 == parent;
    case SYS_tgkill: return p0 == parent || p1 == parent;
    case SYS_prlimit64: return p0 == parent;
    case SYS_setpgid: return p0 == parent;
    }
    return 0;
}

static void count(long r)
{
    shared->calls++;
    if (r >= 0) shared->ok++;
    else if (r == -EINVAL) shared->einval++;
    else if (r == -EFAULT) shared->efault++;
    else if (r == -EBADF) shared->ebadf++;
    else if (r == -ENOENT) shared->enoent++;
    else if (r == -ENOSYS) shared->enosys++;
    else shared->other++;
}

static long raw(long nr, const uint64_t *a)
{
    long r;
    register uint64_t r10 asm("r10") = a[3];
    register uint64_t r8 asm("r8") = a[4];
    register uint64_t r9 asm("r9") = a[5];
    asm volatile("syscall" : "=a"(r) : "a"(nr), "D"(a[0]), "S"(a[1]), "d"(a[2]), "r"(r10), "r"(r8), "r"(r9)
                 : "rcx", "r11", "memory");
    return r;
}

/* rt_sigaction's handler and restorer for the sane actions: a handler
 * that returns, through rt_sigreturn. */
static void on_signal(int sig) { (void)sig; }
extern void restore_rt(void);
asm(".text\nrestore_rt: mov $15, %eax\nsyscall\n");

/* Calls that wreck the child itself (its thread pointer, its frame, its
 * code or stack): only sometimes, or children end after a few calls. */
static int wrecking(long nr)
{
    return nr == SYS_arch_prctl || nr == SYS_rt_sigreturn || nr == SYS_munmap || nr == SYS_mprotect ||
           nr == SYS_mremap || nr == SYS_brk || nr == SYS_exit || nr == SYS_exit_group || nr == SYS_execve ||
           nr == SYS_clone || nr == SYS_clone3 || nr == SYS_rt_sigprocmask || nr == SYS_sigaltstack ||
           nr == SYS_madvise || nr == SYS_mmap;
}

static void child(uint64_t seed, int calls)
{
    state = seed;
    setsid();
    /* Nothing of the terminal: a stray write or TCSETS must not reach it. */
    for (int i = 0; i < 3; i++)
        close(i);
    memset(area, 0, BUFSZ);
    for (int i = 0; i < calls; i++) {
        if (rnd() % 16 == 0)
            for (int j = 0; j < 256; j++)
                ((uint64_t *)area)[rnd() % (BUFSZ / 8)] = rnd();
        long nr;
        uint64_t a[6];
        const struct sc *s = NULL;
        if (rnd() % 32 == 0) {
            nr = rnd() % 3 == 0 ? (long)(rnd() % 1000) : rnd() % 3 == 0 ? (long)rnd() : 512 + (long)(rnd() % 64);
            for (int k = 0; k < 6; k++)
                a[k] = rnd();
        } else {
            s = &table[rnd() % NTABLE];
            nr = s->nr;
            if (wrecking(nr) && rnd() % 16 != 0)
                continue;
            for (int k = 0; k < 6; k++)
                a[k] = draw(s->a[k]);
        }
        if (nr == SYS_rt_sigaction && rnd() % 4 != 0) {
            /* A sane action most of the time: random handlers only crash. */
            uint64_t *act = (uint64_t *)(area + BUFSZ - 4096 - 512);
            uint64_t h[] = {0, 1, (uint64_t)on_signal};
            act[0] = h[rnd() % 3];
            act[1] = (rnd() & 0x5c000000) | 0x04000000; /* SA_RESTORER and some of the others */
            act[2] = (uint64_t)restore_rt;
            act[3] = rnd();
            a[1] = (uint64_t)act;
            a[3] = 8;
        }
        /* Open system paths for reading only. */
        if (nr == SYS_open || nr == SYS_openat) {
            int fi = nr == SYS_open ? 1 : 2;
            uint64_t p = nr == SYS_open ? a[0] : a[1];
            for (unsigned k = 0; k < sizeof sys_paths / sizeof *sys_paths; k++)
                if (p == (uint64_t)sys_paths[k])
                    a[fi] &= ~(uint64_t)(O_ACCMODE | O_TRUNC | O_CREAT | O_APPEND | O_TMPFILE);
        }
        if (reaches_parent(nr, a))
            continue;
        /* What the child forked stays in its session (killed with it). */
        if (depth && (nr == SYS_setsid || nr == SYS_setpgid))
            continue;
        if (trace) {
            char line[200];
            int n = snprintf(line, sizeof line, "T%d %ld %lx %lx %lx %lx %lx %lx\n", (int)getpid(), nr,
                             (unsigned long)a[0], (unsigned long)a[1], (unsigned long)a[2], (unsigned long)a[3],
                             (unsigned long)a[4], (unsigned long)a[5]);
            write(100, line, n);
        }
        long r = raw(nr, a);
        count(r);
        if (r == 0 && (nr == SYS_fork || nr == SYS_vfork || nr == SYS_clone || nr == SYS_clone3)) {
            depth++;
            calls = i + 1 + (calls - i) / 4;
        }
        if (r >= 0 && r < 4096 && s && nfds < 64 &&
            (nr == SYS_open || nr == SYS_openat || nr == SYS_dup || nr == SYS_socket || nr == SYS_accept ||
             nr == SYS_accept4 || nr == SYS_epoll_create || nr == SYS_epoll_create1 || nr == SYS_timerfd_create ||
             nr == SYS_creat || nr == SYS_fcntl || nr == SYS_dup3 || nr == SYS_dup2))
            fds[nfds++] = r;
        /* pipe, pipe2, socketpair wrote two descriptors at a valid buffer. */
        if (r == 0 && (nr == SYS_pipe || nr == SYS_pipe2 || nr == SYS_socketpair)) {
            uint64_t b = nr == SYS_socketpair ? a[3] : a[0];
            if (b >= (uint64_t)area && b + 8 <= (uint64_t)area + BUFSZ && nfds < 62) {
                fds[nfds++] = ((int *)b)[0];
                fds[nfds++] = ((int *)b)[1];
            }
        }
    }
    _exit(0);
}

/* ---- the honest check --------------------------------------------------- */

static int check_no;
static struct stat known[2];
static const char *known_paths[] = {"/bin/busybox", "/tests/hello"};

static void hung(int sig)
{
    (void)sig;
    static const char m[] = "sysfuzz: FAIL honest check hung (alarm)\n";
    write(1, m, sizeof m - 1);
    _exit(1);
}

/* The processes there are, from /proc (what a failed fork leaves to see). */
static void list_processes(void)
{
    for (int p = 1; p < 100000; p++) {
        char name[64], line[256];
        snprintf(name, sizeof name, "/proc/%d/stat", p);
        int f = open(name, O_RDONLY);
        if (f < 0)
            continue;
        int n = read(f, line, sizeof line - 1);
        close(f);
        if (n > 0) {
            line[n] = 0;
            printf("sysfuzz: process %s", line);
        }
    }
}

static int fail(const char *what)
{
    int e = errno;
    printf("sysfuzz: FAIL honest check %d: %s (errno %d)\n", check_no, what, e);
    if (e == EAGAIN)
        list_processes();
    fflush(stdout);
    return 1;
}

static int file_round_trip(const char *dir)
{
    char name[128], want[256], have[300];
    snprintf(name, sizeof name, "%s/sysfuzz-honest.%d", dir, (int)parent);
    int n = snprintf(want, sizeof want, "honest check %d in %s\n", check_no, dir);
    int f = open(name, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (f < 0 || write(f, want, n) != n || close(f) != 0)
        return fail("write a file");
    f = open(name, O_RDONLY);
    if (f < 0)
        return fail("open it again");
    int got = read(f, have, sizeof have);
    close(f);
    if (got != n || memcmp(have, want, n) != 0)
        return fail("read it back");
    struct stat st;
    if (stat(name, &st) != 0 || st.st_size != n)
        return fail("its size");
    if (unlink(name) != 0 || stat(name, &st) == 0)
        return fail("unlink it");
    return 0;
}

static int honest(void)
{
    check_no++;
    signal(SIGALRM, hung);
    alarm(20);
    if (file_round_trip("/tmp"))
        return 1;
    struct stat st;
    if (stat("/data", &st) == 0 && file_round_trip("/data"))
        return 1;
    int p[2];
    char b[64];
    if (pipe(p) != 0 || write(p[1], "ping", 4) != 4 || read(p[0], b, sizeof b) != 4 || memcmp(b, "ping", 4) != 0)
        return fail("pipe round trip");
    close(p[0]);
    close(p[1]);
    if (pipe(p) != 0)
        return fail("pipe");
    char arg[32];
    snprintf(arg, sizeof arg, "honest-%d", check_no);
    pid_t c = fork();
    if (c < 0)
        return fail("fork");
    if (c == 0) {
        dup2(p[1], 1);
        close(p[0]);
        close(p[1]);
        char *argv[] = {"busybox", "echo", arg, NULL};
        char *envp[] = {NULL};
        execve("/bin/busybox", argv, envp);
        _exit(127);
    }
    close(p[1]);
    int n = 0, r;
    while (n < (int)sizeof b - 1 && (r = read(p[0], b + n, sizeof b - 1 - n)) > 0)
        n += r;
    close(p[0]);
    b[n] = 0;
    int status;
    if (waitpid(c, &status, 0) != c || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail("busybox echo's exit status");
    char want[40];
    snprintf(want, sizeof want, "%s\n", arg);
    if (strcmp(b, want) != 0)
        return fail("busybox echo's output");
    for (int i = 0; i < 2; i++)
        if (stat(known_paths[i], &st) != 0 || st.st_size != known[i].st_size || st.st_ino != known[i].st_ino ||
            st.st_mode != known[i].st_mode)
            return fail(known_paths[i]);
    alarm(0);
    return 0;
}

/* What the children may have left in the fuzz's directories and the
 * places a relative name can reach. */
static void clean(void)
{
    char p[160];
    for (int d = 0; d < 2; d++) {
        for (int i = 0; i < 7; i++) {
            snprintf(p, sizeof p, "%s/%s", fuzzdir[d], names[6 - i]);
            if (unlink(p) != 0)
                rmdir(p);
        }
        snprintf(p, sizeof p, "%s/sfz.a", fuzzdir[d]);
        unlink(p);
        rmdir(p);
    }
    static const char *rel[] = {"/sfz.a", "/tmp/sfz.a", "/bin/sfz.a", "/data/sfz.a", "/proc/sfz.a"};
    for (unsigned i = 0; i < sizeof rel / sizeof *rel; i++)
        if (unlink(rel[i]) != 0)
            rmdir(rel[i]);
}

static uint64_t add(struct counts *sum, const struct counts *c)
{
    sum->calls += c->calls; sum->ok += c->ok; sum->einval += c->einval; sum->efault += c->efault;
    sum->ebadf += c->ebadf; sum->enoent += c->enoent; sum->enosys += c->enosys; sum->other += c->other;
    return c->calls;
}

/* A child has ended: what it forked goes with it (its group), its counts
 * are added. */
static uint64_t end_child(struct counts *sum, pid_t *slot_pid, int s)
{
    kill(-slot_pid[s], SIGKILL);
    slot_pid[s] = 0;
    return add(sum, &shared[s]);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: sysfuzz SEED CALLS [CHILDREN-BETWEEN-CHECKS]\n");
        return 2;
    }
    uint64_t seed = strtoull(argv[1], NULL, 0);
    long total = atol(argv[2]);
    int per_check = argc > 3 ? atoi(argv[3]) : 32;
    int verbose = argc > 4;
    trace = argc > 4 && argv[4][0] == 't';
    if (trace)
        dup2(1, 100);
    const int per_child = 2000, at_once = 4;
    printf("sysfuzz: seed %llu, %ld calls\n", (unsigned long long)seed, total);
    fflush(stdout);
    parent = getpid();
    parent_pgid = getpgrp();
    area = mmap(NULL, BUFSZ + 2 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    /* Away from where the children's mmap addresses are drawn. */
    shared = mmap((void *)0x0a0000000000ull, 4096 * at_once, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (area == MAP_FAILED || shared == MAP_FAILED)
        return fail("mmap");
    mprotect(area + BUFSZ, 4096, PROT_NONE);
    unmapped = area + BUFSZ + 4096;
    munmap(unmapped, 4096);
    unterminated = area + BUFSZ - 8;
    memset(longpath, 'x', sizeof longpath - 1);
    for (int i = 0; i < (int)sizeof longpath - 1; i += 100)
        longpath[i] = '/';
    snprintf(fuzzdir[0], sizeof fuzzdir[0], "/tmp/sysfuzz.%d", (int)parent);
    struct stat st;
    snprintf(fuzzdir[1], sizeof fuzzdir[1], stat("/data", &st) == 0 ? "/data/sysfuzz.%d" : "/tmp/sysfuzz2.%d",
             (int)parent);
    for (int d = 0; d < 2; d++)
        if (mkdir(fuzzdir[d], 0755) != 0)
            return fail("mkdir the fuzz directory");
    for (int i = 0; i < 2; i++)
        if (stat(known_paths[i], &known[i]) != 0)
            return fail(known_paths[i]);
    if (honest())
        return 1;

    struct counts sum = {0};
    long made = 0;
    int children = 0, signalled = 0, killed = 0, since = 0;
    pid_t slot_pid[4] = {0};
    struct timespec slot_start[4];
    uint64_t slot_seed[4];
    while (made < total) {
        /* A batch of children, at_once running, then the honest check. */
        int busy = 0;
        for (int started = 0; (started < per_check && made < total) || busy;) {
            for (int s = 0; s < at_once; s++) {
                if (slot_pid[s] || started >= per_check || made >= total)
                    continue;
                memset(&shared[s], 0, sizeof shared[s]);
                /* Each child's sequence its own (not a shift of another's). */
                state = seed ^ ((uint64_t)children << 32);
                rnd();
                uint64_t cseed = rnd();
                children++;
                started++;
                pid_t c = fork();
                if (c < 0)
                    return fail("fork a child");
                if (c == 0) {
                    shared = &shared[s];
                    child(cseed, per_child);
                }
                slot_pid[s] = c;
                slot_seed[s] = cseed;
                clock_gettime(CLOCK_MONOTONIC, &slot_start[s]);
            }
            struct timespec t = {0, 2 * 1000 * 1000};
            nanosleep(&t, NULL);
            /* Ended children; anything else reaped (what a child forked,
             * if it came to us) is only collected. */
            int status;
            pid_t r;
            while ((r = waitpid(-1, &status, WNOHANG)) > 0)
                for (int s = 0; s < at_once; s++)
                    if (slot_pid[s] == r) {
                        signalled += WIFSIGNALED(status);
                        made += end_child(&sum, slot_pid, s);
                    }
            struct timespec now;
            clock_gettime(CLOCK_MONOTONIC, &now);
            for (int s = 0; s < at_once; s++) {
                long ms = (now.tv_sec - slot_start[s].tv_sec) * 1000 + (now.tv_nsec - slot_start[s].tv_nsec) / 1000000;
                if (slot_pid[s] && ms > 1000) {
                    if (verbose)
                        printf("sysfuzz: killing child %d (seed %llu), slow\n", (int)slot_pid[s],
                               (unsigned long long)slot_seed[s]);
                    fflush(stdout);
                    kill(slot_pid[s], SIGKILL);
                    if (waitpid(slot_pid[s], &status, 0) != slot_pid[s])
                        return fail("waitpid of a killed child");
                    killed++;
                    made += end_child(&sum, slot_pid, s);
                }
            }
            busy = 0;
            for (int s = 0; s < at_once; s++)
                busy |= slot_pid[s] != 0;
        }
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
        clean();
        if (honest())
            return 1;
        if (++since % 16 == 0 || verbose) {
            printf("sysfuzz: %ld calls, %d children, %d honest checks passed\n", made, children, check_no);
            fflush(stdout);
        }
    }
    for (int d = 0; d < 2; d++)
        rmdir(fuzzdir[d]);
    printf("sysfuzz: %llu calls made by %d children (%d ended by a signal, %d killed when slow)\n",
           (unsigned long long)sum.calls, children, signalled, killed);
    printf("sysfuzz: results: %llu succeeded, EINVAL %llu, EFAULT %llu, EBADF %llu, ENOENT %llu, ENOSYS %llu, "
           "other errors %llu\n",
           (unsigned long long)sum.ok, (unsigned long long)sum.einval, (unsigned long long)sum.efault,
           (unsigned long long)sum.ebadf, (unsigned long long)sum.enoent, (unsigned long long)sum.enosys,
           (unsigned long long)sum.other);
    printf("sysfuzz: %d honest checks passed\n", check_no);
    return 0;
}
