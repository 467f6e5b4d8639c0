/* benchrun: runs a workload between the icount plugin's markers
 * (tools/icount-plugin; docs/performance.md, "I/O paths") and makes its
 * input files.  The same static program runs under Keep's workhorse and on
 * the Linux guest (tools/linuxbench.py), so both run the same workloads
 * the same way (busybench.sh).  Not a conformance test.
 *
 *   benchrun run NAME PER PROGRAM ARGS...  fork, execv PROGRAM (stdout to
 *       /dev/null), wait; the markers around the three; then prints
 *       `bench-io: NAME per=PER [irqs=Q]` (or `bench-io: NAME failed: ...`),
 *       Q the timer interrupts meanwhile where /proc/interrupts says
 *   benchrun text FILE BYTES     FILE: lines of pseudo-random hex words
 *   benchrun lines FILE N        FILE: N lines of one pseudo-random word
 *   benchrun files DIR N         DIR/f1..fN: small files (100-1100 bytes)
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long long seed = 88172645463325252ull;

static unsigned long long next(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

/* Local timer interrupts so far, where the system has /proc/interrupts
 * (the Linux guest; the workhorse has none, and there the plugin counts
 * the kernel's timer entry); -1 where not. */
static long long timer_irqs(void)
{
	char buf[8192];
	int fd = open("/proc/interrupts", O_RDONLY);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	char *p = strstr(buf, "LOC:");
	return p ? strtoll(p + 4, NULL, 10) : -1;
}

static int run(const char *name, const char *per, char **argv)
{
	int st = -1;
	long long q0 = timer_irqs();
	__asm__ volatile("nopl 0x4b455001(%%rax)" ::: "memory");
	pid_t c = fork();
	if (c == 0) {
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0)
			dup2(null, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (c > 0)
		waitpid(c, &st, 0);
	__asm__ volatile("nopl 0x4b455002(%%rax)" ::: "memory");
	long long q1 = timer_irqs();
	if (c < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		printf("bench-io: %s failed: %s exited with status %#x\n", name, argv[0], st);
	else if (q0 >= 0 && q1 >= q0)
		printf("bench-io: %s per=%s irqs=%lld\n", name, per, q1 - q0);
	else
		printf("bench-io: %s per=%s\n", name, per);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "run") == 0)
		return run(argv[2], argv[3], argv + 4);
	if (argc != 4) {
		fprintf(stderr, "usage: benchrun run NAME PER PROGRAM ARGS... | text FILE BYTES | lines FILE N | files DIR N\n");
		return 2;
	}
	long n = atol(argv[3]);
	if (strcmp(argv[1], "files") == 0) {
		char path[512];
		mkdir(argv[2], 0755);
		for (long i = 1; i <= n; i++) {
			snprintf(path, sizeof path, "%s/f%ld", argv[2], i);
			FILE *f = fopen(path, "w");
			if (!f)
				return 1;
			for (long k = 100 + next() % 1000; k > 0; k--)
				fputc('a' + next() % 26, f);
			fclose(f);
		}
		return 0;
	}
	FILE *f = fopen(argv[2], "w");
	if (!f)
		return 1;
	if (strcmp(argv[1], "text") == 0) {
		for (long done = 0; done < n;) {
			char line[96];
			int len = snprintf(line, sizeof line, "%08llx %04llx %08llx\n", next() >> 32, next() % 4096,
			                   next() % 1000000);
			if (done + len > n)
				len = n - done;
			fwrite(line, 1, len, f);
			done += len;
		}
	} else {
		for (long i = 0; i < n; i++)
			fprintf(f, "%08llx\n", next() >> 32);
	}
	return fclose(f) != 0;
}
