/*
 * Keep's kernel-coverage TCG plugin (docs/coverage.md).  It records every
 * translation block that starts at a kernel address (at or above `lo=ADDR`,
 * default 0xffffffff80000000, the kernel's link address in
 * kernel/arch/x86_64/kernel.ld) and counts its executions with QEMU's
 * inline addition.  When QEMU exits, and whenever the guest executes the
 * marker instruction below, it writes `out=PATH` (default: stderr) anew:
 * one line per executed instruction address of such blocks,
 *
 *   ADDRESS COUNT
 *
 * (hex address; COUNT the executions of the blocks that hold it).
 * tools/kcov.py maps these addresses onto the kernel's basic blocks.
 * With `every=MS` a thread writes it every MS milliseconds too, so that a
 * QEMU killed with SIGKILL (a test's power cut or time-out) still leaves
 * its trace: each write goes to PATH.tmp and is renamed over PATH.
 *
 *   dump    nopl 0x4b455003(%rax)   0f 1f 80 03 50 45 4b
 *
 * A block is keyed by its address and size: the kernel's code does not
 * change, so a block translated again (after a flush) reuses its counter.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin-api.h"

PLUGIN_EXPORT int qemu_plugin_version = PLUGIN_API_VERSION;

struct block {
	uint64_t vaddr, count;
	unsigned n_insns;
	uint64_t *insn;  /* the instructions' addresses */
	struct block *next;
};

#define BUCKETS (1u << 16)
static struct block *table[BUCKETS];
static struct block **all;
static size_t n_all, cap_all;
static uint64_t lo = 0xffffffff80000000ull;
static const char *out_path;
static char *tmp_path;
static long every_ms;
/* The table against the dumping thread; the counts are read unlocked (a
 * count only has to be seen non-zero). */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void dump(void)
{
	pthread_mutex_lock(&lock);
	FILE *f = out_path ? fopen(tmp_path, "w") : stderr;
	if (!f) {
		perror(tmp_path);
		pthread_mutex_unlock(&lock);
		return;
	}
	for (size_t i = 0; i < n_all; i++) {
		struct block *b = all[i];
		if (!b->count)
			continue;
		for (unsigned k = 0; k < b->n_insns; k++)
			fprintf(f, "%llx %llu\n", (unsigned long long)b->insn[k], (unsigned long long)b->count);
	}
	if (out_path) {
		if (fclose(f) == 0)
			rename(tmp_path, out_path);
	} else {
		fflush(f);
	}
	pthread_mutex_unlock(&lock);
}

static void *dumper(void *unused)
{
	(void)unused;
	struct timespec t = {every_ms / 1000, (every_ms % 1000) * 1000000};
	for (;;) {
		nanosleep(&t, NULL);
		dump();
	}
	return NULL;
}

static void on_dump(unsigned int vcpu, void *unused)
{
	(void)vcpu, (void)unused;
	dump();
}

static const unsigned char DUMP[7] = {0x0f, 0x1f, 0x80, 0x03, 0x50, 0x45, 0x4b};

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		if (qemu_plugin_insn_size(insn) == sizeof DUMP &&
		    memcmp(qemu_plugin_insn_data(insn), DUMP, sizeof DUMP) == 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, on_dump, QEMU_PLUGIN_CB_NO_REGS, NULL);
	}
	if (va < lo || n == 0)
		return;
	pthread_mutex_lock(&lock);
	struct block **slot = &table[(va * 0x9e3779b97f4a7c15ull) >> 48 & (BUCKETS - 1)];
	struct block *b;
	for (b = *slot; b; b = b->next)
		if (b->vaddr == va && b->n_insns == n)
			break;
	if (!b) {
		b = calloc(1, sizeof *b);
		if (!b || !(b->insn = malloc(n * sizeof *b->insn)))
			abort();
		b->vaddr = va;
		b->n_insns = (unsigned)n;
		for (size_t i = 0; i < n; i++)
			b->insn[i] = qemu_plugin_insn_vaddr(qemu_plugin_tb_get_insn(tb, i));
		b->next = *slot;
		*slot = b;
		if (n_all == cap_all) {
			cap_all = cap_all ? 2 * cap_all : 4096;
			all = realloc(all, cap_all * sizeof *all);
			if (!all)
				abort();
		}
		all[n_all++] = b;
	}
	pthread_mutex_unlock(&lock);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, &b->count, 1);
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
	(void)id, (void)unused;
	dump();
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0) {
			out_path = argv[i] + 4;
		} else if (strncmp(argv[i], "lo=", 3) == 0) {
			char *end;
			lo = strtoull(argv[i] + 3, &end, 0);
			if (*end) {
				fprintf(stderr, "kcov-plugin: bad address '%s'\n", argv[i] + 3);
				return -1;
			}
		} else if (strncmp(argv[i], "every=", 6) == 0) {
			char *end;
			every_ms = strtol(argv[i] + 6, &end, 0);
			if (*end || every_ms <= 0) {
				fprintf(stderr, "kcov-plugin: bad interval '%s'\n", argv[i] + 6);
				return -1;
			}
		} else {
			fprintf(stderr, "kcov-plugin: unknown argument '%s' (out=PATH, lo=ADDR, every=MS)\n", argv[i]);
			return -1;
		}
	}
	if (out_path) {
		size_t n = strlen(out_path);
		if (!(tmp_path = malloc(n + 5)))
			return -1;
		memcpy(tmp_path, out_path, n);
		memcpy(tmp_path + n, ".tmp", 5);
	}
	if (every_ms && out_path) {
		pthread_t t;
		if (pthread_create(&t, NULL, dumper, NULL) != 0)
			return -1;
		pthread_detach(t);
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
