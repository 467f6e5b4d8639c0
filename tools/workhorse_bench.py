#!/usr/bin/env python3
"""The workhorse's figures for `make bench` (docs/performance.md,
"The workhorse"): boots Keep under `-icount shift=0,sleep=on` with the
instruction-counting plugin (tools/icount.py), and at the shell runs through
the workhorse

  * user/servers/workhorse/tests/sysbench.c: wh.syscall.getppid, wh.pipe.roundtrip,
    wh.proc.fork_exec_wait, timed with rdtsc (CPU-bound: nothing waits for
    a device, and the TSC counts instructions while the guest computes);
  * user/servers/workhorse/tests/idlewake.c: wh.net.idle_wakeups, the server
    loop's wake-ups per second for the network with two idle sockets open;
  * user/servers/workhorse/tests/busybench.sh: the busybox workloads as
    busybox.NAME, each run by benchrun between the plugin's markers;
  * user/servers/workhorse/tests/pybench.sh: the Python workloads
    (python3.11 of the root file system) as wh.python.NAME, the same way.

Writes build/bench/workhorse.json, which tools/bench.py merges.  The Linux
guest runs the same busybench.sh and pybench.sh (tools/linuxbench.py)."""
import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import icount  # noqa: E402
from bench import LINE_RE  # noqa: E402
from test_boot import Guest, PROMPT  # noqa: E402

OUT = qemu.ROOT / "build" / "bench"
# Runs of each busybox workload (the median is reported).
BUSYBOX_RUNS = 3
# Runs of each Python workload (the Linux guest's PY_RUNS, linuxio.c).
PYTHON_RUNS = 5


def log(msg):
    print(f"workhorse_bench.py: {msg}", flush=True)


def timer_entry():
    nm = subprocess.run(["nm", str(qemu.BUILD / "kernel.elf")], capture_output=True, text=True).stdout.splitlines()
    stubs = icount.symbol(nm, "vector_stubs")
    return [stubs + 0x20 * 16] if stubs is not None else []


class IcountGuest(Guest):
    def __init__(self):
        orig = qemu.base_cmd
        qemu.base_cmd = lambda accel, append="", **kw: orig(accel, append + " icount", **{**kw, "icount": icount.ICOUNT_IO})
        try:
            super().__init__(extra=icount.args(timer_entry()))
        finally:
            qemu.base_cmd = orig


def run(g, line, done, timeout):
    """Types `line` at the shell and waits for `done` and the next prompt;
    returns what came in between, or None."""
    m = g.send(line)
    ok = g.expect(done, timeout, m)
    g.expect(PROMPT, 60, m + len(line))
    out = g.out[m:].decode(errors="replace").replace("\r", "")
    return out if ok else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=BUSYBOX_RUNS, help="runs of each busybox workload")
    ap.add_argument("--python-runs", type=int, default=PYTHON_RUNS, help="runs of each Python workload")
    ap.add_argument("--sysbench-only", action="store_true",
                    help="only sysbench's figures, not the busybox and Python workloads")
    ap.add_argument("--python-only", action="store_true", help="only the Python workloads")
    a = ap.parse_args()
    qemu.check_built()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "workhorse.json").unlink(missing_ok=True)
    start = time.monotonic()
    g = IcountGuest()
    results = {}
    try:
        if not g.expect(PROMPT, 120):
            sys.exit("workhorse_bench.py: FAIL: no prompt")
        run(g, "linux echo warm", b"warm\n", 120)
        out = None if a.python_only else run(g, "linux /tests/sysbench", b"wh.proc.fork_exec_wait median", 900)
        for line in (out or "").splitlines():
            m = LINE_RE.search(line)
            if m:
                name, med, lo, hi, unit, runs = m.groups()
                results[name] = {"median": int(med), "min": int(lo), "max": int(hi), "unit": unit, "runs": int(runs)}
                log(f"{name:<28} median {med:>9} {unit} (min {lo}, max {hi}, {time.monotonic() - start:5.1f} s)")
        if out is None and not a.python_only:
            log("sysbench did not finish; see build/bench/log-workhorse.txt")
        idle = None if a.python_only else run(g, "linux /tests/idlewake", b"wh.net.idle_wakeups", 300)
        for line in (idle or "").splitlines():
            m = LINE_RE.search(line)
            if m:
                name, med, lo, hi, unit, runs = m.groups()
                results[name] = {"median": int(med), "min": int(lo), "max": int(hi), "unit": unit, "runs": int(runs)}
                log(f"{name:<28} median {med:>9} {unit}")
            elif line.startswith("idlewake:"):
                log(line)
        if idle is None and not a.python_only:
            log("idlewake did not finish; see build/bench/log-workhorse.txt")
        # The workloads counted by the plugin, in this order, each giving a
        # `bench-io` line per plugin region.
        parts = [] if a.sysbench_only else [
            ("busybench.sh", f"linux /bin/busybox sh /tests/busybench.sh /tmp/bb {a.runs}", b"busybench: done"),
            ("pybench.sh", f"linux /bin/busybox sh /tests/pybench.sh /tmp/py {a.python_runs} wh.", b"pybench: done"),
        ][1 if a.python_only else 0:]
        lines, finished = [], True
        for script, line, done in parts:
            out = run(g, line, done, 1500)
            if out is None:
                log(f"{script} did not finish; see build/bench/log-workhorse.txt")
                finished = False
                break
            part = icount.Regions("workhorse", log)
            for l in out.splitlines():
                part.feed(l)
            lines += part.lines
        # The plugin's lines come on QEMU's stderr, which Guest merges in order.
        regions = icount.Regions("workhorse", log)
        for l in g.out.decode(errors="replace").splitlines():
            if "icount-plugin: region" in l:
                regions.feed(l)
        # An unfinished part's regions come after the finished parts' ones.
        if not finished:
            regions.regions = regions.regions[:len(lines)]
        regions.lines = lines
        if lines:
            results.update(icount.results(regions, icount.unit_of))
    finally:
        g.p.kill()
        (OUT / "log-workhorse.txt").write_bytes(bytes(g.out))
    for name in sorted(results):
        if name.startswith(("busybox.", "wh.python.")):
            v = results[name]
            log(f"{name:<28} median {v['median']:>11} {v['unit']} (min {v['min']}, max {v['max']})")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "workhorse.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    log(f"{len(results)} results in build/bench/workhorse.json ({time.monotonic() - start:.0f} s)")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
