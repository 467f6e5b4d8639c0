/*
 * The EROS-style operations on a Linux guest, measured the way
 * Keep's suite measures them (docs/performance.md): under QEMU's
 * `-icount shift=0` the TSC advances by one per executed instruction, so an
 * `lfence; rdtsc` pair counts instructions, user and kernel alike.
 *
 * It runs as /init of an initramfs (tools/linuxbench.py builds it), prints
 * one line per benchmark,
 *     linuxbench: {"name": N, "unit": "instructions", "samples": [...]}
 * with the figures of RUNS batches after WARMUP warm-up batches, then
 * `linuxbench: done` and powers the guest off.
 *
 * The operations and their Keep counterparts:
 *   linux.syscall.null            getppid through `syscall`        syscall.null
 *   linux.sched.yield_switch      sched_yield between two processes sched.yield_switch
 *   linux.fault.page.user_pager   a minor fault resolved by a       fault.page.user_pager
 *                                 userfaultfd handler thread
 *                                 (UFFDIO_CONTINUE)
 *   linux.fault.page.kernel       the same fault resolved by the
 *                                 kernel itself (no userfaultfd)
 *   linux.fault.exception.handler #DE to a SIGFPE handler that      fault.exception.handler
 *                                 fixes the divisor; retried
 *   linux.mem.heap_grow           brk by a page and a write to it   mem.heap_grow
 *   linux.pipe.roundtrip          one byte there and back through   (ipc.call_reply.cross_as)
 *                                 two pipes between two processes
 *   linux.proc.spawn              posix_spawn of this program,      proc.create.constructor
 *                                 which exits at once, and waitpid
 *   linux.proc.fork_exec_wait     fork, execve of busybox true,     proc.create.constructor,
 *                                 waitpid                           wh.proc.fork_exec_wait
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/reboot.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "linuxio.h"

#define RUNS 21
/* Warm-up batches before the RUNS: a fresh pair of Linux tasks switches
 * faster (445 instructions per yield) for its first few thousand switches,
 * then settles at a steady cost (about 2,200) that it keeps; the warm-up
 * covers that change, so every figure is the steady state. */
#define WARMUP 40
#define CALLS 1000  /* per batch, single invocations */
#define TRIPS 200   /* per batch, round trips and yields */
#define SAMPLES 64  /* per batch, sampled operations */
#define HEAP_PAGES 32

typedef uint64_t u64;

static inline u64 tsc(void)
{
	uint32_t lo, hi;
	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return (u64)hi << 32 | lo;
}

static int cmp_u64(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;
	return x < y ? -1 : x > y;
}

static u64 median(const u64 *v, int n)
{
	u64 t[RUNS + 1];
	memcpy(t, v, n * sizeof *t);
	qsort(t, n, sizeof *t, cmp_u64);
	return t[n / 2];
}

static void report(const char *name, const u64 *runs)
{
	printf("linuxbench: {\"name\": \"%s\", \"unit\": \"instructions\", \"samples\": [", name);
	for (int i = 0; i < RUNS; i++)
		printf("%s%llu", i ? ", " : "", (unsigned long long)runs[i]);
	printf("]}\n");
	fflush(stdout);
}

static void not_measured(const char *name, const char *why)
{
	printf("linuxbench: %s not measured: %s (%s)\n", name, why, strerror(errno));
	fflush(stdout);
}

/* Back-to-back: one rdtsc pair around n calls of op; the same loop around
 * an empty function, timed the same way, is subtracted. */
static void __attribute__((noinline)) empty(void)
{
	__asm__ volatile("" ::: "memory");
}

static u64 batch(void (*op)(void), int n)
{
	u64 t0 = tsc();
	for (int i = 0; i < n; i++)
		op();
	return tsc() - t0;
}

static void back_to_back(u64 *runs, void (*op)(void), int n, int divisor)
{
	u64 base[RUNS];
	batch(empty, n);
	for (int i = 0; i < RUNS; i++)
		base[i] = batch(empty, n);
	u64 loop = median(base, RUNS);
	for (int i = 0; i < WARMUP; i++)
		batch(op, n);
	for (int i = 0; i < RUNS; i++) {
		u64 t = batch(op, n);
		runs[i] = (t > loop ? t - loop : 0) / n / divisor;
	}
}

/* The cost of an empty rdtsc pair, subtracted from every sampled operation. */
static u64 pair;

static void measure_pair(void)
{
	u64 v[RUNS];
	for (int i = 0; i < RUNS; i++) {
		u64 t0 = tsc();
		v[i] = tsc() - t0;
	}
	pair = median(v, RUNS);
}

static inline u64 since(u64 t0)
{
	u64 d = tsc() - t0;
	return d > pair ? d - pair : 0;
}

/* Sampled: per batch, n operations, each timed by `one` (which returns its
 * cost, or FAILED), then `after` (untimed; may be NULL); the batch's figure
 * is the mean.  -1 if an operation failed. */
#define FAILED ((u64)-1)

static int sampled(u64 *runs, int n, u64 (*one)(int), void (*after)(void))
{
	for (int r = -WARMUP; r < RUNS; r++) {
		u64 sum = 0;
		for (int i = 0; i < n; i++) {
			u64 c = one(i);
			if (c == FAILED)
				return -1;
			sum += c;
		}
		if (after)
			after();
		if (r >= 0)
			runs[r] = sum / n;
	}
	return 0;
}

/* ---- null system call ---------------------------------------------------- */

static void __attribute__((noinline)) null_syscall(void)
{
	long r = SYS_getppid;
	__asm__ volatile("syscall" : "+a"(r) : : "rcx", "r11", "memory");
}

/* ---- yield between two processes ------------------------------------------ */

static void __attribute__((noinline)) yield(void)
{
	sched_yield();
}

static void yield_switch(void)
{
	pid_t child = fork();
	if (child < 0)
		return not_measured("linux.sched.yield_switch", "fork");
	if (child == 0)
		for (;;)
			sched_yield();
	u64 runs[RUNS];
	/* One yield of this process is two switches, as in Keep's suite. */
	back_to_back(runs, yield, TRIPS, 2);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	report("linux.sched.yield_switch", runs);
}

/* ---- pipe round trip -------------------------------------------------------- */

static int to_child[2], to_parent[2];

static void __attribute__((noinline)) pipe_trip(void)
{
	char c = 1;
	if (write(to_child[1], &c, 1) != 1 || read(to_parent[0], &c, 1) != 1)
		abort();
}

static void pipe_roundtrip(void)
{
	if (pipe(to_child) || pipe(to_parent))
		return not_measured("linux.pipe.roundtrip", "pipe");
	pid_t child = fork();
	if (child < 0)
		return not_measured("linux.pipe.roundtrip", "fork");
	if (child == 0) {
		char c;
		close(to_child[1]);
		close(to_parent[0]);
		while (read(to_child[0], &c, 1) == 1 && write(to_parent[1], &c, 1) == 1)
			;
		_exit(0);
	}
	close(to_child[0]);
	close(to_parent[1]);
	u64 runs[RUNS];
	back_to_back(runs, pipe_trip, TRIPS, 1);
	close(to_child[1]);
	waitpid(child, NULL, 0);
	report("linux.pipe.roundtrip", runs);
}

/* ---- page faults ------------------------------------------------------------ */

/* A page of shared memory that stays in the page cache: after MADV_DONTNEED
 * drops its mapping, the next write is a minor fault that maps the same
 * page again, without zeroing or copying it (what Keep's pager does: MAP an
 * existing page). */
static volatile u64 *shared_page(int *fd)
{
	*fd = memfd_create("linuxbench", 0);
	if (*fd < 0 || ftruncate(*fd, 4096))
		return NULL;
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (p == MAP_FAILED)
		return NULL;
	*(volatile u64 *)p = 1; /* into the page cache */
	return p;
}

static volatile u64 *fault_page;

/* A write to fault_page after its mapping was dropped. */
static u64 one_fault(int i)
{
	volatile u64 *p = fault_page; /* in a register, not loaded between the rdtscs */
	madvise((void *)p, 4096, MADV_DONTNEED);
	u64 t0 = tsc();
	*p = i;
	return since(t0);
}

static void kernel_fault(void)
{
	int fd;
	if (!(fault_page = shared_page(&fd)))
		return not_measured("linux.fault.page.kernel", "memfd");
	u64 runs[RUNS];
	sampled(runs, SAMPLES, one_fault, NULL);
	munmap((void *)fault_page, 4096);
	close(fd);
	report("linux.fault.page.kernel", runs);
}

static int uffd;

static void *pager(void *unused)
{
	struct uffd_msg msg;
	(void)unused;
	for (;;) {
		if (read(uffd, &msg, sizeof msg) != sizeof msg)
			return NULL;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		struct uffdio_continue c = {
			.range = {.start = msg.arg.pagefault.address & ~4095ull, .len = 4096},
		};
		if (ioctl(uffd, UFFDIO_CONTINUE, &c))
			return NULL;
	}
}

static void user_pager_fault(void)
{
	const char *name = "linux.fault.page.user_pager";
	int fd;
	if (!(fault_page = shared_page(&fd)))
		return not_measured(name, "memfd");
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		return not_measured(name, "userfaultfd");
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_MINOR_SHMEM};
	struct uffdio_register reg = {
		.range = {.start = (u64)fault_page, .len = 4096},
		.mode = UFFDIO_REGISTER_MODE_MINOR,
	};
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg))
		return not_measured(name, "UFFDIO_API/REGISTER with minor faults");
	pthread_t t;
	if (pthread_create(&t, NULL, pager, NULL))
		return not_measured(name, "pthread_create");
	u64 runs[RUNS];
	sampled(runs, SAMPLES, one_fault, NULL);
	report(name, runs);
	/* The pager thread stays blocked in read(); the guest powers off. */
}

/* ---- exception to a handler --------------------------------------------------- */

static volatile u64 divisor;

static void on_fpe(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	divisor = 1; /* the retried div succeeds */
}

/* A divide by zero, retried after the handler. */
static u64 one_divide(int i)
{
	(void)i;
	divisor = 0;
	u64 t0 = tsc();
	u64 rax = 1, rdx = 0;
	__asm__ volatile("divq %2" : "+a"(rax), "+d"(rdx) : "m"(divisor) : "cc");
	return since(t0);
}

static void exception_handler(void)
{
	struct sigaction sa = {.sa_sigaction = on_fpe, .sa_flags = SA_SIGINFO | SA_NODEFER};
	if (sigaction(SIGFPE, &sa, NULL))
		return not_measured("linux.fault.exception.handler", "sigaction");
	u64 runs[RUNS];
	sampled(runs, SAMPLES, one_divide, NULL);
	report("linux.fault.exception.handler", runs);
}

/* ---- heap growth ---------------------------------------------------------------- */

static u64 heap_start;

/* Page i of a batch: brk over it and the first write to it. */
static u64 one_page(int i)
{
	u64 start = heap_start; /* in a register, not loaded between the rdtscs */
	u64 t0 = tsc();
	u64 end = start + (i + 1) * 4096ull;
	if ((u64)syscall(SYS_brk, end) != end)
		return FAILED;
	*(volatile u64 *)(end - 4096) = i;
	return since(t0);
}

static void heap_shrink(void)
{
	syscall(SYS_brk, heap_start); /* untimed: give the pages back */
}

static void heap_grow(void)
{
	heap_start = syscall(SYS_brk, 0);
	u64 runs[RUNS];
	if (sampled(runs, HEAP_PAGES, one_page, heap_shrink))
		return not_measured("linux.mem.heap_grow", "brk");
	report("linux.mem.heap_grow", runs);
}

/* ---- process creation ---------------------------------------------------- */

/* Keep's proc.create.constructor: a process made, run to its exit (this
 * program again, told to exit at once) and reaped.  The binary is in the
 * initramfs (tmpfs): no disk. */
#define SPAWNS 4 /* per batch: each is a whole process */
static char *spawn_argv[] = {"/init", "exit", NULL};
static char *spawn_envp[] = {NULL};

static u64 one_spawn(int i)
{
	(void)i;
	pid_t pid;
	int st;
	u64 t0 = tsc();
	if (posix_spawn(&pid, spawn_argv[0], NULL, NULL, spawn_argv, spawn_envp) != 0)
		return FAILED;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return FAILED;
	return since(t0);
}

/* fork+exec+wait runs busybox's true (static), as the workhorse's
 * wh.proc.fork_exec_wait does (user/servers/workhorse/tests/sysbench.c). */
static char *true_argv[] = {"/bin/true", NULL};

static u64 one_fork_exec(int i)
{
	(void)i;
	int st;
	u64 t0 = tsc();
	pid_t pid = fork();
	if (pid < 0)
		return FAILED;
	if (pid == 0) {
		execve(true_argv[0], true_argv, spawn_envp);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return FAILED;
	return since(t0);
}

static void proc_create(void)
{
	u64 runs[RUNS];
	if (sampled(runs, SPAWNS, one_spawn, NULL))
		not_measured("linux.proc.spawn", "posix_spawn or waitpid failed");
	else
		report("linux.proc.spawn", runs);
	if (sampled(runs, SPAWNS, one_fork_exec, NULL))
		not_measured("linux.proc.fork_exec_wait", "fork, execve or waitpid failed");
	else
		report("linux.proc.fork_exec_wait", runs);
}

int main(int argc, char **argv)
{
	/* The child of proc_create: nothing to do. */
	if (argc > 1 && strcmp(argv[1], "exit") == 0)
		return 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* linuxbench=io on the kernel command line: the I/O benchmarks
	 * (linuxio.c) instead of these. */
	const char *mode = getenv("linuxbench");
	if (mode && strcmp(mode, "io") == 0) {
		io_main();
		printf("linuxbench: done\n");
		fflush(stdout);
		sync();
		reboot(RB_POWER_OFF);
		return 0;
	}
	printf("linuxbench: start (rdtsc pair and loops subtracted; %d batches after %d of warm-up)\n", RUNS, WARMUP);
	measure_pair();
	u64 runs[RUNS];
	back_to_back(runs, null_syscall, CALLS, 1);
	report("linux.syscall.null", runs);
	yield_switch();
	kernel_fault();
	user_pager_fault();
	exception_handler();
	heap_grow();
	pipe_roundtrip();
	proc_create();
	printf("linuxbench: done\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	return 0;
}
