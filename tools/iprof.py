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
"""
import argparse
import bisect
import hashlib
import pickle
import collections
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import qemu  # noqa: E402


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
    ap.add_argument("bench")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of the benchmark in the profiled boot; the base boot runs it once")
    ap.add_argument("--per", type=float, default=0)
    ap.add_argument("--kernel", default=str(qemu.KERNEL))
    ap.add_argument("--elf", default=str(ROOT / "build/kernel.elf"), help="the kernel ELF with symbols")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--lines", action="store_true", help="also print the hottest addresses")
    ap.add_argument("--annotate", action="append", default=[], metavar="FUNCTION",
                    help="print the kernel function's disassembly with the count of each instruction")
    args = ap.parse_args()

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
