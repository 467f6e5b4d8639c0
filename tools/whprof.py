#!/usr/bin/env python3
"""Instruction profile of the workhorse's figures: where the instructions of
a getppid, a pipe round trip and a fork+exec+wait go (docs/performance.md,
"The workhorse").

    tools/whprof.py [--top K] [--lines K] [--bench PREFIX]
    tools/whprof.py --busybox NAME [--per N] ...   (busybench.sh's busybox.NAME)

Boots Keep (build/boot.img) under `-icount shift=0,sleep=on` with the
instruction-counting plugin in its profile mode (tools/icount-plugin:
`profile=PATH`) and at the shell runs `linux echo warm` (as
tools/workhorse_bench.py does) and `linux /tests/sysbench marked`, which
after each figure's 21 batches runs one more batch between the plugin's
markers.  The plugin writes each executed instruction's address, bytes and
count for each region; this tool finds which program each one belongs to
(the kernel by its address; user instructions by their bytes, against the
workhorse's ELF and an unstripped build of sysbench.c, since Keep's
programs and a static Linux one share addresses) and prints the counts per
operation by program and by function.  A developer's tool: it writes
nothing but build/whprof/ and its table.
"""
import argparse
import bisect
import collections
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import icount  # noqa: E402
from iprof import Elf, print_annotated, symbols  # noqa: E402  (an ELF's code symbols by address; its loadable bytes)
from test_boot import Guest, PROMPT  # noqa: E402

ROOT = qemu.ROOT
OUT = ROOT / "build" / "whprof"
WORKHORSE = ROOT / "build" / "user" / "x86_64-unknown-linux-gnu" / "release" / "workhorse"
SYSBENCH_C = ROOT / "user" / "servers" / "workhorse" / "tests" / "sysbench.c"
MARK_RE = re.compile(r"bench-mark: (\S+) per=(\d+)")
BUSYBENCH = ROOT / "user" / "servers" / "workhorse" / "tests" / "busybench.sh"
IO_RE = re.compile(r"bench-io: (\S+) per=(\d+)")


def busybox_lines(name):
    """The shell lines that run busybench.sh's workload busybox.NAME once
    through benchrun (between the plugin's markers), its input files made
    first."""
    text = BUSYBENCH.read_text()
    m = re.search(r"^\s*\$B run \$\{p\}busybox\." + re.escape(name) + r" 1 \$BB (.*)$", text, re.M)
    if not m:
        sys.exit(f"whprof.py: no workload busybox.{name} in {BUSYBENCH}")
    setup = [l.strip().replace("$B ", "/tests/benchrun ").replace("$d", "/tmp/bb").replace(" || exit 1", "")
             for l in text.splitlines() if re.match(r"\$B (text|lines|files) ", l.strip())]
    run = f"/tests/benchrun run busybox.{name} 1 /bin/busybox " + m.group(1).replace("$d", "/tmp/bb").replace("$BB", "/bin/busybox")
    setup = [l for l in setup if l.split()[2] in run]
    return ["mkdir -p /tmp/bb"] + setup + [run]
KERNEL_BASE = 0xFFFF800000000000


def sysbench_elf():
    """sysbench.c built as the Makefile builds it, without -s (the same
    code, with symbols)."""
    exe = OUT / "sysbench"
    subprocess.run([qemu.os.environ.get("CC", "gcc"), "-static", "-O1", "-o", str(exe), str(SYSBENCH_C)],
                   check=True)
    return Elf("sysbench", exe)


def boot(profile, busybox=None):
    orig = qemu.base_cmd
    qemu.base_cmd = lambda accel, append="", **kw: orig(accel, append + " icount", **{**kw, "icount": icount.ICOUNT_IO})
    try:
        g = Guest(extra=["-plugin", f"file={icount.build()},profile={profile}"])
    finally:
        qemu.base_cmd = orig
    try:
        if not g.expect(PROMPT, 180):
            sys.exit("whprof.py: no prompt")
        # As tools/workhorse_bench.py does: the server's heap is in the same
        # state when sysbench starts.
        m = g.send("linux echo warm")
        g.expect(b"warm\n", 120, m + 16)
        g.expect(PROMPT, 60, m + 16)
        if busybox:
            # Its input files, then the workload: one region.
            lines = busybox_lines(busybox)
            for line in lines[:-1]:
                m = g.send(f"linux {line}")
                g.expect(PROMPT, 600, m + len(line) + 6)
            m = g.send(f"linux {lines[-1]}")
            if not g.expect(b"bench-io: busybox.", 1800, m):
                sys.exit("whprof.py: the workload did not finish; see build/whprof/log.txt")
        else:
            m = g.send("linux /tests/sysbench marked")
            if not g.expect(b"bench-mark: wh.proc.fork_exec_wait", 1800, m):
                sys.exit("whprof.py: sysbench did not finish; see build/whprof/log.txt")
        g.expect(PROMPT, 60, m + 30)
    finally:
        g.p.kill()
        (OUT / "log.txt").write_bytes(bytes(g.out))
    text = g.out.decode(errors="replace")
    return [(name, int(per)) for name, per in (IO_RE if busybox else MARK_RE).findall(text)]


def annotate(want, hot, per):
    """objdump of the listed function containing `want`, with counts."""
    counts = collections.Counter()
    fns = {}
    for n, prog, fn, _off, va in hot:
        if want in fn and prog in ("kernel", "workhorse"):
            counts[va] += n
            fns[(prog, fn)] = fns.get((prog, fn), 0) + n
    if not fns:
        print(f"  (no {want} in this profile)")
        return
    prog, fn = max(fns, key=fns.get)
    elf = ROOT / "build" / "kernel.elf" if prog == "kernel" else WORKHORSE
    addrs, _names = symbols(elf)
    print_annotated(elf, addrs, counts, per, f"{prog} {fn}", "8.2f")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--top", type=int, default=30, help="functions listed per figure")
    ap.add_argument("--lines", type=int, default=0, help="also the K hottest instructions")
    ap.add_argument("--bench", default="wh.", help="only the figures whose names start so")
    ap.add_argument("--busybox", metavar="NAME",
                    help="profile busybench.sh's workload busybox.NAME (one run) instead of sysbench")
    ap.add_argument("--per", type=int, default=0, help="with --busybox: operations in the run (default 1)")
    ap.add_argument("--reuse", action="store_true", help="use the last boot's profile (build/whprof/)")
    ap.add_argument("--annotate", action="append", default=[], metavar="FUNCTION",
                    help="print the function's disassembly with each instruction's count per operation "
                         "(kernel or workhorse; a name as listed, or a part of one)")
    a = ap.parse_args()
    qemu.check_built()
    OUT.mkdir(parents=True, exist_ok=True)
    profile = OUT / "prof"
    marks_file = OUT / "marks.txt"
    if a.reuse and marks_file.exists():
        marks = [(n, int(p)) for n, p in (l.split() for l in marks_file.read_text().splitlines())]
    else:
        for old in OUT.glob("prof.*"):
            old.unlink()
        marks = boot(profile, a.busybox)
        marks_file.write_text("".join(f"{n} {p}\n" for n, p in marks))
    kaddrs, knames = symbols(ROOT / "build" / "kernel.elf")
    progs = [Elf("workhorse", WORKHORSE), sysbench_elf()]
    for region, (name, per) in enumerate(marks, 1):
        if not name.startswith("busybox." if a.busybox else a.bench):
            continue
        per = a.per or per
        by_prog, by_func, hot = collections.Counter(), collections.Counter(), []
        for line in (OUT / f"prof.{region}").read_text().splitlines():
            va, size, raw, n = line.split()
            va, size, n = int(va, 16), int(size), int(n)
            raw = int(raw, 16).to_bytes(8, "little")[:min(size, 8)]
            if va >= KERNEL_BASE:
                i = bisect.bisect_right(kaddrs, va) - 1
                prog, fn, off = "kernel", knames[i] if i >= 0 else "?", va - kaddrs[i] if i >= 0 else va
            else:
                e = next((e for e in progs if e.has(va, size, raw)), None)
                if e:
                    prog = e.name
                    fn, off = e.func(va)
                else:  # busybox, ld.so or a library
                    prog, fn, off = "other", "?", va
            by_prog[prog] += n
            by_func[(prog, fn)] += n
            hot.append((n, prog, fn, off, va))
        total = sum(by_prog.values())
        print(f"\n{name}: {total / per:,.1f} instructions per operation ({per} operations)")
        for prog, n in by_prog.most_common():
            print(f"  {prog:<10} {n / per:10.1f}")
        print("  by function:")
        for (prog, fn), n in by_func.most_common(a.top):
            print(f"  {n / per:10.1f}  {prog:<9} {fn}")
        for want in a.annotate:
            annotate(want, hot, per)
        if a.lines:
            print("  hottest instructions:")
            for n, prog, fn, off, va in sorted(hot, reverse=True)[:a.lines]:
                print(f"  {n / per:10.2f}  {va:#x} {prog} {fn}+{off:#x}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
