#!/usr/bin/env python3
"""The workhorse's system-call fuzzer at length (docs/workhorse.md, "The
system-call fuzzer"): one boot, `linux /tests/sysfuzz SEED CALLS` at the
keep> prompt, then an honest `linux` command and the kernel's log checked.

    test_sysfuzz.py [--seed N] [--calls N]

The seed defaults to SYSFUZZ_SEED or the time, and is printed; `make
sysfuzz-long` runs 10^6 calls.  Fails on a failed honest check, a run that
does not finish, the workhorse ending, or a kernel fault."""
import argparse
import os
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_boot import Guest, PROMPT, run_line  # noqa: E402


def fuzz_ok(out, calls):
    """Whether a sysfuzz run's output says it made its calls and passed
    every honest check (shared with test_linux.py)."""
    m = re.search(r"sysfuzz: (\d+) calls made by (\d+) children", out or "")
    return (m is not None and int(m.group(1)) >= calls and "FAIL" not in out
            and re.search(r"sysfuzz: \d+ honest checks passed", out) is not None
            and "workhorse ended" not in out and "linux: exit status" not in out)


def kernel_faults(text):
    """Lines where the kernel reports a fault of its own or a panic, or
    init the workhorse's end."""
    return [l for l in text.splitlines() if re.search(r"keep: (KERNEL FAULT|PANIC)|server workhorse", l)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=int(os.environ.get("SYSFUZZ_SEED") or time.time()))
    ap.add_argument("--calls", type=int, default=1000000)
    ap.add_argument("--verbose", action="store_true", help="a line for each batch and each slow child")
    a = ap.parse_args()
    a.extra = " 16 v" if a.verbose else ""
    a.extra = " 16 t" if os.environ.get("SYSFUZZ_TRACE") else a.extra
    print(f"test_sysfuzz: seed {a.seed}, {a.calls} calls", flush=True)
    g = Guest()
    ok = True
    try:
        if not g.expect(PROMPT, 60):
            print("test_sysfuzz: FAIL no prompt")
            return 1
        t0 = time.monotonic()
        # About 7 ms a call under TCG with the forks, the slow children's
        # second and the honest checks; three times that as the margin.
        out = run_line(g, f"linux /tests/sysfuzz {a.seed} {a.calls}{a.extra}", timeout=120 + a.calls * 0.02)
        took = time.monotonic() - t0
        print((out or "(no prompt after it)").rstrip())
        if not fuzz_ok(out, a.calls):
            print("test_sysfuzz: FAIL the run did not end well")
            ok = False
        else:
            m = re.search(r"sysfuzz: (\d+) calls made", out)
            print(f"test_sysfuzz: {int(m.group(1))} calls in {took:.0f} s ({int(m.group(1)) / took:.0f} a second)")
        after = run_line(g, "linux echo still serving") or ""
        if after.strip() != "still serving":
            print(f"test_sysfuzz: FAIL the next linux command: {after!r}")
            ok = False
        faults = kernel_faults(g.text())
        if faults:
            print("test_sysfuzz: FAIL the kernel reported:\n  " + "\n  ".join(faults[:20]))
            ok = False
    finally:
        g.kill()
        log = Path(__file__).resolve().parent.parent / "build" / "sysfuzz.log"
        log.write_bytes(bytes(g.out))
        print(f"test_sysfuzz: the console's output is in {log}")
    print(f"test_sysfuzz: {'passed' if ok else 'FAILED'} (seed {a.seed})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
