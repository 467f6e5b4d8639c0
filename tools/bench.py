#!/usr/bin/env python3
"""The host side of `make bench`.

Boots the default kernel (build/kernel.bin) with the boot image and the
kernel command line `autobench` under `-icount shift=0,sleep=off`, where the
guest TSC advances by one per executed instruction, and collects the
`bench: NAME median=.. min=.. max=.. unit=.. runs=..` lines the root task
prints.  Then boots every capability-lookup variant kernel given with
`--variant NAME=KERNEL` with the same boot image and `autobench
bench=ipc.call_reply.cross_as`, and records that round trip as
`ipc.call_reply.cross_as.lookup_NAME`.  Where the host has usable hardware
virtualization it also runs the default suite under KVM and adds the
figures (cycles, not instructions) as a second column.  Last it boots the
default kernel once more under `-icount shift=0,sleep=on` with the
instruction-counting plugin (tools/icount.py) for the I/O benchmarks
(`iobench`), written as build/bench/io.json; `--icount-check` checks the
plugin against rdtsc, `--io-only` runs that boot alone.

Writes build/bench/results.json (name -> {median, min, max, unit, runs}),
build/bench/results.md and the plots build/bench/lookup.png and
build/bench/caps.png; other fragments in build/bench/*.json of the same
format (e.g. sfi.json from `make sfi-bench`, linux.json from
tools/linuxbench.py, which `make bench` runs first, rt.json from
tools/test_rt.py --bench) are merged in, not run.
Benchmarks report figures: nothing here asserts a timing."""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402  (the one place that knows the QEMU command line)
import icount  # noqa: E402  (the instruction-counting plugin's host side)
import netpeer  # noqa: E402  (the host's side of the network benchmarks)

ROOT = qemu.ROOT
BUILD = ROOT / "build"
OUT = BUILD / "bench"
OWN = {"results.json", "results-kvm.json"}
# The I/O benchmarks (user/root/src/bench/io.rs), counted by the plugin.
IO_FILTER = "icount.check,blk.*,net.tcp.*,net.udp.*"
CHECK_PPM = 10
CROSS = "ipc.call_reply.cross_as"
PERSIST = "persist.*"
LINE_RE = re.compile(r"bench: (\S+) median=(\d+) min=(\d+) max=(\d+) unit=(\S+) runs=(\d+)")
FAIL_RE = re.compile(r"bench: (\S+) not measured: (.*)")
# seL4 16.0's fast-path round trip between address spaces, measured with the
# same QEMU icount method: 189 instructions for Call plus 216 for
# ReplyRecv.
SEL4_ROUND_TRIP = 405
# The EROS-style operations and their counterparts on a Linux guest measured
# the same way (tools/linuxbench.py, build/bench/linux.json).
LINUX_PAIRS = [
    ("syscall.null", "linux.syscall.null"),
    ("sched.yield_switch", "linux.sched.yield_switch"),
    ("fault.page.user_pager", "linux.fault.page.user_pager"),
    ("fault.exception.handler", "linux.fault.exception.handler"),
    ("mem.heap_grow", "linux.mem.heap_grow"),
    (CROSS, "linux.pipe.roundtrip"),
    ("proc.create.constructor", "linux.proc.spawn"),
    ("proc.create.constructor", "linux.proc.fork_exec_wait"),
]

# The I/O benchmarks and the workhorse's: Keep's NAME
# against the Linux guest's linux.NAME, both counted by the icount plugin
# (tools/icount.py) or by rdtsc where the work is CPU-bound.
IO_NAMES = ["blk.read.seq64k", "blk.read.seq4k", "blk.write.seq64k",
            "net.tcp.send", "net.tcp.recv", "net.udp.roundtrip"]
SEPARATION = ("blk.read.seq64k", "blk.read.seq64k.direct")
# The same without batches: one call per 64 KiB against one request at a time.
SEPARATION_SINGLE = ("blk.read.seq64k.single", "blk.read.seq64k.direct.single")
# The same reads as READ_DS_V batches (one call per 2 MiB) against the direct ones.
SEPARATION_BATCH = ("blk.read.seq64k.batch", "blk.read.seq64k.direct")
WH_PAIRS = [("wh.syscall.getppid", "linux.syscall.null"), ("wh.proc.fork_exec_wait", "linux.proc.fork_exec_wait"),
            ("wh.pipe.roundtrip", "linux.pipe.roundtrip")]
# Trusted files through the workhorse against the workhorse's own file I/O
# on /data (tools/tfiles_bench.py, build/bench/tfiles.json).
TFILES_PAIRS = [(f"vault.{op}.{size}", f"wh.data.{op}.{size}") for op in ("read", "write") for size in ("4k", "64k")]
BUSYBOX = ["shell_loop", "fork_exec_true", "sha256sum", "gzip", "sort", "tar"]
# The Python workloads (pybench.sh): wh.python.NAME against linux.python.NAME.
PYTHON = ["startup", "compute", "files"]


def linux_ratio(keep, linux):
    """The name of Keep's figure over Linux's (the process-creation pair
    has two Linux counterparts)."""
    if keep == "proc.create.constructor":
        return f"{keep}.{linux.removeprefix('linux.proc.')}_ratio"
    return f"{keep}.linux_ratio"


def persist_restore(timeout=600):
    """persist.restore: TSC ticks from reset to the persistent workload
    running again in a boot that restores a checkpoint (the checkpointer's
    `running at TSC N`, right after RESUME), against a fresh boot to the
    same workload started from the description (the root task's `started
    from the persistent pool ... at TSC N`): the checkpoint-test description
    (tally and wraps), under -icount, with one TPM state and one disk for
    both boots (docs/persistence.md, "Incremental checkpoints")."""
    import shutil
    import tempfile
    import test_tpm
    tmp = Path(tempfile.mkdtemp(prefix="keep-restore-"))
    disk, state = tmp / "disk.img", tmp / "tpm"
    shutil.copyfile(qemu.DISK, disk)

    class Guest(test_tpm.Guest):
        def __init__(self, append):
            cmd = qemu.base_cmd("tcg", append + " icount", icount=True, tpm_state=state,
                                persistent=True) + ["-serial", "stdio"]
            drive = cmd.index("-drive") + 1
            cmd[drive] = cmd[drive].replace(f"file={qemu.DISK},", f"file={disk},")
            self.start = time.monotonic()
            self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT)
            import os
            os.set_blocking(self.p.stdout.fileno(), False)
            self.out = bytearray()
            self.settle = False
            self.prompt_secs = None

    results = {}
    try:
        g = Guest("system=system-checkpoint")
        fresh = re.compile(rb"persist: 'tally' started from the persistent pool .* at TSC (\d+)")
        ok = g.wait_for(fresh, timeout) and g.wait_for(re.compile(rb"checkpointer: checkpoint \d+ committed"), timeout)
        m = fresh.search(g.out)
        g.kill()
        (OUT / "log-persist-restore-fresh.txt").write_bytes(bytes(g.out))
        if not ok:
            print("bench: persist.restore not measured: the fresh boot did not commit a checkpoint", flush=True)
            return results
        g = Guest("system=system-checkpoint")
        resumed = re.compile(rb"resumed checkpoint \d+ of .*?\((\d+) KiB\): \d+ processes, (\d+) records, "
                             rb"epoch \d+, restored in \d+ TSC ticks, running at TSC (\d+)")
        ok = g.wait_for(resumed, timeout)
        r = resumed.search(g.out)
        g.kill()
        (OUT / "log-persist-restore.txt").write_bytes(bytes(g.out))
        if not ok:
            print("bench: persist.restore not measured: the second boot restored no checkpoint", flush=True)
            return results
        f, t = int(m[1]), int(r[3])
        # TSC ticks, not instructions: under -icount with sleep=off the
        # virtual clock jumps over the guest's idle waits (for the disk and
        # the TPM) to the next timer, and both boots wait on them.
        one = lambda v: {"median": v, "min": v, "max": v, "unit": "tsc-ticks", "runs": 1}
        results["persist.restore"] = one(t)
        results["persist.restore.fresh"] = one(f)
        print(f"bench.py: [persist] persist.restore {t} TSC ticks to the workload running again "
              f"(a checkpoint of {int(r[1])} KiB, {int(r[2])} records), a fresh boot {f}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


def boot(kernel, append, label, accel="tcg", timeout=600, memory="512M"):
    """Boots `kernel` with the boot image; returns the benchmark lines as a
    dict and prints one progress line per benchmark."""
    # `icount` on the kernel command line tells the suite that the TSC counts
    # instructions, so that it names its unit so.
    if accel == "tcg":
        append += " icount"
    cmd = qemu.base_cmd(accel, append, icount=(accel == "tcg"), kernel=kernel, memory=memory)
    cmd += ["-serial", "stdio"]
    print(f"bench.py: [{label}] booting {Path(kernel).relative_to(ROOT)} "
          f"({'icount' if accel == 'tcg' else accel}, '{append}')", flush=True)
    log = OUT / f"log-{label}.txt"
    start = time.monotonic()
    results = {}

    def on_line(line):
        m = LINE_RE.search(line)
        if m:
            name, med, lo, hi, unit, runs = m.groups()
            results[name] = {"median": int(med), "min": int(lo), "max": int(hi),
                             "unit": unit, "runs": int(runs)}
            print(f"bench.py: [{label}] {name:<40} median {med:>7} {unit} "
                  f"(min {lo}, max {hi}, {time.monotonic() - start:5.1f} s)", flush=True)
        elif FAIL_RE.search(line) or any(w in line for w in ("panic", "ratio", "fast path")):
            print(f"bench.py: [{label}] {line.strip()}", flush=True)

    out, status = qemu.stream(cmd, timeout, log, on_line)
    if time.monotonic() - start >= timeout:
        sys.exit(f"bench.py: FAIL: [{label}] did not finish within {timeout} s")
    if not any("bench: done" in l for l in out):
        sys.exit(f"bench.py: FAIL: [{label}] the suite did not finish "
                 f"(QEMU exit status {status}); see {log.relative_to(ROOT)}")
    print(f"bench.py: [{label}] {len(results)} results in {time.monotonic() - start:.1f} s",
          flush=True)
    return results


def io_boot(filter, timeout, sleep="on"):
    """Boots the default kernel for the I/O benchmarks: `-icount
    shift=0,sleep=ON` and the instruction-counting plugin, which counts the
    kernel's timer-interrupt entry (stub of vector 0x20) as interrupts.
    Returns the figures (tools/icount.py)."""
    return icount.results(io_regions(filter, timeout, sleep), icount.unit_of)


def io_regions(filter, timeout, sleep="on", profile=None, log=OUT / "log-io.txt"):
    """The I/O boot of io_boot with the host's network peer
    (tools/netpeer.py) following the guest; returns its icount.Regions.
    With `profile` (a path) the plugin also writes each region's
    per-instruction counts to PROFILE.N (tools/iprof.py --io)."""
    nm = subprocess.run(["nm", str(BUILD / "kernel.elf")], capture_output=True, text=True).stdout.splitlines()
    stubs = icount.symbol(nm, "vector_stubs")
    if stubs is None:
        sys.exit("bench.py: no vector_stubs in build/kernel.elf")
    append = f"autobench icount iobench bench={filter}"
    cmd = qemu.base_cmd("tcg", append, icount=f"shift=0,sleep={sleep}", kernel=qemu.KERNEL)
    cmd += ["-serial", "stdio"] + icount.args([stubs + 0x20 * 16], profile)
    print(f"bench.py: [io] booting build/kernel.bin with the icount plugin (sleep={sleep}, '{append}')", flush=True)
    start = time.monotonic()
    regions = icount.Regions("io", lambda m: print(f"bench.py: {m}", flush=True))
    peer = netpeer.Peer(cmd, qemu.BENCH_PORT, lambda m: print(f"bench.py: [io] {m}", flush=True))

    def on_line(line):
        if peer.feed(line):
            pass
        elif regions.feed(line):
            if line.startswith("bench-io:") or "bench-io:" in line:
                print(f"bench.py: [io] {line.strip()} ({time.monotonic() - start:5.1f} s)", flush=True)
        elif FAIL_RE.search(line) or "panic" in line:
            print(f"bench.py: [io] {line.strip()}", flush=True)

    out, status = qemu.stream(cmd, timeout, log, on_line)
    if not any("bench: done" in l for l in out):
        sys.exit(f"bench.py: FAIL: [io] the suite did not finish (QEMU exit status {status}); "
                 f"see {log.relative_to(ROOT)}")
    return regions


def icount_check(timeout):
    """The plugin against rdtsc on a CPU-bound region (`icount.check`)
    under `-icount shift=0,sleep=off`: they must agree to CHECK_PPM parts
    per million."""
    r = io_boot("icount.check", timeout, sleep="off")
    p, t, d = (r.get(f"icount.check.{k}") for k in ("plugin", "rdtsc", "diff_ppm"))
    if not p:
        sys.exit("bench.py: FAIL: icount.check reported nothing")
    print(f"bench.py: icount.check: plugin {p['median']} instructions, rdtsc {t['median']} "
          f"(runs {p['runs']}; plugin - rdtsc from {d['min']} to {d['max']} ppm)")
    if max(abs(d["min"]), abs(d["max"])) > CHECK_PPM:
        sys.exit(f"bench.py: FAIL: the plugin and rdtsc differ by more than {CHECK_PPM} ppm")
    print(f"bench.py: the plugin agrees with rdtsc to {CHECK_PPM} ppm")


def implemented(variant):
    """Whether the kernel sources mention the variant's define at all."""
    define = f"CAP_LOOKUP_{variant.upper()}"
    for p in (ROOT / "kernel").rglob("*"):
        if p.suffix in (".c", ".h", ".S") and define in p.read_text(errors="replace"):
            return True
    return False


def ratio(results, name, num, den):
    a, b = results.get(num), results.get(den)
    if not a or not b or b["median"] == 0 or b["min"] == 0:
        return
    results[name] = {
        "median": round(a["median"] / b["median"], 3),
        # The widest the ratio of any two batches can be.
        "min": round(a["min"] / b["max"], 3),
        "max": round(a["max"] / b["min"], 3),
        "unit": "ratio",
        "runs": min(a["runs"], b["runs"]),
    }


def add_ratios(r):
    for n in (1, 2, 3, 4):
        ratio(r, f"{CROSS}.cap{n}_ratio", f"{CROSS}.cap{n}", CROSS)
    ratio(r, f"{CROSS}.string64_ratio", f"{CROSS}.string64", CROSS)
    ratio(r, "ipc.call_reply.same_as_ratio", "ipc.call_reply.same_as", CROSS)
    for v in ("hash", "regs"):
        ratio(r, f"{CROSS}.lookup_{v}_ratio", f"{CROSS}.lookup_{v}", CROSS)
    ratio(r, "cap.lookup.sparse_dense_ratio", "cap.lookup.sparse", "cap.lookup.dense")
    ratio(r, "sfi.keep.call.roundtrip_ratio", "sfi.keep.call.roundtrip", CROSS)
    ratio(r, f"{CROSS}.kmem_pressure_ratio", f"{CROSS}.kmem_pressure", CROSS)
    ratio(r, "cap.wrapper.revoke.copies256_ratio", "cap.wrapper.revoke.copies256", "cap.wrapper.revoke")
    for keep, linux in LINUX_PAIRS:
        ratio(r, linux_ratio(keep, linux), keep, linux)
    for n in IO_NAMES:
        ratio(r, f"{n}.linux_ratio", n, f"linux.{n}")
    for keep, linux in WH_PAIRS:
        ratio(r, f"{keep}.linux_ratio", keep, linux)
    for keep, wh in TFILES_PAIRS:
        ratio(r, f"{keep}.wh_ratio", keep, wh)
    for n in BUSYBOX:
        ratio(r, f"busybox.{n}.linux_ratio", f"busybox.{n}", f"linux.busybox.{n}")
    for n in PYTHON:
        ratio(r, f"wh.python.{n}.linux_ratio", f"wh.python.{n}", f"linux.python.{n}")
    got = [r[f"busybox.{n}.linux_ratio"] for n in BUSYBOX if f"busybox.{n}.linux_ratio" in r]
    if len(got) == len(BUSYBOX):
        geo = lambda k: round(math.prod(g[k] for g in got) ** (1 / len(got)), 3)
        r["busybox.geomean.linux_ratio"] = {"median": geo("median"), "min": geo("min"), "max": geo("max"),
                                            "unit": "ratio", "runs": min(g["runs"] for g in got)}
    for pair in (SEPARATION, SEPARATION_SINGLE, SEPARATION_BATCH):
        served, direct = (r.get(n) for n in pair)
        if served and direct:
            # What separating the driver from its client costs, in percent.
            pct = lambda a, b: round((a / b - 1) * 100, 3)
            r[f"{pair[0]}.separation"] = {
                "median": pct(served["median"], direct["median"]), "min": pct(served["min"], direct["max"]),
                "max": pct(served["max"], direct["min"]), "unit": "percent", "runs": min(served["runs"], direct["runs"])}


def write_io(r):
    """The I/O figures as the fragment io.json (merged like the others)."""
    (OUT / "io.json").write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
    for name in sorted(r):
        v = r[name]
        print(f"bench.py: [io] {name:<40} median {fmt(v['median']):>10} {v['unit']} "
              f"(min {fmt(v['min'])}, max {fmt(v['max'])}, runs {v['runs']})")


def merge_fragments(results):
    merged = []
    for p in sorted(OUT.glob("*.json")):
        if p.name in OWN:
            continue
        try:
            frag = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            print(f"bench.py: ignoring {p.relative_to(ROOT)}: {e}")
            continue
        good = {k: v for k, v in frag.items() if isinstance(v, dict)
                and {"median", "min", "max", "unit", "runs"} <= v.keys()}
        results.update(good)
        merged.append(f"{p.name} ({len(good)})")
    if merged:
        print(f"bench.py: merged {', '.join(merged)}")
    return merged


def fmt(v):
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def targets(r):
    """(target, figure, met?) rows for the table of targets (docs/performance.md)."""
    rows = []

    def med(n):
        return r.get(n, {}).get("median")

    def row(what, figure, ok):
        rows.append((what, "not measured" if figure is None else fmt(figure),
                     "-" if figure is None else ("met" if ok else "not met")))

    def over(x, y):
        return None if x is None or not y else round(x / y, 3)

    x = med(CROSS)
    row(f"`{CROSS}` below seL4's {SEL4_ROUND_TRIP}", x, x is not None and x < SEL4_ROUND_TRIP)
    x = med(f"{CROSS}.cap1_ratio")
    row("`cap1` / `cross_as` at most 1.03", x, x is not None and x <= 1.03)
    x = med(f"{CROSS}.lookup_hash_ratio")
    row("`lookup_hash` / `cross_as` at least 1.15", x, x is not None and x >= 1.15)
    x = med("cap.lookup.sparse_dense_ratio")
    row("`cap.lookup.sparse` / `dense` at most 1.10", x, x is not None and x <= 1.10)
    x = med("kmem.fault")
    row("`kmem.fault` at most 1,700 above the operation", x, x is not None and x <= 1700)
    x = med(f"{CROSS}.kmem_pressure_ratio")
    row("`cross_as.kmem_pressure` equal to `cross_as` (kernel memory)", x, x == 1)
    x = med("kmem.revoke.fraction")
    row("at least 50% of a live task's kernel frames taken back (kernel memory)", x, x is not None and x >= 50)
    x = med("cap.wrapper.revoke.copies256_ratio")
    row("revoking a wrapper with 256 copies costs what one without does (kernel memory)", x, x == 1)
    for keep, linux in LINUX_PAIRS[:5]:
        x = med(f"{keep}.linux_ratio")
        row(f"`{keep}` below the Linux guest's `{linux}` (ratio below 1)", x, x is not None and x < 1)
    x = med(linux_ratio("proc.create.constructor", "linux.proc.spawn"))
    row("`proc.create.constructor` at most a third of `linux.proc.spawn` (constructors)", x, x is not None and x <= 1 / 3)
    for n in IO_NAMES:
        x = med(f"{n}.linux_ratio")
        row(f"`{n}` / `linux.{n}` at most 1.0 (I/O)", x, x is not None and x <= 1)
    x = med(f"{SEPARATION[0]}.separation")
    row("separation overhead (`blk.read.seq64k` over `.direct`) at most 3% (I/O)", x, x is not None and x <= 3)
    x = med("wh.syscall.getppid.linux_ratio")
    row("`wh.syscall.getppid` at most 1.5x `linux.syscall.null` (workhorse)", x, x is not None and x <= 1.5)
    x = med("wh.python.startup.linux_ratio")
    row("`wh.python.startup` at most 1.1x the Linux guest's (workhorse)", x, x is not None and x <= 1.1)
    for keep, linux in WH_PAIRS[1:]:
        x = med(f"{keep}.linux_ratio")
        row(f"`{keep}` below `{linux}` (workhorse)", x, x is not None and x < 1)
    x = med("busybox.geomean.linux_ratio")
    row("busybox workloads' geometric mean at most 1.0x the Linux guest (workhorse)", x, x is not None and x <= 1.0)
    x = med("wh.net.idle_wakeups")
    row("`wh.net.idle_wakeups` 0 (workhorse)", x, x == 0)
    for keep, wh in TFILES_PAIRS:
        if keep.endswith(".64k"):
            x = med(f"{keep}.wh_ratio")
            row(f"`{keep}` at most 1.5x `{wh}` (trusted files)", x, x is not None and x <= 1.5)
    x, y = med("notify.signal_wait"), med(CROSS)
    row(f"`notify.signal_wait` below `{CROSS}`", x, x is not None and y is not None and x < y)
    x, y = med("persist.pause.256m"), med("persist.pause.16m")
    row("`persist.pause.256m` at most 1,000,000 instructions (persistence)", x, x is not None and x <= 1_000_000)
    ratio = over(x, y)
    row("`persist.pause.256m` at most 8x `persist.pause.16m` (persistence; the figure: the ratio)",
        ratio, ratio is not None and ratio <= 8)
    x, y = med("persist.checkpoint.incremental"), med("persist.checkpoint.incremental.pages")
    row("an incremental checkpoint writes the k pages changed and the kernel record (persistence; the figure: "
        "records written for k pages)", x, x is not None and y is not None and x == y + 1)
    x, y = med("persist.restore"), med("persist.restore.fresh")
    ratio = over(x, y)
    row("`persist.restore` no slower than a fresh boot (persistence; the figure: restore / fresh)",
        ratio, ratio is not None and ratio <= 1)
    x, y = med(f"{CROSS}.checkpointing"), med(CROSS)
    row(f"`{CROSS}.checkpointing` equal to `{CROSS}` (persistence)", x, x is not None and x == y)
    x = med("sfi.overhead.stores_jumps.geomean.instructions")
    row("SFI stores and jumps: geometric mean of the instruction overhead at most 3% (SFI)", x,
        x is not None and x <= 3)
    x = med("sfi.overhead.full.geomean.instructions")
    row("SFI full: geometric mean of the instruction overhead at most 5% (SFI)", x, x is not None and x <= 5)
    x, y = med("rt.jitter.max.load"), med("rt.jitter.max.alone")
    ratio_rt = over(x, y)
    row("`rt.jitter.max.load` within 1% of `rt.jitter.max.alone` (real time; the figure: load / alone)",
        ratio_rt, ratio_rt is not None and ratio_rt <= 1.01)
    return rows


def write_md(results, kvm, notes, prov=None):
    head = "| benchmark | median | min | max | unit | runs |"
    sep = "|---|---:|---:|---:|---|---:|"
    if kvm:
        head += " KVM cycles (median) |"
        sep += "---:|"
    lines = ["# Benchmark results", "",
             "Written by `make bench` (tools/bench.py); do not edit. " + prov, "",
             "Instructions per operation under `qemu-system-x86_64 -accel tcg "
             "-icount shift=0,sleep=off` (method: docs/performance.md). Figures quoted in the other "
             "documents are lines of this page; `make docs-check` compares them (tools/check_figures.py).",
             "", head, sep]
    for name in sorted(results):
        v = results[name]
        line = (f"| `{name}` | {fmt(v['median'])} | {fmt(v['min'])} | {fmt(v['max'])} "
                f"| {v['unit']} | {v['runs']} |")
        if kvm:
            k = kvm.get(name)
            line += f" {k['median'] if k else ''} |"
        lines.append(line)
    pairs = [(k, l) for k, l in LINUX_PAIRS if k in results and l in results]
    if pairs:
        lines += ["", "## Keep and a Linux guest", "",
                  "The same operations on Debian's Linux kernel booted under the same QEMU flags "
                  "(tools/linuxbench.py; method: docs/performance.md).", "",
                  "| Keep | instructions | Linux guest | instructions | Keep / Linux |", "|---|---:|---|---:|---:|"]
        lines += [f"| `{k}` | {results[k]['median']} | `{l}` | {results[l]['median']} | "
                  f"{fmt(results[linux_ratio(k, l)]['median'])} |" for k, l in pairs]
    io = [n for n in IO_NAMES if n in results or f"linux.{n}" in results]
    if io:
        def cell(n, k="median"):
            v = results.get(n)
            return fmt(v[k]) if v else "not measured"
        lines += ["", "## I/O paths", "",
                  "Instructions per operation (MiB, round trip) counted by the icount plugin under "
                  "`-icount shift=0,sleep=on`, timer interrupts per operation beside them "
                  "(docs/performance.md, \"I/O paths\").", "",
                  "| benchmark | Keep | timer irqs | Linux guest | timer irqs | Keep / Linux |",
                  "|---|---:|---:|---:|---:|---:|"]
        lines += [f"| `{n}` | {cell(n)} | {cell(n + '.timer_irqs')} | {cell('linux.' + n)} | "
                  f"{cell('linux.' + n + '.timer_irqs')} | {cell(n + '.linux_ratio')} |" for n in io]
        if SEPARATION[1] in results:
            lines += [f"| `{SEPARATION[1]}` | {cell(SEPARATION[1])} | {cell(SEPARATION[1] + '.timer_irqs')} "
                      f"| | | |"]
    wh = [(k, l) for k, l in WH_PAIRS if k in results or l in results]
    wh += [(f"busybox.{n}", f"linux.busybox.{n}") for n in BUSYBOX
           if f"busybox.{n}" in results or f"linux.busybox.{n}" in results]
    wh += [(f"wh.python.{n}", f"linux.python.{n}") for n in PYTHON
           if f"wh.python.{n}" in results or f"linux.python.{n}" in results]
    if wh:
        def c(n):
            return fmt(results[n]["median"]) if n in results else "not measured"
        lines += ["", "## The workhorse against the Linux guest", "",
                  "`wh.syscall.*`, `wh.pipe.*`, `wh.proc.*` by rdtsc (CPU-bound), `busybox.*` and "
                  "`wh.python.*` by the icount plugin, instructions per run of the whole workload "
                  "(docs/performance.md, \"The workhorse\").", "",
                  "| Keep | instructions | Linux guest | instructions | Keep / Linux |", "|---|---:|---|---:|---:|"]
        lines += [f"| `{k}` | {c(k)} | `{l}` | {c(l)} | {c(k + '.linux_ratio')} |" for k, l in wh]
        if "busybox.geomean.linux_ratio" in results:
            lines += [f"| busybox geometric mean | | | | {c('busybox.geomean.linux_ratio')} |"]
    tf = [(k, w) for k, w in TFILES_PAIRS if k in results or w in results]
    if tf:
        def c(n):
            return fmt(results[n]["median"]) if n in results else "not measured"
        lines += ["", "## Trusted files against the workhorse's own", "",
                  "Instructions per MiB of file data counted by the icount plugin under `-icount shift=0,sleep=on` "
                  "(tools/tfiles_bench.py; docs/trusted-core.md, \"Trusted files\").", "",
                  "| trusted file | instructions/MiB | the workhorse's /data | instructions/MiB | ratio |",
                  "|---|---:|---|---:|---:|"]
        lines += [f"| `{k}` | {c(k)} | `{w}` | {c(w)} | {c(k + '.wh_ratio')} |" for k, w in tf]
    rt = [n for n in sorted(results) if n.startswith("rt.jitter.max.")]
    if rt:
        lines += ["", "## Real time", "",
                  "`periodic`'s release jitter (ns, an instruction each under -icount shift=0) alone and beside "
                  "each load, the worst of its one-second windows, and the highest of their 99th percentiles "
                  "(tools/test_rt.py --bench; docs/realtime.md).", "",
                  "| phase | max | p99 (windows' highest) |", "|---|---:|---:|"]
        for n in rt:
            p99 = results.get(n.replace(".max.", ".p99."))
            lines.append(f"| `{n[len('rt.jitter.max.'):]}` | {fmt(results[n]['median'])} | "
                         f"{fmt(p99['median']) if p99 else ''} |")
    lat = OUT / "latency.md"
    if lat.exists():
        lines += ["", "## Kernel latency", "",
                  "The longest time each kind of kernel entry keeps interrupts off, from the entry to the return "
                  "to user mode, over the in-guest suite and its capability fuzzer on the latency build "
                  "(tools/latency.py, `make latency`; docs/realtime.md, \"Kernel latency\").", ""]
        lines += lat.read_text().rstrip("\n").split("\n")
    lines += ["", "## Targets", "", "| target | figure | |", "|---|---:|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in targets(results)]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    (OUT / "results.md").write_text(text)
    # The committed results page: every figure the documents quote comes from it.
    (ROOT / "docs" / "results.md").write_text(text)
    return lines


def provenance():
    """Which commit and which machine the figures are from, now: a full run
    keeps it in build/bench/provenance.txt for --page-only."""
    def run(*cmd):
        try:
            return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=30).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = run("git", "rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = run("git", "status", "--porcelain", "--untracked-files=no")
    model = next((l.split(":", 1)[1].strip() for l in Path("/proc/cpuinfo").read_text().splitlines()
                  if l.startswith("model name")), "unknown CPU")
    qv = run("qemu-system-x86_64", "--version").split("\n")[0]
    return (f"Commit `{commit}`{' with local changes' if dirty else ''}, "
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, on {model} "
            f"({os.cpu_count()} host CPUs), {qv or 'QEMU version unknown'}.")


def plots(r):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        # Debian's python3-matplotlib belongs to /usr/bin/python3, which need
        # not be the python3 first on PATH.
        system = Path("/usr/bin/python3")
        if system.exists() and Path(sys.executable).resolve() != system.resolve():
            done = subprocess.run([str(system), __file__, "--plots-only"])
            if done.returncode == 0:
                return [p.name for p in (OUT / "lookup.png", OUT / "caps.png") if p.exists()]
        print("bench.py: python3-matplotlib is missing (tools/install-deps.sh): no plots")
        return []
    made = []
    kinds = [("mmu", CROSS), ("hash", f"{CROSS}.lookup_hash"), ("regs", f"{CROSS}.lookup_regs")]
    kinds = [(k, r[n]) for k, n in kinds if n in r]
    if kinds:
        fig, ax = plt.subplots(figsize=(6, 4))
        names = [k if k == "mmu" or implemented(k) else f"{k}\n(not in kernel/ yet)"
                 for k, _ in kinds]
        bars = ax.bar(names, [v["median"] for _, v in kinds],
                      yerr=[[v["median"] - v["min"] for _, v in kinds],
                            [v["max"] - v["median"] for _, v in kinds]],
                      color=["#4477aa", "#cc6677", "#ddcc77"][:len(kinds)], capsize=4)
        # Figures inside the bars, where neither the seL4 line nor the
        # whiskers (min..max) can run through them.
        ax.bar_label(bars, fmt="%d", label_type="center", color="white", fontweight="bold")
        ax.axhline(SEL4_ROUND_TRIP, color="grey", linestyle="--", linewidth=1)
        ax.text(-0.45, SEL4_ROUND_TRIP, f"seL4 {SEL4_ROUND_TRIP}", va="bottom", ha="left",
                fontsize=8, color="grey", bbox=dict(facecolor="white", edgecolor="none", pad=1))
        ax.set_ylim(0, max(v["max"] for _, v in kinds) * 1.15)
        ax.set_ylabel("instructions per round trip")
        ax.set_xlabel("capability lookup of the kernel build")
        ax.set_title("Cross-address-space call + reply by lookup strategy")
        fig.tight_layout()
        fig.savefig(OUT / "lookup.png", dpi=120)
        plt.close(fig)
        made.append("lookup.png")
    counts = [(n, r.get(CROSS if n == 0 else f"{CROSS}.cap{n}")) for n in range(5)]
    counts = [(n, v) for n, v in counts if v]
    lookups = [(k, r.get(f"cap.lookup.{k}")) for k in ("dense", "sparse")]
    lookups = [(k, v) for k, v in lookups if v]
    if counts or lookups:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.6),
                                     gridspec_kw={"width_ratios": [5, 2]})
        if counts:
            b = a1.bar([str(n) for n, _ in counts], [v["median"] for _, v in counts],
                       color="#4477aa")
            a1.bar_label(b, fmt="%d", label_type="center", color="white", fontweight="bold")
            a1.set_ylim(0, max(v["max"] for _, v in counts) * 1.12)
            a1.set_xlabel("capabilities carried by the call")
            a1.set_ylabel("instructions per round trip")
            a1.set_title("Call + reply between address spaces")
        if lookups:
            b = a2.bar([k for k, _ in lookups], [v["median"] for _, v in lookups],
                       color=["#44aa99", "#cc6677"][:len(lookups)])
            a2.bar_label(b, fmt="%d", label_type="center", color="white", fontweight="bold")
            a2.set_ylim(0, max(v["max"] for _, v in lookups) * 1.12)
            a2.set_ylabel("instructions per invocation")
            a2.set_title("10,000 capabilities")
        fig.tight_layout()
        fig.savefig(OUT / "caps.png", dpi=120)
        plt.close(fig)
        made.append("caps.png")
    return made


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=KERNEL: a capability-lookup variant kernel (hash, regs)")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--kvm", choices=["auto", "yes", "no"], default="auto",
                    help="also run the suite under KVM (cycles); auto: where usable")
    ap.add_argument("--page-only", action="store_true",
                    help="only write the results page again from build/bench/results.json (the time of that run)")
    ap.add_argument("--plots-only", action="store_true",
                    help="only draw the plots from build/bench/results.json")
    ap.add_argument("--icount-check", action="store_true",
                    help="only check the icount plugin against rdtsc (CPU-bound, sleep=off)")
    ap.add_argument("--io-only", metavar="FILTER", nargs="?", const=IO_FILTER,
                    help="only the I/O benchmarks (build/bench/io.json), optionally a filter")
    args = ap.parse_args()
    if args.page_only:
        # The run's own commit and time (HEAD may have moved since).
        prov = OUT / "provenance.txt"
        if not prov.exists():
            sys.exit("bench.py: build/bench/provenance.txt is missing: run make bench")
        write_md(json.loads((OUT / "results.json").read_text()), None, [], prov.read_text().strip())
        print("bench.py: wrote build/bench/results.md and docs/results.md")
        return
    if args.plots_only:
        made = plots(json.loads((OUT / "results.json").read_text()))
        sys.exit(0 if made else 1)
    qemu.check_built()
    OUT.mkdir(parents=True, exist_ok=True)
    if args.icount_check:
        icount_check(args.timeout)
        return
    if args.io_only:
        r = io_boot(args.io_only, args.timeout)
        add_ratios(r)  # the separation overheads, where both figures ran
        write_io(r)
        return
    begin = time.monotonic()
    notes = []
    results = boot(qemu.KERNEL, "autobench", "mmu", timeout=args.timeout)
    # The checkpoint's pause and incremental checkpoints: a boot of its own whose pool holds 256 MiB of
    # working set (user/root/src/bench/persist.rs).
    results.update(boot(qemu.KERNEL, f"autobench bench={PERSIST} pool=288", "persist",
                        timeout=args.timeout, memory="1536M"))
    results.update(persist_restore(args.timeout))
    for spec in args.variant:
        name, _, kernel = spec.partition("=")
        kernel = (ROOT / kernel).resolve()
        if not kernel.exists():
            sys.exit(f"bench.py: {kernel} is missing (make bench builds it)")
        if not implemented(name):
            note = (f"kernel/ has no `CAP_LOOKUP_{name.upper()}` code yet: the `{name}` kernel "
                    f"is built with `-DCAP_LOOKUP_{name.upper()}` but uses the MMU lookup, so "
                    f"`{CROSS}.lookup_{name}` measures the default lookup")
            print(f"bench.py: NOTE: {note}")
            notes.append(note)
        r = boot(kernel, f"autobench bench={CROSS}", name, timeout=args.timeout)
        if CROSS in r:
            results[f"{CROSS}.lookup_{name}"] = r[CROSS]
        else:
            print(f"bench.py: [{name}] no {CROSS} figure")
    write_io(io_boot(IO_FILTER, args.timeout))
    kvm = None
    if args.kvm == "yes" or (args.kvm == "auto" and qemu.kvm_usable()):
        kvm = boot(qemu.KERNEL, "autobench", "kvm", accel="kvm", timeout=args.timeout)
        for v in kvm.values():
            v["unit"] = "cycles"
        (OUT / "results-kvm.json").write_text(json.dumps(kvm, indent=2, sort_keys=True) + "\n")
    else:
        notes.append("no usable hardware virtualization on this host: instruction counts only")
    merged = merge_fragments(results)
    add_ratios(results)
    if merged:
        notes.append("merged from other fragments: " + ", ".join(merged))
    (OUT / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    prov = provenance()
    (OUT / "provenance.txt").write_text(prov + "\n")
    print("\n".join(write_md(results, kvm, notes, prov)))
    made = plots(results)
    print(f"bench.py: wrote build/bench/results.json, results.md"
          + "".join(f", {m}" for m in made) + f" ({time.monotonic() - begin:.0f} s)")


if __name__ == "__main__":
    main()
