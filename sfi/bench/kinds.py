#!/usr/bin/env python3
"""Where a sandboxed program's extra instructions go, counted (not part of
make sfi-bench; for finding overhead).

  kinds.py MODULE [ARGS...]

Runs `sfi-run MODULE ARGS` under QEMU user mode with the project's
instruction-counting plugin in its profile mode (tools/icount-plugin:
every instruction of the marked domain call with its count and first
bytes) and prints how many executed instructions are of each kind, told
by their bytes: no-ops (and how many of them pad before a call), the four
extra instructions of the return sequence, the masks and base adds of
indirect branches, the %rsp fix-up, calls, and everything else.  Compare
the total with the native program's count (bench.py --icount-only)."""
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import icount  # noqa: E402

BIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "target", "release")


def is_nop(b):
    h = b.hex()
    return bool(re.match(r"^(66)*90", h) or re.match(r"^(66)*(2e)?0f1f", h))


def kind(b):
    h = b.hex()
    if is_nop(b):
        return "no-op"
    # Returns go through %rcx in compiled code (59 = pop %rcx, 51 = push %rcx;
    # its `and $-32, %ecx` counts with the indirect branches' masks) and
    # through %r11 in hand-written assembly.
    for prefix, name in (("415b", "return: pop %r11"), ("4183e3e0", "return: and $-32, %r11d"), ("4153", "return: push %r11"),
                         ("59", "return: pop %rcx"), ("51", "return: push %rcx"),
                         ("c3", "ret"), ("81cc000000f0", "%rsp fix-up: or"), ("e8", "call")):
        if h.startswith(prefix):
            return name
    if re.match(r"^4[0-9a-f]03[0-9a-f][5d]", h) and len(b) >= 7:
        return "base add (returns, indirect branches, fix-ups)"
    if re.match(r"^(41)?83e[0-7]e0", h):
        return "indirect branch: and $-32"
    return "other"


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "p")
        subprocess.run(["qemu-x86_64", "-cpu", "max", "-plugin", "file=%s,out=%s,profile=%s" % (icount.build(), os.path.join(tmp, "log"), prof),
                        os.path.join(BIN, "sfi-run")] + sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
        rows = {}
        for line in open(prof + ".1"):
            a, size, b, n = line.split()
            rows[int(a, 16)] = (int(size), int(b, 16).to_bytes(8, "little")[:min(int(size), 8)], int(n))
    counts = collections.Counter()
    before_call = 0
    for a, (size, b, n) in rows.items():
        counts[kind(b)] += n
        if is_nop(b):
            x = a + size
            while x in rows and is_nop(rows[x][1]):
                x += rows[x][0]
            if x in rows and rows[x][1][:1] == b"\xe8":
                before_call += n
    total = sum(counts.values())
    print("%-48s %14d" % ("instructions", total))
    for k, v in counts.most_common():
        print("%-48s %14d %6.2f%%" % (k, v, 100.0 * v / total))
    print("%-48s %14d" % ("  of the no-ops, padding before a call", before_call))


if __name__ == "__main__":
    main()
