/*
 * The I/O and workhorse benchmarks on the Linux guest
 * (docs/performance.md, "I/O paths"), counted like Keep's by the icount
 * plugin (tools/icount-plugin) between its two marker NOPs, under
 * `-icount shift=0,sleep=on`, on Keep's machine: the VT-d IOMMU (Linux
 * booted with intel_iommu=on), virtio-blk and virtio-net with
 * iommu_platform=on.  tools/linuxbench.py boots it with `linuxbench=io`
 * and Debian's virtio modules in the initramfs.
 *
 * After each region it prints `bench-io: NAME per=P irqs=Q`, Q the local
 * timer interrupts (/proc/interrupts, LOC) during the region, read outside
 * it: the guest reports them because Debian's package has no System.map
 * that would tell the plugin where the timer entry is.
 *
 *   linux.blk.read.seq64k   64 MiB from /dev/vda, O_DIRECT, 64 KiB preads
 *   linux.blk.read.seq4k    the same, 4 KiB preads
 *   linux.blk.write.seq64k  64 MiB to /dev/vda, O_DIRECT, 64 KiB pwrites
 *   linux.net.tcp.recv      4 MiB from the host over TCP (tools/netpeer.py
 *                           through hostfwd), read() until the host's FIN
 *   linux.net.tcp.send      4 MiB to the host, write(), shutdown, read()
 *                           until the host's FIN
 *   linux.net.udp.roundtrip 200 datagrams of 32 bytes echoed (recvfrom,
 *                           sendto), each after the previous echo came back
 *                           (the same exchanges and markers as Keep's
 *                           user/servers/netstack/src/bench.rs)
 *   linux.busybox.NAME      the workhorse's busybox workloads
 *                           (user/servers/workhorse/tests/busybench.sh, the same
 *                           script and runner as on Keep)
 *   linux.python.NAME       the workhorse's Python workloads
 *                           (user/servers/workhorse/tests/pybench.sh and
 *                           pybench.py, the same scripts, runner, python3.11
 *                           and standard library as on Keep)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "linuxio.h"

#define IO_RUNS 3
/* Runs of each Python workload (tools/workhorse_bench.py's PYTHON_RUNS). */
#define PY_RUNS 5
#define RUN_BYTES (64ull << 20)
#define MIB (RUN_BYTES >> 20)

static inline void marker_start(void)
{
	__asm__ volatile("nopl 0x4b455001(%%rax)" ::: "memory");
}

static inline void marker_end(void)
{
	__asm__ volatile("nopl 0x4b455002(%%rax)" ::: "memory");
}

/* Local timer interrupts so far (the LOC line of /proc/interrupts). */
static unsigned long long timer_irqs(void)
{
	static char buf[16384];
	int fd = open("/proc/interrupts", O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	char *p = strstr(buf, "LOC:");
	return p ? strtoull(p + 4, NULL, 10) : 0;
}

/* Runs op between the markers and reports it. */
static void region(const char *name, unsigned long long per, int (*op)(void *), void *arg)
{
	unsigned long long q0 = timer_irqs();
	marker_start();
	int r = op(arg);
	marker_end();
	unsigned long long q1 = timer_irqs();
	if (r)
		printf("bench-io: %s failed: %s\n", name, strerror(errno));
	else
		printf("bench-io: %s per=%llu irqs=%llu\n", name, per, q1 - q0);
	fflush(stdout);
}

static int load_module(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) != 0) {
		printf("linuxbench: io: %s: %s\n", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

/* ---- block ------------------------------------------------------------------ */

struct blk {
	int fd;
	size_t chunk;
	int write;
	unsigned char *buf;
};

static int blk_run(void *p)
{
	struct blk *b = p;
	for (unsigned long long at = 0; at < RUN_BYTES; at += b->chunk) {
		ssize_t n = b->write ? pwrite(b->fd, b->buf, b->chunk, at) : pread(b->fd, b->buf, b->chunk, at);
		if (n != (ssize_t)b->chunk)
			return -1;
	}
	return 0;
}

/* Word w of sector s of the disk image (tools/mkdisk.py). */
static uint64_t pattern(uint64_t s, uint64_t w)
{
	return ((s << 32) | w) * 0x9E3779B97F4A7C15ull;
}

static void blk_bench(const char *name, size_t chunk, int write)
{
	struct blk b = {.chunk = chunk, .write = write};
	b.fd = open("/dev/vda", (write ? O_RDWR : O_RDONLY) | O_DIRECT);
	if (b.fd < 0 || posix_memalign((void **)&b.buf, 4096, chunk)) {
		printf("bench-io: %s failed: /dev/vda: %s\n", name, strerror(errno));
		return;
	}
	memset(b.buf, 0x5a, chunk);
	for (int i = 0; i < IO_RUNS; i++)
		region(name, MIB, blk_run, &b);
	if (!write) {
		/* What was read last is the image's last chunk. */
		uint64_t s0 = (RUN_BYTES - chunk) / 512;
		for (size_t i = 0; i < chunk / 8; i++)
			if (((uint64_t *)b.buf)[i] != pattern(s0 + i / 64, i % 64)) {
				printf("linuxbench: io: %s read something else than the image\n", name);
				break;
			}
	}
	close(b.fd);
	free(b.buf);
}

/* ---- network ---------------------------------------------------------------- */

/* As Keep's netstack (bench.rs): the port QEMU forwards, the sizes. */
#define NET_PORT 5001
#define TCP_BYTES (4 << 20)
#define TRIPS 200
#define DATAGRAM 32

/* eth0 up as 10.0.2.15/24, the address QEMU's hostfwd forwards to. */
static int net_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq ifr = {0};
	strcpy(ifr.ifr_name, "eth0");
	struct sockaddr_in *a = (struct sockaddr_in *)&ifr.ifr_addr;
	a->sin_family = AF_INET;
	inet_pton(AF_INET, "10.0.2.15", &a->sin_addr);
	int r = ioctl(s, SIOCSIFADDR, &ifr);
	inet_pton(AF_INET, "255.255.255.0", &a->sin_addr);
	r |= ioctl(s, SIOCSIFNETMASK, &ifr);
	r |= ioctl(s, SIOCGIFFLAGS, &ifr);
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	r |= ioctl(s, SIOCSIFFLAGS, &ifr);
	close(s);
	return r;
}

struct tcp_run {
	int fd;
	int send;
	char *buf;
	size_t moved;
};

static int tcp_run(void *p)
{
	struct tcp_run *t = p;
	t->moved = 0;
	if (t->send) {
		while (t->moved < TCP_BYTES) {
			size_t at = t->moved % (251 * 64), want = TCP_BYTES - t->moved;
			if (want > 251 * 64 - at)
				want = 251 * 64 - at;
			ssize_t n = write(t->fd, t->buf + at, want);
			if (n <= 0)
				return -1;
			t->moved += n;
		}
		shutdown(t->fd, SHUT_WR);
		/* Until the host's FIN: everything was delivered. */
		while (read(t->fd, t->buf + 65536, 65536) > 0)
			;
		return 0;
	}
	for (;;) {
		ssize_t n = read(t->fd, t->buf + 65536, 65536);
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		t->moved += n;
	}
	if (t->moved != TCP_BYTES) {
		errno = EPROTO;
		return -1;
	}
	return 0;
}

static void tcp_bench(const char *op, int send, char *buf)
{
	char name[64];
	snprintf(name, sizeof name, "linux.net.%s", op);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(NET_PORT)};
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) {
		printf("bench-io: %s failed: listen: %s\n", name, strerror(errno));
		return;
	}
	for (int i = 0; i < IO_RUNS; i++) {
		printf("bench-net: peer %s %d\n", op, TCP_BYTES);
		fflush(stdout);
		struct tcp_run t = {.send = send, .buf = buf};
		t.fd = accept(l, NULL, NULL);
		if (t.fd < 0) {
			marker_start();
			marker_end();
			printf("bench-io: %s failed: accept: %s\n", name, strerror(errno));
			continue;
		}
		printf("bench-net: go\n");
		fflush(stdout);
		region(name, TCP_BYTES >> 20, tcp_run, &t);
		close(t.fd);
	}
	close(l);
}

struct udp_run {
	int fd;
	int trips;
};

static int udp_run(void *p)
{
	struct udp_run *u = p;
	char d[2048];
	struct sockaddr_in from;
	for (int k = 0; k < u->trips; k++) {
		socklen_t fl = sizeof from;
		ssize_t n = recvfrom(u->fd, d, sizeof d, 0, (struct sockaddr *)&from, &fl);
		if (n < 0 || sendto(u->fd, d, n, 0, (struct sockaddr *)&from, fl) != n)
			return -1;
	}
	return 0;
}

static void udp_bench(void)
{
	const char *name = "linux.net.udp.roundtrip";
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(NET_PORT)};
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a)) {
		printf("bench-io: %s failed: bind: %s\n", name, strerror(errno));
		return;
	}
	for (int i = 0; i < IO_RUNS; i++) {
		printf("bench-net: peer udp.roundtrip %d\n", TRIPS);
		fflush(stdout);
		/* Datagram 0 is echoed outside the region, as on Keep. */
		struct udp_run first = {.fd = s, .trips = 1}, u = {.fd = s, .trips = TRIPS};
		if (udp_run(&first)) {
			marker_start();
			marker_end();
			printf("bench-io: %s failed: %s\n", name, strerror(errno));
			continue;
		}
		region(name, TRIPS, udp_run, &u);
	}
	close(s);
}

static void net_bench(void)
{
	if (net_up()) {
		printf("linuxbench: io: eth0: %s\n", strerror(errno));
		return;
	}
	char *buf = malloc(2 * 65536);
	for (int i = 0; i < 251 * 64; i++)
		buf[i] = i % 251;
	tcp_bench("tcp.recv", 0, buf);
	tcp_bench("tcp.send", 1, buf);
	udp_bench();
	free(buf);
}

/* ---- the workhorse's busybox and Python workloads --------------------------- */

/* Runs `busybox sh /tests/SCRIPT DIR RUNS linux.` and waits for it. */
static void workloads(const char *script, const char *dir, int n)
{
	char path[64], runs[8];
	snprintf(path, sizeof path, "/tests/%s", script);
	snprintf(runs, sizeof runs, "%d", n);
	char *argv[] = {"/bin/busybox", "sh", path, (char *)dir, runs, "linux.", NULL};
	char *envp[] = {"PATH=/bin", NULL};
	pid_t c = fork();
	if (c == 0) {
		execve(argv[0], argv, envp);
		_exit(127);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		printf("linuxbench: io: %s failed (status %#x)\n", script, st);
	fflush(stdout);
}

void io_main(void)
{
	static const char *modules[] = {
		"virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
		"virtio_blk", "failover", "net_failover", "virtio_net",
	};
	mkdir("/proc", 0755);
	mount("proc", "/proc", "proc", 0, NULL);
	for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
		char path[64];
		snprintf(path, sizeof path, "/lib/%s.ko", modules[i]);
		load_module(path);
	}
	mount("devtmpfs", "/dev", "devtmpfs", 0, NULL);
	for (int i = 0; i < 100 && access("/dev/vda", F_OK); i++)
		usleep(20000);
	/* The devices' DMA goes through the IOMMU: Linux made IOMMU groups. */
	mkdir("/sys", 0755);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	int groups = 0;
	DIR *d = opendir("/sys/kernel/iommu_groups");
	for (struct dirent *e; d && (e = readdir(d));)
		groups += e->d_name[0] != '.';
	if (d)
		closedir(d);
	printf("linuxbench: io: %d IOMMU groups, /dev/vda %s\n", groups, access("/dev/vda", F_OK) ? "missing" : "present");
	printf("linuxbench: io: start (%d runs each)\n", IO_RUNS);
	fflush(stdout);
	/* linuxio=PARTS on the command line (blk, net, busybox, python, comma-separated)
	 * runs only those (tools/linuxbench.py --io-only PARTS). */
	const char *parts = getenv("linuxio");
#define WANTS(p) (!parts || strstr(parts, p))
	if (WANTS("blk")) {
		blk_bench("linux.blk.read.seq64k", 64 << 10, 0);
		blk_bench("linux.blk.read.seq4k", 4 << 10, 0);
		blk_bench("linux.blk.write.seq64k", 64 << 10, 1);
	}
	if (WANTS("net"))
		net_bench();
	if (WANTS("busybox"))
		workloads("busybench.sh", "/tmp/bb", IO_RUNS);
	if (WANTS("python"))
		workloads("pybench.sh", "/tmp/py", PY_RUNS);
}
