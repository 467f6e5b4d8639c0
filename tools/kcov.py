#!/usr/bin/env python3
"""Kernel basic-block coverage (docs/coverage.md).

    kcov.py run OUT [--no-iommu] [--timeout S] [--append ARGS]
        the in-guest suite (qemu.py test) under the coverage plugin
        (tools/icount-plugin/kcov.c); writes the executed kernel
        instruction addresses to OUT
    kcov.py report [LABEL=]TRACE[,TRACE...]... [--md FILE]
        maps the traces (their union) onto the kernel's basic blocks and
        prints the coverage per source file, the total and the functions
        never reached; a TRACE that is a directory stands for all its
        *.trace files (one per boot of `make kcov-all`)

The basic blocks come from `objdump -d -l` of build/kernel.elf (.text,
the kernel's linked-high code): a block starts at a function's start, at
the target of a direct jump or call and after every jump, call, return,
ud2, hlt and iretq/sysretq; padding (nops and int3 alone) is not a block.
A block counts as reached when the plugin saw any of its instructions
executed.  The source file of a block is the line information of its
first instruction."""
import argparse
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
ELF = BUILD / "kernel.elf"
SRC = ROOT / "tools" / "icount-plugin"
PLUGIN = BUILD / "icount-plugin" / "libkcov.so"
KERNEL_BASE = 0xffffffff80000000

LINES = {}  # address -> file:line, filled by disassemble()
INSN_RE = re.compile(r"^\s*([0-9a-f]+):\s+(\S+)\s*(.*)$")
FUNC_RE = re.compile(r"^([0-9a-f]+) <(.+)>:$")
LINE_RE = re.compile(r"^(/\S+|\S+\.[chS]):(\d+)")
TARGET_RE = re.compile(r"^([0-9a-f]+)\s+<")
ENDS = ("jmp", "ret", "iret", "sysret", "ud2", "hlt", "call", "lret", "int3")
PAD = {"nop", "nopl", "nopw", "int3", "xchg", "data16", "cs", "ds"}


def build_plugin():
    src = SRC / "kcov.c"
    deps = [src, SRC / "plugin-api.h"]
    if not PLUGIN.exists() or PLUGIN.stat().st_mtime < max(p.stat().st_mtime for p in deps):
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-pthread", "-o", str(PLUGIN), str(src)],
                       check=True)
    return PLUGIN


def plugin_args(out, every_ms=2000):
    """QEMU's -plugin option that writes the kernel's executed addresses to
    `out`, at exit and every `every_ms` ms (a QEMU killed by SIGKILL keeps
    all but the last moments)."""
    return ["-plugin", f"file={build_plugin()},out={out},lo={KERNEL_BASE:#x},every={every_ms}"]


def rel(path):
    i = path.find("/kernel/")
    return path[i + 1:] if i >= 0 else path


def disassemble(elf=ELF):
    """Instructions of .text: list of (addr, mnemonic, operands, file, func)."""
    out = subprocess.run(["objdump", "-d", "-l", "-j", ".text", "--no-show-raw-insn", str(elf)],
                         check=True, capture_output=True, text=True).stdout
    insns, func, file, lineno = [], None, "?", 0
    for line in out.splitlines():
        m = FUNC_RE.match(line)
        if m:
            func = m.group(2)
            continue
        m = LINE_RE.match(line)
        if m:
            file = rel(m.group(1))
            lineno = m.group(2)
            continue
        m = INSN_RE.match(line)
        if m and func:
            a = int(m.group(1), 16)
            LINES[a] = f"{file}:{lineno}" if file != "?" else "?"
            insns.append((a, m.group(2), m.group(3), file, func))
    return insns


def basic_blocks(insns):
    """[(start, [insn addresses], file, func)] of the non-padding blocks."""
    leaders = set()
    prev_func = None
    for i, (a, mn, ops, _, func) in enumerate(insns):
        if func != prev_func:
            leaders.add(a)
            prev_func = func
        branch = mn.startswith("j") or mn.startswith("call") or mn.startswith("loop")
        if branch:
            t = TARGET_RE.match(ops)
            if t:
                leaders.add(int(t.group(1), 16))
        if branch or mn.startswith(ENDS):
            if i + 1 < len(insns):
                leaders.add(insns[i + 1][0])
    blocks, cur = [], None
    for a, mn, ops, file, func in insns:
        if a in leaders or cur is None:
            cur = [a, [], file, func, True]
            blocks.append(cur)
        cur[1].append(a)
        if mn.split()[0] not in PAD and not mn.startswith(("nop", "int3")):
            cur[4] = False
    return [(b[0], b[1], b[2], b[3]) for b in blocks if not b[4]]


def read_trace(path):
    hit = set()
    for line in Path(path).read_text().splitlines():
        parts = line.split()
        if parts:
            hit.add(int(parts[0], 16))
    return hit


def coverage(blocks, hit):
    """{file: [reached, total]}, {func: (file, reached, total)}"""
    files = defaultdict(lambda: [0, 0])
    funcs = {}
    for start, addrs, file, func in blocks:
        r = any(a in hit for a in addrs)
        files[file][1] += 1
        files[file][0] += r
        f = funcs.setdefault(func, [file, 0, 0])
        f[2] += 1
        f[1] += r
    return files, funcs


def pct(r, t):
    return f"{100.0 * r / t:.1f}" if t else "-"


def report(args):
    blocks = basic_blocks(disassemble(Path(args.elf)))
    runs = []  # (label, hit set)
    single = []  # (trace, blocks reached)
    for spec in args.traces:
        label, _, path = spec.rpartition("=")
        hit = set()
        for p in path.split(","):
            # A directory: the union of its trace files (KEEP_KCOV_DIR).
            if Path(p).is_dir():
                one = set().union(*map(read_trace, sorted(Path(p).glob("*.trace"))))
            elif Path(p).exists():
                one = read_trace(p)
            else:
                print(f"kcov: {p} is missing; counted as reaching nothing", file=sys.stderr)
                one = set()
            single.append((p, sum(any(a in one for a in b[1]) for b in blocks)))
            hit |= one
        runs.append((label or Path(path).stem, hit))
    results = [(label, *coverage(blocks, hit)) for label, hit in runs]
    files = sorted(results[0][1])
    lines = []
    if args.commit:
        lines.append(f"Kernel basic blocks reached (commit {args.commit}); "
                     "each column is the union of its traces.")
        lines.append("")
    lines.append("| file | blocks | " + " | ".join(f"{l} reached | {l} %" for l, _, _ in results) + " |")
    lines.append("|---|---:|" + "---:|---:|" * len(results))
    for f in files:
        t = results[0][1][f][1]
        lines.append(f"| {f} | {t} | " + " | ".join(f"{r[1][f][0]} | {pct(r[1][f][0], t)}" for r in results) + " |")
    tot = len(blocks)
    reached = [sum(v[0] for v in r[1].values()) for r in results]
    lines.append(f"| **total** | {tot} | " + " | ".join(f"{x} | {pct(x, tot)}" for x in reached) + " |")
    lines.append("")
    lines.append("Each trace alone: " + "; ".join(f"`{Path(p).name}` {x} ({pct(x, tot)} %)" for p, x in single) + ".")
    # Functions never reached in the last run (the widest, by convention).
    last = results[-1][2]
    never = sorted(((v[0], fn, v[2]) for fn, v in last.items() if v[1] == 0), key=lambda x: (-x[2], x[0]))
    lines.append("")
    lines.append(f"Functions never reached ({results[-1][0]}): {len(never)} of {len(last)}, "
                 f"{sum(n[2] for n in never)} blocks; largest first.")
    lines.append("")
    lines.append("| function | file | blocks |")
    lines.append("|---|---|---:|")
    for file, fn, n in never[:args.top] if args.top else never:
        lines.append(f"| {fn} | {file} | {n} |")
    # The largest blocks never reached in the last run, inside functions
    # that were reached (the error paths and branches the tests miss).
    hit = runs[-1][1]
    reached_funcs = {fn for fn, v in last.items() if v[1]}
    miss = sorted((b for b in blocks if b[3] in reached_funcs and not any(a in hit for a in b[1])),
                  key=lambda b: (-len(b[1]), b[0]))
    lines.append("")
    lines.append(f"Largest blocks never reached ({results[-1][0]}) in functions that were reached "
                 f"({len(miss)} blocks; the first {min(len(miss), args.blocks)}):")
    lines.append("")
    lines.append("| function | source line | instructions |")
    lines.append("|---|---|---:|")
    for start, addrs, file, fn in miss[:args.blocks]:
        lines.append(f"| {fn} | {LINES.get(start, file)} | {len(addrs)} |")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    for label, x in zip((r[0] for r in results), reached):
        print(f"kcov: {label}: {x} of {tot} kernel basic blocks reached ({pct(x, tot)} %)", file=sys.stderr)
    if args.md:
        Path(args.md).parent.mkdir(parents=True, exist_ok=True)
        Path(args.md).write_text(text)


def run(args):
    cmd = [sys.executable, str(ROOT / "tools" / "qemu.py"), "test", "--accel", "tcg",
           "--timeout", str(args.timeout), "--coverage", args.out]
    if not args.iommu:
        cmd.append("--no-iommu")
    if args.append:
        cmd += ["--append", args.append]
    print("kcov.py: " + " ".join(cmd), flush=True)
    sys.exit(subprocess.run(cmd).returncode)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    r = sub.add_parser("run")
    r.add_argument("out")
    r.add_argument("--no-iommu", dest="iommu", action="store_false")
    r.add_argument("--timeout", type=float, default=600)
    r.add_argument("--append", help="more kernel command-line words after autotest")
    p = sub.add_parser("report")
    p.add_argument("traces", nargs="+", help="[LABEL=]TRACE[,TRACE...]: one column per argument")
    p.add_argument("--elf", default=str(ELF))
    p.add_argument("--md")
    p.add_argument("--commit", help="the commit measured, for the report's heading")
    p.add_argument("--blocks", type=int, default=40, help="how many unreached blocks to list")
    p.add_argument("--top", type=int, default=0, help="list only the N largest functions never reached")
    args = ap.parse_args()
    {"run": run, "report": report}[args.mode](args)


if __name__ == "__main__":
    main()
