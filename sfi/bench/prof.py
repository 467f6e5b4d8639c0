#!/usr/bin/env python3
"""Where a benchmark program's time goes, sandboxed against native (not part
of make sfi-bench; for finding overhead).

  prof.py PROGRAM [FLAVOUR] [--top N] [--annotate FUNCTION]

Relinks PROGRAM's module (FLAVOUR stores or full; default stores) from the
objects make sfi-bench built, keeping the linked ELF for its symbols
(SFI_LD_ELF), samples sfi-run with `perf record -e cpu-clock` (the VM has no
hardware counters; the clock still samples where time goes), maps each
sample in the domain to its instruction, and prints per function the share
of samples natively and sandboxed, and how much of the sandboxed samples
fell on sandboxing instructions (no-ops, masks, base adds, the return
sequence, the stack-pointer fix-up).  --annotate prints one function's
instructions with their sample counts."""
import bisect
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import sfibuild  # noqa: E402

CODE_BASE = 0x20000


def samples(cmd, out):
    """The instruction pointers perf sampled in cmd, with their DSO."""
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", "20000", "-o", out, "--"] + cmd,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    r = subprocess.run(["perf", "script", "-i", out, "-F", "ip,sym,dso"], capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if parts:
            yield int(parts[0], 16), parts[1] if len(parts) > 1 else ""


def disassembly(elf):
    """[(address, function, text)] of the module's code, from objdump."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "-M", "att", elf], capture_output=True, text=True, check=True)
    fn, out = "?", []
    for line in r.stdout.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.+)>:$", line)
        if m:
            if not m.group(2).startswith(".L"):  # local labels the rewriter kept
                fn = m.group(2)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if m:
            out.append((int(m.group(1), 16), fn, m.group(2).strip()))
    return out


def kind(text, prev):
    """The sandboxing class of one instruction (None for the program's own)."""
    if text.startswith(("nop", "xchg   %ax,%ax", "data16", "cs nop")):
        return "no-op"
    if re.match(r"and\s+\$0xffffffe0,%\w+$", text):
        return "mask"
    if re.match(r"add\s+-?0x[0-9a-f]+\(%rip\),%r\w+", text) and "<__sfi_base>" in text:
        return "base add"
    if text.startswith("or     $0xf0000000,%esp"):
        return "rsp fix-up"
    if text in ("pop    %r11", "pop    %rcx") or (text in ("push   %r11", "push   %rcx") and prev and "base" in prev):
        return "return"
    return None


def main():
    args = sys.argv[1:]
    top = 25
    annotate = None
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    if "--annotate" in args:
        i = args.index("--annotate")
        annotate = args[i + 1]
        del args[i:i + 2]
    name = args[0]
    flavor = args[1] if len(args) > 1 else "stores"
    d = bench.fetched()
    assert d, "run make sfi-bench once to fetch the sources"
    prog = [p for p in bench.programs(d) if p[0] == name][0]
    corpus = bench.make_corpus(d)
    argv = [corpus if a == "corpus" else a for a in prog[4]]
    outdir = os.path.join(sfibuild.BUILD, "bench")
    with tempfile.TemporaryDirectory(prefix="sfi-prof-") as tmp:
        elf = os.path.join(tmp, "module.elf")
        mod = os.path.join(tmp, "m.sfi")
        os.environ["SFI_LD_ELF"] = elf
        native = sfibuild.build(name, prog[2], "native", prog[3], outdir=outdir)
        sfibuild.build(name, prog[2], flavor, prog[3], outdir=outdir)
        # Relink from the same objects, keeping the ELF.
        tag = [t for t in os.listdir(os.path.join(outdir, "obj", name)) if t.startswith(flavor + "-")][0]
        objs = sorted(os.path.join(outdir, "obj", name, tag, o) for o in os.listdir(os.path.join(outdir, "obj", name, tag)))
        sfibuild.sh(sfibuild.compiler(flavor) + ["-o", mod] + objs + sfibuild.libc_objs(flavor))
        del os.environ["SFI_LD_ELF"]
        nat = collections.Counter()
        ntotal = 0
        for ip, sym in samples([native] + argv, os.path.join(tmp, "n.data")):
            ntotal += 1
            if name in sym.rsplit("(", 1)[-1]:
                nat[sym.split()[0] if sym.split() else "?"] += 1
        insns = disassembly(elf)
        addrs = [a for a, _, _ in insns]
        end = addrs[-1] + 16 if addrs else CODE_BASE
        per_insn = collections.Counter()
        stotal = 0
        for ip, sym in samples([os.path.join(bench.BIN, "sfi-run"), mod] + argv, os.path.join(tmp, "s.data")):
            stotal += 1
            off = ip & 0xffffffff
            if not sym.rstrip().endswith((".so.6)", "sfi-run)", "kallsyms])")) and CODE_BASE <= off < end:  # anonymous: the domain
                per_insn[off] += 1
    fn_s, fn_k = collections.Counter(), collections.defaultdict(collections.Counter)
    classes = collections.Counter()
    for off, n in per_insn.items():
        i = bisect.bisect_right(addrs, off) - 1
        a, fn, text = insns[i]
        k = kind(text, insns[i - 1][2] if i else None)
        fn_s[fn] += n
        if k:
            fn_k[fn][k] += n
            classes[k] += n
    dom = sum(per_insn.values())
    print("%s: native %d samples (%d in the program), %s %d samples (%d in the domain)" % (name, ntotal, sum(nat.values()), flavor, stotal, dom))
    print("sandboxing instructions: %.1f%% of the domain's samples (%s)" % (
        100.0 * sum(classes.values()) / max(dom, 1), ", ".join("%s %.1f%%" % (k, 100.0 * v / max(dom, 1)) for k, v in classes.most_common())))
    print("%-28s %9s %9s %7s  %s" % ("function", "native%", "sandbox%", "time", "sandboxing share of the function"))
    for fn, n in fn_s.most_common(top):
        nn = nat.get(fn, 0)
        share = sum(fn_k[fn].values())
        print("%-28s %8.1f%% %8.1f%% %7s  %.0f%% (%s)" % (
            fn[:28], 100.0 * nn / max(ntotal, 1), 100.0 * n / max(stotal, 1), "%.2f" % (n / nn) if nn else "-",
            100.0 * share / n, ", ".join("%s %d" % kv for kv in fn_k[fn].most_common(3))))
    if annotate:
        for a, fn, text in insns:
            if fn == annotate:
                print("%6d  %x  %s" % (per_insn.get(a, 0), a, text))


if __name__ == "__main__":
    main()
