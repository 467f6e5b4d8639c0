#!/usr/bin/env python3
"""Instruction profile of one benchmark: where its instructions go.

    tools/iprof.py BENCH [--repeat K] [--per N] [--top K] [--lines]

Boots the kernel twice under TCG with one instruction per translation block
and QEMU's exec log (every executed instruction's address): once with
`autobench bench=BENCH benchrepeat=K` (the root task runs the benchmark K
times) and once with `autobench bench=BENCH` (once; cached in build/iprof/).
Both boots are deterministic under -icount, so the difference of the
per-address counts is exactly K-1 runs of the measurement, without boot,
partner start-up or warm-up.  It prints that difference per function (kernel
symbols from build/kernel.elf, user symbols from the root task), divided by
--per (the number of operations in K-1 runs: (K-1) * 22 batches * n; default:
the executions of syscall_entry, one per invocation).  A developer's tool,
slow (a minute or two a boot); it writes nothing but its table.

    tools/iprof.py --io NAME [--top K] [--lines K] [--annotate FUNCTION]

The I/O benchmarks (net.*, blk.*: docs/performance.md, "I/O paths") wait
for a device or for the host, so they are profiled in tools/bench.py's own
I/O boot (`-icount shift=0,sleep=on`, the host's network peer following the
guest, tools/netpeer.py) with the instruction-counting plugin in its profile
mode: it writes every instruction executed in each region with its address,
bytes and count (build/iprof/io.N).  The regions of the benchmarks named
NAME (a bench.py --io-only filter, e.g. net.tcp.recv) are summed and
divided by their operations (MiB, round trips).  Kernel instructions are
named from build/kernel.elf; user ones from the program whose loadable
bytes hold them at that address: the network server and netstack are
linked at bases of their own (0x10000000, 0x20000000), the others at
0x400000 are told apart by their bytes (an instruction that two of them
have alike at one address is named by both, `a|b`).
"""
import argparse
import bisect
import hashlib
import pickle
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import qemu  # noqa: E402

RELEASE = ROOT / "build/user/x86_64-unknown-linux-gnu/release"
# The programs an I/O benchmark's instructions may belong to (--io).
IO_PROGRAMS = ["net", "netstack", "root", "pci", "dataspace", "blk", "blkbench", "init", "spacebank"]
KERNEL_BASE = 1 << 63


def symbols(elf):
    out = subprocess.run(["nm", "-n", "--defined-only", "-C", str(elf)], capture_output=True,
                         text=True, check=True).stdout
    addrs, names = [], []
    for line in out.splitlines():
        parts = line.split(None, 2)
        if len(parts) == 3 and parts[1] in "tTwW":
            addrs.append(int(parts[0], 16))
            names.append(parts[2])
    return addrs, names


class Elf:
    """A program's loadable bytes and function symbols."""

    def __init__(self, name, path):
        self.name = name
        data = path.read_bytes()
        phoff, = struct.unpack_from("<Q", data, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
        self.segs = []
        for i in range(phnum):
            typ, _flags, off, vaddr, _pa, filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if typ == 1:  # PT_LOAD
                self.segs.append((vaddr, data[off:off + filesz]))
        self.addrs, self.names = symbols(path)

    def has(self, vaddr, size, raw):
        for base, b in self.segs:
            if base <= vaddr and vaddr + size <= base + len(b):
                return b[vaddr - base:vaddr - base + min(size, 8)] == raw
        return False

    def func(self, vaddr):
        i = bisect.bisect_right(self.addrs, vaddr) - 1
        return (self.names[i], vaddr - self.addrs[i]) if i >= 0 else ("?", vaddr)



def io_profile(args):
    """--io: the I/O boot of tools/bench.py with the plugin's profile; the
    table of the regions named args.bench by program and function."""
    import bench  # the I/O boot and its host peer (tools/bench.py, tools/netpeer.py)
    out = ROOT / "build/iprof"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("io.*"):
        old.unlink()
    regions = bench.io_regions(args.bench, args.timeout, profile=out / "io", log=out / "log-io.txt")
    print_profiles(regions, out / "io", IO_PROGRAMS, args)


def print_profiles(regions, prefix, programs, args):
    """The table of each benchmark of `regions` (an icount.Regions whose
    k-th region's profile is PREFIX.k) by program and function; `programs`
    are the names of the programs its instructions may belong to; `args`
    has elf, top, lines and annotate as main's options.  Also used by
    tools/tfiles_bench.py --profile."""
    if len(regions.regions) != len(regions.lines):
        sys.exit(f"iprof: {len(regions.regions)} regions but {len(regions.lines)} bench-io lines")
    kaddrs, knames = symbols(args.elf)
    progs = [Elf(n, RELEASE / n) for n in programs if (RELEASE / n).exists()]
    names = sorted({n for n, *_ in regions.lines})
    for name in names:
        runs = [(k, per) for k, (n, per, _t, _q, why) in enumerate(regions.lines, 1) if n == name and why is None]
        if not runs:
            print(f"\n{name}: not measured")
            continue
        per = sum(p for _, p in runs)
        irqs = sum(regions.regions[k - 1][1] for k, _ in runs)
        counts = collections.Counter()
        for k, _ in runs:
            for line in Path(f"{prefix}.{k}").read_text().splitlines():
                va, size, raw, n = line.split()
                counts[(int(va, 16), int(size), int(raw, 16))] += int(n)
        by_prog, by_func, calls, hot = collections.Counter(), collections.Counter(), collections.Counter(), []
        for (va, size, raw), n in counts.items():
            if va >= KERNEL_BASE:
                i = bisect.bisect_right(kaddrs, va) - 1
                prog, fn, off = "kernel", knames[i] if i >= 0 else "?", va - kaddrs[i] if i >= 0 else va
            else:
                b = raw.to_bytes(8, "little")[:min(size, 8)]
                owners = [e for e in progs if e.has(va, size, b)]
                if owners:
                    prog = "|".join(e.name for e in owners)
                    fn, off = owners[0].func(va)
                else:
                    prog, fn, off = "other", "?", va
            by_prog[prog] += n
            by_func[(prog, fn)] += n
            if off == 0:  # the function's first instruction: its calls (and jumps back there)
                calls[(prog, fn)] += n
            hot.append((n, prog, fn, off, va))
        total = sum(by_prog.values())
        unit = regions_unit(name)
        print(f"\n{name}: {total / per:,.0f} instructions per {unit} ({len(runs)} runs, {per} {unit}s; "
              f"{irqs / per:.3f} timer interrupts per {unit})")
        for prog, n in by_prog.most_common():
            print(f"  {n / per:14,.0f}  {prog}")
        print(f"  by function (instructions and entries per {unit}):")
        for (prog, fn), n in by_func.most_common(args.top):
            print(f"  {n / per:14,.0f} {calls[(prog, fn)] / per:8,.0f}  {prog:<9} {fn}")
        for want in args.annotate:
            annotate_io(want, hot, per, progs, args.elf)
        if args.lines:
            print("  hottest instructions:")
            for n, prog, fn, off, va in sorted(hot, reverse=True)[:args.lines]:
                print(f"  {n / per:14,.1f}  {va:#x} {prog} {fn}+{off:#x}")


def regions_unit(name):
    import icount
    return icount.unit_of(name)


def annotate_io(want, hot, per, progs, kernel_elf):
    """objdump of the hottest function whose name contains `want`, with
    each instruction's count per operation."""
    fns = collections.Counter()
    for n, prog, fn, _off, _va in hot:
        if want in fn:
            fns[(prog.split("|")[0], fn)] += n
    if not fns:
        print(f"  (no {want} in this profile)")
        return
    (prog, fn), _ = fns.most_common(1)[0]
    counts = collections.Counter()
    for n, p, f, _off, va in hot:
        if p.split("|")[0] == prog and f == fn:
            counts[va] += n
    path = Path(kernel_elf) if prog == "kernel" else RELEASE / prog
    addrs, _names = symbols(path)
    print_annotated(path, addrs, counts, per, f"{prog} {fn}", "10.1f")


def print_annotated(path, addrs, counts, per, title, fmt):
    """objdump's listing of the function (of `path`, whose symbol addresses
    are `addrs`) holding the lowest address in `counts`, each instruction
    with its count per operation (`counts[va] / per`, printed with `fmt`)."""
    i = bisect.bisect_right(addrs, min(counts)) - 1
    start, end = addrs[i], addrs[i + 1] if i + 1 < len(addrs) else addrs[i] + 0x1000
    dis = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", f"--start-address={start:#x}",
                          f"--stop-address={end:#x}", str(path)], capture_output=True, text=True).stdout
    print(f"  {title}:")
    blank = " " * (len(format(0.0, fmt)) + 4)
    for line in dis.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s*(.*)", line)
        if m:
            n = counts.get(int(m.group(1), 16), 0)
            print(f"  {n / per:{fmt}}  {m.group(1)}: {m.group(2)}" if n else f"{blank}{m.group(1)}: {m.group(2)}")


def count(kernel, append):
    """Run one boot; return a Counter of executed instruction addresses."""
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "exec")
        os.mkfifo(fifo)
        cmd = qemu.base_cmd("tcg", append + " icount", icount=True, kernel=kernel)
        cmd += ["-singlestep", "-d", "exec,nochain", "-D", fifo, "-serial", "null"]
        counts = collections.Counter()

        def reader():
            with open(fifo, "rb", buffering=1 << 20) as f:
                for line in f:
                    if line.startswith(b"Trace"):
                        # Trace 0: HOSTPTR [CS_BASE/PC/FLAGS/CFLAGS]
                        counts[line.split(b"/", 2)[1]] += 1
        t = threading.Thread(target=reader)
        t.start()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=1800)
        t.join()
    return collections.Counter({int(k, 16): v for k, v in counts.items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench", help="the benchmark's name (with --io: a bench.py --io-only filter)")
    ap.add_argument("--io", action="store_true",
                    help="an I/O benchmark, in bench.py's I/O boot with its host peer (above)")
    ap.add_argument("--timeout", type=float, default=900, help="--io: seconds the boot may take")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the benchmark in the profiled boot; the base boot runs it once")
    ap.add_argument("--per", type=float, default=0)
    ap.add_argument("--kernel", default=str(qemu.KERNEL))
    ap.add_argument("--elf", default=str(ROOT / "build/kernel.elf"), help="the kernel ELF with symbols")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--lines", nargs="?", type=int, const=-1, default=0,
                    help="also print the hottest addresses (--io: the K hottest)")
    ap.add_argument("--annotate", action="append", default=[], metavar="FUNCTION",
                    help="print the kernel function's disassembly with the count of each instruction "
                         "(--io: of any program's function, a name as listed or a part of one)")
    args = ap.parse_args()
    if args.io:
        io_profile(args)
        return

    ksyms = symbols(args.elf)
    usyms = symbols(ROOT / "build/user/x86_64-unknown-linux-gnu/release/root")
    print(f"iprof: boot with bench={args.bench} benchrepeat={args.repeat}", file=sys.stderr, flush=True)
    a = count(args.kernel, f"autobench bench={args.bench} benchrepeat={args.repeat}")
    # The base boot depends only on the kernel, the image and the name: cache it.
    h = hashlib.sha256(args.bench.encode())
    for f in (args.kernel, qemu.IMAGE):
        h.update(Path(f).read_bytes())
    cache = ROOT / "build/iprof" / (h.hexdigest()[:16] + ".pickle")
    if cache.exists():
        b = pickle.loads(cache.read_bytes())
    else:
        print(f"iprof: boot with bench={args.bench}", file=sys.stderr, flush=True)
        b = count(args.kernel, f"autobench bench={args.bench}")
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_bytes(pickle.dumps(b))
    diff = {pc: a[pc] - b.get(pc, 0) for pc in a if a[pc] != b.get(pc, 0)}

    def name(pc):
        addrs, names = ksyms if pc >= 1 << 63 else usyms
        i = bisect.bisect_right(addrs, pc) - 1
        return names[i] if i >= 0 else "?"

    per_fn = collections.Counter()
    for pc, n in diff.items():
        per_fn[name(pc)] += n
    entry = ksyms[0][ksyms[1].index("syscall_entry")]
    per = args.per or diff.get(entry, 0) or 1
    total = sum(diff.values())
    print(f"{'instructions per op':>20}  function   (ops = {per:g}, total {total / per:.1f})")
    for fn, n in sorted(per_fn.items(), key=lambda kv: -kv[1])[: args.top]:
        print(f"{n / per:20.2f}  {fn}")
    for fn in args.annotate:
        addrs, names = ksyms
        if fn not in names:
            print(f"iprof: no kernel function {fn}", file=sys.stderr)
            continue
        i = names.index(fn)
        lo, hi = addrs[i], addrs[i + 1]
        dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", f"--start-address={lo:#x}",
                              f"--stop-address={hi:#x}", args.elf], capture_output=True, text=True).stdout
        print(f"\n{fn}:")
        for line in dis.splitlines():
            head = line.split(":", 1)[0].strip()
            try:
                pc = int(head, 16)
            except ValueError:
                continue
            n = diff.get(pc, 0)
            print(f"{n / per:8.2f} {line.strip()}" if n else f"{'':8} {line.strip()}")
    if args.lines:
        print()
        for pc, n in sorted(diff.items(), key=lambda kv: -kv[1])[: args.top * 3]:
            print(f"{n / per:10.2f}  {pc:#x}  {name(pc)}")


if __name__ == "__main__":
    main()
