/*
 * Keep's instruction-counting TCG plugin (docs/performance.md, "I/O
 * paths").  Under `-icount shift=0,sleep=off` the guest's TSC counts
 * instructions only while the guest computes: a halted CPU waiting for a
 * device moves the clock on to the next timer deadline.  This plugin counts
 * executed guest instructions instead, one per instruction, and reports the
 * count between two marker instructions that a benchmark places around the
 * region it measures:
 *
 *   start   nopl 0x4b455001(%rax)   0f 1f 80 01 50 45 4b
 *   end     nopl 0x4b455002(%rax)   0f 1f 80 02 50 45 4b
 *
 * (multi-byte NOPs: without the plugin they do nothing).  At each end marker
 * it writes one line
 *
 *   icount-plugin: region N instructions I irqs Q
 *
 * N counting from 1, I the instructions executed from the start marker to
 * the end marker (one of the two markers counted), Q how many
 * times an instruction at one of the addresses given as `irq=ADDR` was
 * executed meanwhile (the host gives the kernel's timer-interrupt entry, so
 * Q is the timer interrupts in the region).
 *
 * Arguments (-plugin FILE,arg=value,...): `out=PATH` (default: stderr),
 * `irq=ADDR` (hex or decimal, up to 8 of them), `profile=PATH`.
 *
 * With `profile=PATH` it also counts each instruction apart and, at each end
 * marker, writes PATH.N with one line per instruction executed in region N:
 *
 *   ADDRESS SIZE BYTES COUNT
 *
 * (hex address, the instruction's size and first bytes in hex).  Programs
 * in different address spaces share addresses (most of Keep's programs and
 * static Linux ones are linked at 0x400000), so an instruction is told apart
 * by its address and its bytes; tools/whprof.py and tools/iprof.py --io find
 * which program it belongs to by the bytes.  A developer's tool: it slows
 * the guest down.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin-api.h"

PLUGIN_EXPORT int qemu_plugin_version = PLUGIN_API_VERSION;

static const unsigned char START[7] = {0x0f, 0x1f, 0x80, 0x01, 0x50, 0x45, 0x4b};
static const unsigned char END[7] = {0x0f, 0x1f, 0x80, 0x02, 0x50, 0x45, 0x4b};

/* One vCPU (Keep's machine and the Linux guest's have one), so plain
 * counters: QEMU's inline additions update them from translated code. */
static uint64_t insns, irqs;
static uint64_t start_insns, start_irqs;
static int open_region;
static unsigned long regions;
static uint64_t irq_addr[8];
static int n_irq;
static FILE *out;

/* The profile: one counter per instruction (address and bytes), in an open
 * hash table that only grows; QEMU's inline additions update `count`. */
struct insn_count {
	uint64_t vaddr, bytes, count, snap;
	unsigned size;
	struct insn_count *next;
};
#define PROFILE_BUCKETS (1u << 20)
static struct insn_count **profile;
static const char *profile_path;

/* All entries in one array, for the snapshots and the dumps. */
static struct insn_count **all_entries;
static size_t n_entries, cap_entries;

static void profile_note(struct insn_count *e)
{
	if (n_entries == cap_entries) {
		cap_entries = cap_entries ? 2 * cap_entries : 65536;
		all_entries = realloc(all_entries, cap_entries * sizeof *all_entries);
		if (!all_entries)
			abort();
	}
	all_entries[n_entries++] = e;
}

static struct insn_count *profile_entry(uint64_t vaddr, const unsigned char *data, unsigned size)
{
	uint64_t bytes = 0;
	memcpy(&bytes, data, size < 8 ? size : 8);
	uint64_t h = (vaddr ^ bytes * 0x9e3779b97f4a7c15ull ^ size) * 0xff51afd7ed558ccdull;
	struct insn_count **b = &profile[h >> 44 & (PROFILE_BUCKETS - 1)];
	for (struct insn_count *e = *b; e; e = e->next)
		if (e->vaddr == vaddr && e->bytes == bytes && e->size == size)
			return e;
	struct insn_count *e = calloc(1, sizeof *e);
	if (!e)
		abort();
	e->vaddr = vaddr, e->bytes = bytes, e->size = size;
	e->next = *b;
	*b = e;
	profile_note(e);
	return e;
}

static void profile_start(void)
{
	for (size_t i = 0; i < n_entries; i++)
		all_entries[i]->snap = all_entries[i]->count;
}

static void profile_dump(unsigned long region)
{
	char name[4096];
	snprintf(name, sizeof name, "%s.%lu", profile_path, region);
	FILE *f = fopen(name, "w");
	if (!f) {
		perror(name);
		return;
	}
	for (size_t i = 0; i < n_entries; i++) {
		struct insn_count *e = all_entries[i];
		if (e->count != e->snap)
			fprintf(f, "%llx %u %llx %llu\n", (unsigned long long)e->vaddr, e->size,
			        (unsigned long long)e->bytes, (unsigned long long)(e->count - e->snap));
	}
	fclose(f);
}

static void on_start(unsigned int vcpu, void *unused)
{
	(void)vcpu, (void)unused;
	start_insns = insns;
	start_irqs = irqs;
	open_region = 1;
	if (profile_path)
		profile_start();
}

static void on_end(unsigned int vcpu, void *unused)
{
	(void)vcpu, (void)unused;
	if (!open_region) {
		fprintf(out, "icount-plugin: end marker without a start marker\n");
		fflush(out);
		return;
	}
	open_region = 0;
	fprintf(out, "icount-plugin: region %lu instructions %llu irqs %llu\n", ++regions,
	        (unsigned long long)(insns - start_insns), (unsigned long long)(irqs - start_irqs));
	fflush(out);
	if (profile_path)
		profile_dump(regions);
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		/* Whether QEMU runs a marker's callback before or after the
		 * marker's own addition, it does the same for both markers: the
		 * difference counts exactly one of them. */
		if (qemu_plugin_insn_size(insn) == sizeof START) {
			const void *bytes = qemu_plugin_insn_data(insn);
			if (memcmp(bytes, START, sizeof START) == 0)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_start, QEMU_PLUGIN_CB_NO_REGS, NULL);
			else if (memcmp(bytes, END, sizeof END) == 0)
				qemu_plugin_register_vcpu_insn_exec_cb(insn, on_end, QEMU_PLUGIN_CB_NO_REGS, NULL);
		}
		qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &insns, 1);
		uint64_t va = qemu_plugin_insn_vaddr(insn);
		if (profile_path) {
			struct insn_count *e = profile_entry(va, qemu_plugin_insn_data(insn),
			                                     (unsigned)qemu_plugin_insn_size(insn));
			qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &e->count, 1);
		}
		for (int k = 0; k < n_irq; k++)
			if (va == irq_addr[k])
				qemu_plugin_register_vcpu_insn_exec_inline(insn, QEMU_PLUGIN_INLINE_ADD_U64, &irqs, 1);
	}
}

static void at_exit(qemu_plugin_id_t id, void *unused)
{
	(void)id, (void)unused;
	fprintf(out, "icount-plugin: exit: %lu regions, %llu instructions in all\n", regions,
	        (unsigned long long)insns);
	fflush(out);
}

PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	out = stderr;
	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], "out=", 4) == 0) {
			out = fopen(argv[i] + 4, "w");
			if (!out) {
				perror(argv[i] + 4);
				return -1;
			}
		} else if (strncmp(argv[i], "irq=", 4) == 0 && n_irq < 8) {
			char *end;
			irq_addr[n_irq++] = strtoull(argv[i] + 4, &end, 0);
			if (*end) {
				fprintf(stderr, "icount-plugin: bad address '%s'\n", argv[i] + 4);
				return -1;
			}
		} else if (strncmp(argv[i], "profile=", 8) == 0) {
			profile_path = argv[i] + 8;
			profile = calloc(PROFILE_BUCKETS, sizeof *profile);
			if (!profile)
				return -1;
		} else {
			fprintf(stderr, "icount-plugin: unknown argument '%s' (out=PATH, irq=ADDR, profile=PATH)\n",
			        argv[i]);
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
