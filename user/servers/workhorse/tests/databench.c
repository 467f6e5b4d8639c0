/* databench: the workhorse's own file I/O on /data, the figures trusted
 * files are compared with (tools/tfiles_bench.py; docs/trusted-core.md,
 * "Trusted files").  Not a conformance test.
 *
 *   databench FILE RUNS   makes FILE (1 MiB), then RUNS times each of
 *     wh.data.read.4k    256 preads of 4 KiB
 *     wh.data.read.64k   16 preads of 64 KiB
 *     wh.data.write.4k   256 pwrites of 4 KiB, each followed by fsync
 *     wh.data.write.64k  16 pwrites of 64 KiB, each followed by fsync
 *   (a write made durable before the next, as a trusted write is before
 *   it is acknowledged), each MiB between the icount plugin's markers,
 *   then `bench-io: NAME per=1` (or `bench-io: NAME failed: ...`).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1 << 20)

static char buf[64 << 10];

static int pass(int fd, const char *name, size_t size, int write)
{
	int ok = 1;
	__asm__ volatile("nopl 0x4b455001(%%rax)" ::: "memory");
	for (size_t off = 0; off < MIB && ok; off += size) {
		if (write)
			ok = pwrite(fd, buf, size, off) == (ssize_t)size && fsync(fd) == 0;
		else
			ok = pread(fd, buf, size, off) == (ssize_t)size;
	}
	__asm__ volatile("nopl 0x4b455002(%%rax)" ::: "memory");
	if (ok)
		printf("bench-io: %s per=1\n", name);
	else
		printf("bench-io: %s failed: %s\n", name, write ? "pwrite or fsync" : "pread");
	fflush(stdout);
	return ok;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: databench FILE RUNS\n");
		return 2;
	}
	int runs = atoi(argv[2]);
	int fd = open(argv[1], O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0) {
		perror("databench: open");
		return 1;
	}
	memset(buf, 'd', sizeof buf);
	for (size_t off = 0; off < MIB; off += sizeof buf)
		if (pwrite(fd, buf, sizeof buf, off) != (ssize_t)sizeof buf) {
			perror("databench: pwrite");
			return 1;
		}
	fsync(fd);
	int ok = 1;
	for (int r = 0; r < runs; r++) {
		ok &= pass(fd, "wh.data.read.4k", 4096, 0);
		ok &= pass(fd, "wh.data.read.64k", 65536, 0);
		ok &= pass(fd, "wh.data.write.4k", 4096, 1);
		ok &= pass(fd, "wh.data.write.64k", 65536, 1);
	}
	close(fd);
	unlink(argv[1]);
	printf("databench: done\n");
	return ok ? 0 : 1;
}
