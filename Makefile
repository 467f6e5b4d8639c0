# Keep: top-level build.  `make run`, `make test`, `make bench`, `make debug`.
# Everything lands in build/.  The QEMU command line lives in tools/qemu.py.

ROOT := $(abspath .)
B := build
KB := $(B)/kernel
ACCEL ?= auto
PYTHON ?= python3

# Capability-lookup strategy of the kernel (seed 000, Table 2): `mmu` (the
# capability segment looked up through the MMU, the default), `hash` (a
# software hash table) or `regs` (a small fixed table).  `make bench` builds
# the other two into build/lookup-hash and build/lookup-regs.
CAP_LOOKUP ?= mmu
CAP_LOOKUP_FLAG_mmu := -DCAP_LOOKUP_MMU
CAP_LOOKUP_FLAG_hash := -DCAP_LOOKUP_HASH
CAP_LOOKUP_FLAG_regs := -DCAP_LOOKUP_REGS
ifeq ($(CAP_LOOKUP_FLAG_$(CAP_LOOKUP)),)
$(error CAP_LOOKUP must be mmu, hash or regs, not '$(CAP_LOOKUP)')
endif

CC := gcc
KERNEL_DIRS := kernel/include kernel/arch/x86_64 kernel/lib kernel/mm kernel/cap kernel/object kernel/ipc kernel/core
KCFLAGS := -std=gnu11 -ffreestanding -fno-builtin -nostdlib -mno-red-zone -mgeneral-regs-only \
	-mcmodel=kernel -fno-pic -fno-pie -fno-stack-protector -fno-omit-frame-pointer \
	-fno-asynchronous-unwind-tables -O2 -g -MMD -MP \
	-Wall -Wextra -Werror -Wshadow -Wformat=2 -Wcast-qual -Wstrict-prototypes -Wmissing-prototypes \
	$(CAP_LOOKUP_FLAG_$(CAP_LOOKUP)) $(addprefix -I,$(KERNEL_DIRS))
KLDFLAGS := -nostdlib -static -no-pie -Wl,--no-dynamic-linker -Wl,-z,max-page-size=4096 \
	-Wl,--build-id=none -T kernel/arch/x86_64/kernel.ld

KSRC := $(wildcard kernel/arch/x86_64/*.c kernel/arch/x86_64/*.S kernel/lib/*.c kernel/mm/*.c \
	kernel/cap/*.c kernel/object/*.c kernel/ipc/*.c kernel/core/*.c)
KOBJ := $(patsubst %,$(KB)/%.o,$(KSRC))

USER_TARGET := x86_64-unknown-linux-gnu
USER_OUT := $(B)/user/$(USER_TARGET)/release
# Every program goes into the boot image: the root task, then every folder
# of user/tests/ (the in-guest suite first), user/bench/, user/programs/,
# user/drivers/ and user/servers/, each a crate keep-NAME with a binary NAME
# (docs/writing-programs.md).  user/lib/ holds libraries only.
# The drivers (docs/devices.md): the PCI server, the block and network
# servers, the wall clock and the TPM (the root task starts it first).
DRIVER_PROGRAMS := pci blk net rtc tpm
USER_PROGRAMS := root ktest $(filter-out ktest,$(notdir $(wildcard user/tests/*))) \
	$(notdir $(wildcard user/bench/*)) $(notdir $(wildcard user/programs/*)) $(DRIVER_PROGRAMS) \
	$(notdir $(wildcard user/servers/*))
USER_RUSTFLAGS := -C relocation-model=static -C link-arg=-nostartfiles -C link-arg=-nostdlib \
	-C link-arg=-static -C link-arg=-no-pie -C link-arg=-Wl,--build-id=none \
	-C link-arg=-T$(ROOT)/user/lib/rt/link.ld

.PHONY: all run test bench icount-check kcov debug deps bench-deps docs-check kernel user filters image host-test cargo-test guest-test boot-test linux-test persist-test linux-compat-docs sfi-test sfi-bench abi-check clean lines

all: image

deps:
	@tools/install-deps.sh

bench-deps:
	@tools/install-deps.sh bench

# ---- kernel ---------------------------------------------------------------
# The coverage build (KCOV=1, into its own B; `make kernel-kcov`,
# docs/coverage.md "The guided fuzzer"): gcc's trace-pc hook at every basic
# block of the kernel's C files but the hook's own (kernel/lib/kcov.c), and
# KERNEL.COVERAGE answering.  The assembly is not instrumented.  The default
# build has neither hook nor bitmap.
KCOV ?= 0
# The latency build (LATENCY=1, `make kernel-latency`; docs/realtime.md,
# "Kernel latency"): the longest interrupts-off time of every kind of
# kernel entry, printed at KERNEL.DEBUG_EXIT.  The default build has none.
LATENCY ?= 0
ifeq ($(LATENCY),1)
KCFLAGS += -DKEEP_LATENCY
endif
ifeq ($(KCOV),1)
KCFLAGS += -DKCOV
KCOV_FLAGS := -fsanitize-coverage=trace-pc
endif

$(KB)/%.c.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(KCFLAGS) $(if $(filter kernel/lib/kcov.c,$<),,$(KCOV_FLAGS)) $(KCFLAGS_$<) -c $< -o $@

# The system call's C entry (the IPC fast path) never returns to entry.S, so
# it need not preserve registers for it: with the callee-saved registers
# treated as scratch in this file and no frame pointer, its entry saves
# nothing.  Everything it calls is compiled normally and preserves them.
KCFLAGS_kernel/ipc/fastpath.c := -fomit-frame-pointer \
	-fcall-used-rbx -fcall-used-r12 -fcall-used-r13 -fcall-used-r14 -fcall-used-r15

$(KB)/%.S.o: %.S
	@mkdir -p $(dir $@)
	@echo "  AS      $<"
	@$(CC) $(KCFLAGS) -c $< -o $@

# Two links: the first without symbols, whose `nm` output becomes the symbol
# table of the second (text addresses do not move; see tools/gensyms.py).
$(KB)/ksyms_empty.c:
	@mkdir -p $(dir $@)
	@printf '#include "ksyms.h"\nconst struct ksym ksyms[] = {{0, 0}};\nconst u64 ksyms_count = 0;\n' > $@

$(KB)/pass1.elf: $(KOBJ) $(KB)/ksyms_empty.c.o kernel/arch/x86_64/kernel.ld
	@echo "  LD      $@"
	@$(CC) $(KLDFLAGS) -o $@ $(KOBJ) $(KB)/ksyms_empty.c.o

$(KB)/ksyms_table.c: $(KB)/pass1.elf tools/gensyms.py
	@nm -n --defined-only $< | $(PYTHON) tools/gensyms.py > $@

$(KB)/%.c.o: $(KB)/%.c
	@$(CC) $(KCFLAGS) -c $< -o $@

$(B)/kernel.elf: $(KOBJ) $(KB)/ksyms_table.c.o
	@echo "  LD      $@"
	@$(CC) $(KLDFLAGS) -o $@ $(KOBJ) $(KB)/ksyms_table.c.o
	@nm $(KB)/pass1.elf | grep ' [tT] ' > $(KB)/t1; nm $@ | grep ' [tT] ' > $(KB)/t2; \
	  cmp -s $(KB)/t1 $(KB)/t2 || { echo "kernel text moved between the two links"; exit 1; }

$(B)/kernel.bin: $(B)/kernel.elf
	@objcopy -O binary $< $@

kernel: $(B)/kernel.bin

# ---- user level -----------------------------------------------------------
user:
	cd user && CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUSTFLAGS="$(USER_RUSTFLAGS)" \
	  cargo build --release --target $(USER_TARGET) --target-dir ../$(B)/user \
	  $(addprefix -p keep-,$(USER_PROGRAMS))

# SFI filter modules for pfilter, its tests and benchmarks (docs/sfi.md,
# "Inside Keep"), built from C by sfi-cc; the two refused ones are the
# verifier's escape tests (sfi/tests), assembled as they are.  They travel in the boot image as
# pf-NAME.sfi.
FB := $(B)/filters
FILTERS_C := udp53 fault loop nofilter bigbss
FILTERS_BAD := store_unsandboxed syscall
FILTERS := $(FILTERS_C:%=$(FB)/%.sfi) $(FILTERS_BAD:%=$(FB)/%.sfi)
SFICC := sfi/cc/sfi-cc

$(FB)/%.o: user/servers/pfilter/filters/%.c $(SFICC) sfi/cc/sficc.py
	@mkdir -p $(FB)
	@echo "  SFI-CC  $<"
	@$(SFICC) -O2 -c $< -o $@

$(FB)/%.sfi: $(FB)/%.o
	@$(SFICC) -o $@ $<

$(FB)/%.sfi: sfi/tests/escape/%.s sfi/cc/sfi-ld sfi/cc/sficc.py
	@mkdir -p $(FB)
	@echo "  SFI-LD  $<"
	@sfi/cc/sfi-ld --raw -o $@ $<

filters: $(FILTERS)

# The virtio-blk disk (tools/qemu.py attaches it; docs/devices.md): 64 MiB
# of a pattern every sector of which a guest can check.
$(B)/disk.img: tools/mkdisk.py Makefile
	@mkdir -p $(B)
	@echo "  DISK    $@"
	@$(PYTHON) tools/mkdisk.py $@ 64

# The workhorse's root file system (docs/workhorse.md): Debian's
# busybox-static, bash and python3.11 with their libraries (the packages
# pinned in tools/linux-packages.txt), unmodified, and the conformance tests
# of user/servers/workhorse/tests (C compiled with the host's gcc statically, and
# dynamically as NAME-dyn; shell and python scripts), packed as
# linux-rootfs.tar.gz.
LB := $(B)/linux
BUSYBOX := $(LB)/busybox/bin/busybox
LINUX_PKGS := $(LB)/root/bin/bash
LINUX_TESTS_C := $(wildcard user/servers/workhorse/tests/*.c)
LINUX_TESTS_DYN := hello files io memory mmapfile procs signals timeid
# The conformance suite (user/servers/workhorse/tests/conformance/README.md),
# static and dynamic.
LINUX_CONF_C := $(wildcard user/servers/workhorse/tests/conformance/*.c)
LINUX_TESTS := $(LINUX_TESTS_C:user/servers/workhorse/tests/%.c=$(LB)/tests/%) \
  $(LINUX_TESTS_DYN:%=$(LB)/tests/%-dyn) \
  $(LINUX_CONF_C:user/servers/workhorse/tests/conformance/%.c=$(LB)/tests/%) \
  $(LINUX_CONF_C:user/servers/workhorse/tests/conformance/%.c=$(LB)/tests/%-dyn) \
  $(wildcard user/servers/workhorse/tests/*.sh user/servers/workhorse/tests/*.bash user/servers/workhorse/tests/*.py)

$(BUSYBOX): tools/fetch-busybox.sh
	@echo "  FETCH   busybox-static (Debian)"
	@tools/fetch-busybox.sh $(LB)

$(LINUX_PKGS): tools/fetch-linux-packages.sh tools/linux-packages.txt
	@echo "  FETCH   bash, python3.11 and their libraries (Debian, tools/linux-packages.txt)"
	@tools/fetch-linux-packages.sh $(LB)
	@touch $@

$(LB)/tests/%-dyn: user/servers/workhorse/tests/%.c
	@mkdir -p $(LB)/tests
	@echo "  CC      $< (dynamic)"
	@$(CC) -O1 -s -o $@ $<

$(LB)/tests/%: user/servers/workhorse/tests/%.c
	@mkdir -p $(LB)/tests
	@echo "  CC      $< (static)"
	@$(CC) -static -O1 -s -o $@ $<

$(LB)/tests/%-dyn: user/servers/workhorse/tests/conformance/%.c
	@mkdir -p $(LB)/tests
	@echo "  CC      $< (dynamic)"
	@$(CC) -O1 -s -pthread -o $@ $<

$(LB)/tests/%: user/servers/workhorse/tests/conformance/%.c
	@mkdir -p $(LB)/tests
	@echo "  CC      $< (static)"
	@$(CC) -static -O1 -s -pthread -o $@ $<

$(B)/linux-rootfs.tar.gz: $(BUSYBOX) $(LINUX_PKGS) $(LINUX_TESTS) tools/mkrootfs.py
	@$(PYTHON) tools/mkrootfs.py $@ $(BUSYBOX) $(LB)/root $(LINUX_TESTS)

linux-compat-docs:
	cd user && KEEP_WRITE_DOCS=1 cargo test --target-dir ../$(B)/user-host -p keep-workhorse --lib table

# The boot image carries stripped copies; build/user keeps the symbols for gdb.
# The workhorse's symbols go too: with them its image is past the
# constructor's limit (MAX_IMAGE, 1 MiB).
image: kernel user filters $(B)/disk.img $(B)/linux-rootfs.tar.gz
	@mkdir -p $(B)/image
	@for p in $(USER_PROGRAMS); do \
	  case $$p in workhorse) s=--strip-all;; *) s=--strip-debug;; esac; \
	  objcopy $$s $(USER_OUT)/$$p $(B)/image/$$p; done
	@$(PYTHON) tools/mkimage.py $(B)/boot.img $(foreach p,$(USER_PROGRAMS),$(p)=$(B)/image/$(p)) \
	  $(foreach f,$(FILTERS_C) $(FILTERS_BAD),pf-$(f).sfi=$(FB)/$(f).sfi) \
	  system=user/system/system.conf system-bad=user/system/bad-example.conf system-test=user/system/test.conf system-disk=user/system/disk-test.conf system-wh-strings=user/system/wh-strings-test.conf system-checkpoint=user/system/checkpoint-test.conf system-vault=user/system/vault-test.conf system-vault-other=user/system/vault-other.conf system-max=user/system/max-test.conf system-rt=user/system/rt-test.conf \
	  linux-rootfs.tar.gz=$(B)/linux-rootfs.tar.gz

# ---- running --------------------------------------------------------------
run: deps image
	$(PYTHON) tools/qemu.py run --accel $(ACCEL)

debug: deps image
	$(PYTHON) tools/qemu.py debug --accel $(ACCEL)

# The suite on the default kernel, then the cross-address-space round trip
# on the two other capability-lookup kernels (same boot image), all under
# -icount; results, table and plots in build/bench/ (tools/bench.py).
LOOKUP_VARIANTS := hash regs

bench: bench-deps image
	@for v in $(LOOKUP_VARIANTS); do \
	  $(MAKE) --no-print-directory kernel B=$(B)/lookup-$$v CAP_LOOKUP=$$v || exit 1; done
	@$(PYTHON) tools/linuxbench.py || echo "make bench: the Linux guest comparison failed (build/linuxbench/log.txt); the Keep figures follow without it"
	@if [ "$(SFI_BENCH)" != 0 ]; then rm -f build/bench/sfi.json; $(MAKE) --no-print-directory sfi-bench || \
	  echo "make bench: the SFI benchmarks failed (see above); the other figures follow without them"; fi
	@$(PYTHON) tools/workhorse_bench.py || echo "make bench: the workhorse's figures failed (build/bench/log-workhorse.txt); the others follow without them"
	@$(PYTHON) tools/tfiles_bench.py || echo "make bench: the trusted files' figures failed (build/bench/log-tfiles.txt); the others follow without them"
	@rm -f build/bench/rt.json; $(PYTHON) tools/test_rt.py --bench || echo "make bench: the real-time test failed a check (build/test-rt.log); its figures follow as measured"
	@rm -f build/bench/latency.json build/bench/latency.md; $(MAKE) --no-print-directory latency || echo "make bench: the latency table failed (build/latency.log); the others follow without it"
	$(PYTHON) tools/bench.py $(foreach v,$(LOOKUP_VARIANTS),--variant $(v)=$(B)/lookup-$(v)/kernel.bin)

# The icount plugin (tools/icount-plugin) against rdtsc on a CPU-bound
# region under -icount shift=0,sleep=off (docs/performance.md, "I/O paths").
icount-check: image
	$(PYTHON) tools/bench.py --icount-check

# Kernel basic-block coverage (docs/coverage.md, tools/kcov.py): the in-guest
# suite under the coverage plugin, with and without the IOMMU, without and
# with the fuzzer (FUZZ0001 skipped by `nofuzz` on the command line); the
# report is build/kcov/report.md.  A failing test does not stop it (the
# plugin slows the guest down, and the coverage of the rest still counts):
# the run's FAIL line says so.
.PHONY: kcov
kcov: image
	@mkdir -p $(B)/kcov
	-$(PYTHON) tools/kcov.py run $(B)/kcov/nofuzz-iommu.trace --append nofuzz
	-$(PYTHON) tools/kcov.py run $(B)/kcov/nofuzz-noiommu.trace --no-iommu --append nofuzz
	-$(PYTHON) tools/kcov.py run $(B)/kcov/fuzz-iommu.trace
	-$(PYTHON) tools/kcov.py run $(B)/kcov/fuzz-noiommu.trace --no-iommu
	$(PYTHON) tools/kcov.py report --md $(B)/kcov/report.md --commit "$$(git rev-parse --short HEAD)" \
	  "without fuzzer=$(B)/kcov/nofuzz-iommu.trace,$(B)/kcov/nofuzz-noiommu.trace" \
	  "with fuzzer=$(B)/kcov/fuzz-iommu.trace,$(B)/kcov/fuzz-noiommu.trace"

# The same for every QEMU boot of `make test` (docs/coverage.md): each
# suite that boots Keep runs with KEEP_KCOV_DIR (tools/qemu.py), which puts
# every boot under the plugin with a trace file of its own in the suite's
# directory of build/kcov/all/; the report (build/kcov/all.md) has a column
# per suite and their union.  The suites' other steps (host-test,
# cargo-test, sfi-test, the checks) boot no kernel.  A failing suite does
# not stop it: its FAIL lines say which.
KCOV_SUITES := ktest boot linux persist checkpoint net tpm
comma := ,
empty :=
space := $(empty) $(empty)
.PHONY: kcov-all
kcov-all: image
	rm -rf $(B)/kcov/all
	-KEEP_KCOV_DIR=$(B)/kcov/all/ktest $(PYTHON) tools/qemu.py test --timeout 300
	-KEEP_KCOV_DIR=$(B)/kcov/all/ktest $(PYTHON) tools/qemu.py test --timeout 300 --cpu max,-smap
	-KEEP_KCOV_DIR=$(B)/kcov/all/ktest $(PYTHON) tools/qemu.py test --timeout 300 --no-iommu
	-KEEP_KCOV_DIR=$(B)/kcov/all/boot $(PYTHON) tools/test_boot.py
	-KEEP_KCOV_DIR=$(B)/kcov/all/linux $(PYTHON) tools/test_linux.py
	-KEEP_KCOV_DIR=$(B)/kcov/all/persist $(PYTHON) tools/test_persist.py
	-KEEP_KCOV_DIR=$(B)/kcov/all/checkpoint $(PYTHON) tools/test_checkpoint.py --cuts $(CHECKPOINT_CUTS) --seed $(CHECKPOINT_SEED)
	-KEEP_KCOV_DIR=$(B)/kcov/all/net $(PYTHON) tools/test_net.py
	-KEEP_KCOV_DIR=$(B)/kcov/all/net $(PYTHON) tools/test_net.py --no-iommu
	-KEEP_KCOV_DIR=$(B)/kcov/all/tpm $(PYTHON) tools/test_tpm.py
	-KEEP_KCOV_DIR=$(B)/kcov/all/rt $(PYTHON) tools/test_rt.py
	$(MAKE) --no-print-directory kcov-all-report

# The report of the traces build/kcov/all/ holds (also after a rerun of one
# suite by hand with KEEP_KCOV_DIR=build/kcov/all/SUITE).
.PHONY: kcov-all-report
kcov-all-report:
	$(PYTHON) tools/kcov.py report --md $(B)/kcov/all.md --commit "$$(git rev-parse --short HEAD)" \
	  $(foreach s,$(KCOV_SUITES),"$(s)=$(B)/kcov/all/$(s)") \
	  "make test=$(subst $(space),$(comma),$(foreach s,$(KCOV_SUITES),$(B)/kcov/all/$(s)))"

# ---- tests ----------------------------------------------------------------
HOST_TEST_SRC := kernel/test/host_tests.c kernel/lib/printf.c kernel/lib/ksyms.c kernel/mm/memmap.c \
	kernel/core/elf.c kernel/core/bootimage.c kernel/lib/seal.c kernel/arch/x86_64/madt.c
HOST_CFLAGS := -std=gnu11 -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=all \
	-DHOST_TEST -Wall -Wextra -Werror -Ikernel/include -Ikernel/mm -Ikernel/core -Ikernel/cap -Ikernel/arch/x86_64

$(B)/host_tests: $(HOST_TEST_SRC) $(wildcard kernel/include/*.h kernel/mm/*.h kernel/core/*.h kernel/cap/*.h kernel/arch/x86_64/*.h)
	@mkdir -p $(B)
	$(CC) $(HOST_CFLAGS) -o $@ $(HOST_TEST_SRC)

abi-check:
	$(PYTHON) tools/abigen.py --check
	$(PYTHON) tools/idlgen.py --check
	$(PYTHON) tools/test_idlgen.py

# Links resolve; no history markers (work periods, issue numbers, branches,
# abandoned experiments) in the documents or the code's comments, the checker's own
# rules checked first; docs/tests.md matches the test tables.
docs-check:
	$(PYTHON) tools/check_links.py
	$(PYTHON) tools/check_history.py --self-test
	$(PYTHON) tools/check_history.py
	$(PYTHON) tools/gen_tests_md.py --check
	$(PYTHON) tools/check_figures.py --self-test
	$(PYTHON) tools/check_figures.py
	@# a merge's conflict markers left in any tracked text file
	@if git grep -n -E '^(<<<<<<< |>>>>>>> )' -- . ':!build'; then \
	  echo "docs-check: conflict markers left by a merge"; exit 1; fi

host-test: $(B)/host_tests
	$(B)/host_tests

cargo-test:
	cd user && cargo test --target-dir ../$(B)/user-host -p keep-abi -p keep-loader -p keep-lineedit -p keep-system -p keep-console -p keep-workhorse -p keep-rtc -p keep-tpm -p keep-blk -p keep-net -p keep-dataspace -p keep-constructor -p keep-pfilter -p keep-pci -p keep-checkpointer -p keep-vault -p keep-tfiles -p keep-counter -p keep-mail

# What a suite needs built first; make test builds it once before its lanes
# and gives them SUITE_DEPS= (the image is rebuilt at every make).
SUITE_DEPS = deps image

guest-test: $(SUITE_DEPS)
	$(PYTHON) tools/qemu.py test --timeout 300
	@echo "guest-test: again on a CPU without SMAP (stac/clac patched out at boot)"
	$(PYTHON) tools/qemu.py test --timeout 300 --cpu max,-smap
	@echo "guest-test: again without the IOMMU (nothing attaches to a DMA domain; docs/devices.md)"
	$(PYTHON) tools/qemu.py test --timeout 300 --no-iommu

boot-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_boot.py

# The periodic real-time task alone and beside each load, under -icount
# (docs/realtime.md).
.PHONY: rt-test
rt-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_rt.py

# The workhorse's Linux programs on Keep against the host (docs/workhorse.md).
linux-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_linux.py

# The workhorse's /data on the disk across reboots and a kill (a copy of
# build/disk.img written for real; docs/workhorse.md).
persist-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_persist.py

# The checkpointer's store on the disk across power cuts: QEMU killed at
# seeded random moments of its checkpoints, CHECKPOINT_CUTS times (each
# cut's seed printed; docs/persistence.md).  Not whole-system persistence
# (docs/CAVEATS.md).
CHECKPOINT_CUTS ?= 20
CHECKPOINT_SEED ?= $(shell date +%s)
.PHONY: checkpoint-test checkpoint-test-long
checkpoint-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_checkpoint.py --cuts $(CHECKPOINT_CUTS) --seed $(CHECKPOINT_SEED)
checkpoint-test-long: deps image
	$(PYTHON) tools/test_checkpoint.py --cuts 400 --seed $(CHECKPOINT_SEED)

# make test: the checks and host tests, then the QEMU suites and the SFI
# suite in two lanes side by side (tools/lanes.py: each QEMU under TCG is
# one thread, so a 2-core machine runs two at once; every line is shown
# with its lane's name in front).  A suite added to make test goes into
# the lane whose total time is shorter.
TEST_LANE_A := guest-test fuzz-guided latency boot-test net-test tpm-test vault-test tfiles-test mail-test persist-test checkpoint-test linux-test rt-test
TEST_LANE_B := sfi-test
test: abi-check docs-check host-test cargo-test deps image
	$(PYTHON) tools/lanes.py --make-arg SUITE_DEPS= --make-arg SFI_DEBIAN=short "a=$(TEST_LANE_A)" "b=$(TEST_LANE_B)"

# The vault's secure storage across boots with a kept TPM state and disk:
# sealed to the boot, refused to a changed boot or another TPM, an old
# copy of its area detected as a rollback (docs/trusted-core.md).
.PHONY: vault-test
vault-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_vault.py

# Trusted files kept by the workhorse against a hostile workhorse: changed,
# swapped, older, cut, removed and renamed files refused, no plaintext on
# the disk, no acknowledged write lost to `kill workhorse`
# (docs/trusted-core.md, "Trusted files").
.PHONY: tfiles-test
tfiles-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_tfiles.py

# The trusted mail reader end to end against a mail server on the host:
# mailboxes fetched by the workhorse's busybox wget, checked and shown by
# the reader on its own terminal; a tampered message, a replayed old
# mailbox and a forged one reported; its state across a reboot
# (docs/trusted-core.md, "The trusted mail reader").
.PHONY: mail-test
mail-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_mail.py

# Left out of make test (README.md): busybox's own test suite, fetched once,
# on the host and on Keep's workhorse (docs/workhorse.md).
.PHONY: test-long busybox-test python-suite fuzz-long srvfuzz-long sysfuzz-long
test-long: busybox-test python-suite fuzz-long srvfuzz-long checkpoint-test-long sysfuzz-long sfi-debian-test
# The stateful capability fuzzer of ktest (FUZZ0001, docs/coverage.md) for
# FUZZ_RUNS runs of FUZZ_OPS invocations from FUZZ_SEED (default: the time;
# each run prints its seed), within the in-guest suite.
FUZZ_SEED ?= $(shell date +%s)
FUZZ_OPS ?= 200000
FUZZ_RUNS ?= 4
fuzz-long: image
	@echo "make fuzz-long: seeds from $(FUZZ_SEED), $(FUZZ_RUNS) runs of $(FUZZ_OPS) invocations"
	$(PYTHON) tools/qemu.py test --timeout 3600 --append "fuzzseed=$(FUZZ_SEED) fuzzops=$(FUZZ_OPS) fuzzruns=$(FUZZ_RUNS)"
# The guided fuzzer (FUZZ0003, docs/coverage.md "The guided fuzzer") on the
# coverage build of the kernel (build/kernel-kcov/kernel.bin), with the test
# of KERNEL.COVERAGE (FUZZ0002) and the invariants: fuzz-guided is the
# bounded run of make test, fuzz-guided-long (part of test-long) the long
# one, GUIDED_RUNS runs of GUIDED_OPS invocations from FUZZ_SEED.
KCOV_B := $(B)/kernel-kcov
GUIDED_ONLY := only=KERN0001,FUZZ0002,FUZZ0003,KERN0003
GUIDED_OPS ?= 200000
GUIDED_RUNS ?= 4
# The kernel's latency table (docs/realtime.md, "Kernel latency"): the
# in-guest suite, its capability fuzzer included, on the latency build
# under -icount shift=0; tools/latency.py writes build/bench/latency.json
# and .md, which `make bench` takes into its results.
LAT_B := $(B)/kernel-latency
.PHONY: kernel-latency latency
kernel-latency:
	@$(MAKE) --no-print-directory kernel B=$(LAT_B) LATENCY=1
latency: $(SUITE_DEPS) kernel-latency
	$(PYTHON) tools/latency.py --kernel $(LAT_B)/kernel.bin
.PHONY: kernel-kcov fuzz-guided fuzz-guided-long
kernel-kcov:
	@$(MAKE) --no-print-directory kernel B=$(KCOV_B) KCOV=1
fuzz-guided: $(SUITE_DEPS) kernel-kcov
	$(PYTHON) tools/qemu.py test --timeout 600 --kernel $(KCOV_B)/kernel.bin --append "$(GUIDED_ONLY)"
fuzz-guided-long: image kernel-kcov
	@echo "make fuzz-guided-long: seeds from $(FUZZ_SEED), $(GUIDED_RUNS) runs of $(GUIDED_OPS) invocations"
	$(PYTHON) tools/qemu.py test --timeout 3600 --kernel $(KCOV_B)/kernel.bin \
	  --append "$(GUIDED_ONLY) fuzzseed=$(FUZZ_SEED) fuzzops=$(GUIDED_OPS) fuzzruns=$(GUIDED_RUNS)"
test-long: fuzz-guided-long

busybox-test: deps image
	$(PYTHON) tools/test_busybox.py
# Python's regression suite (Debian's libpython3.11-testsuite, fetched
# once) on the host and on Keep's workhorse, pass counts compared per
# module (docs/workhorse.md); PYSUITE=--subset (or module names) for a part.
PYSUITE ?=
python-suite: deps image
	$(PYTHON) tools/test_python_suite.py $(PYSUITE)
# The server fuzzers of ktest (SRVFUZZ*, docs/fuzzing.md): SRVFUZZ_OPS
# requests to each server from SRVFUZZ_SEED (default: the time; each server
# prints its seed): only those tests of the suite (only=SRVFUZZ*).
SRVFUZZ_SEED ?= $(shell date +%s)
SRVFUZZ_OPS ?= 1000000
srvfuzz-long: image
	@echo "make srvfuzz-long: seed $(SRVFUZZ_SEED), $(SRVFUZZ_OPS) requests per server"
	$(PYTHON) tools/qemu.py test --timeout 7200 --append "only=SRVFUZZ* srvfuzzseed=$(SRVFUZZ_SEED) srvfuzzops=$(SRVFUZZ_OPS)"
# The workhorse's system-call fuzzer (user/servers/workhorse/tests/sysfuzz.c,
# docs/workhorse.md) for SYSFUZZ_CALLS calls from SYSFUZZ_SEED (default: the
# time; printed), an honest program checked between its batches.
SYSFUZZ_SEED ?= $(shell date +%s)
SYSFUZZ_CALLS ?= 1000000
sysfuzz-long: deps image
	$(PYTHON) tools/test_sysfuzz.py --seed $(SYSFUZZ_SEED) --calls $(SYSFUZZ_CALLS)

# The network from the host (docs/network.md, "The network"): TCP echo of a
# few MiB and the status lines through QEMU's port forwarding.
.PHONY: net-test
net-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_net.py
	$(PYTHON) tools/test_net.py --no-iommu

# The TPM and the measured boot from the host (docs/trusted-core.md):
# the PCRs against the log replayed with hashlib, sealing, the NV counter
# across reboots (swtpm states under build/tpm/).
.PHONY: tpm-test
tpm-test: $(SUITE_DEPS)
	$(PYTHON) tools/test_tpm.py

# Software fault isolation (sfi/, docs/sfi.md): host tool chain, verifier,
# runtime.  make test runs it with SFI_DEBIAN=short (of the benchmark's
# Debian programs only the CPU-probing and small call-heavy ones: building
# all of them takes longer than the rest of the suite);
# sfi-debian-test, in test-long, builds and compares every one.
SFI_DEBIAN ?= all
.PHONY: sfi-debian-test
sfi-test:
	$(MAKE) -C sfi test SFI_DEBIAN=$(SFI_DEBIAN)
sfi-debian-test:
	$(MAKE) -C sfi test SFI_DEBIAN=only

sfi-bench:
	$(MAKE) -C sfi bench

lines:
	@$(PYTHON) tools/linecount.py

clean:
	rm -rf $(B)

-include $(KOBJ:.o=.d)
