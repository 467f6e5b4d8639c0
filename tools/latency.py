#!/usr/bin/env python3
"""The kernel's latency table (docs/realtime.md, "Kernel latency"): boots
the latency build of the kernel (make kernel-latency) under -icount
shift=0,sleep=on (a TSC tick an instruction; idle time follows the host's
clock, as the suite's real-time-clock test needs) and runs the in-guest suite on it,
every method's tests and the capability fuzzer's 100,000 random
invocations (FUZZ0001) included; at the end KERNEL.DEBUG_EXIT prints,
for every kind of kernel entry, the longest time from the entry to the
return to user mode (the kernel keeps interrupts off all that time) and
how often it came.  Writes build/bench/latency.json (the benchmark
`kernel.latency.max`, the longest of them, and which entry;
`kernel.latency.max.without_self_checks`, the longest but the root task's
self-checks CHECK_PAGING and CHECK_INVARIANTS; one figure per kind,
`kernel.latency.KIND`) and build/bench/latency.md (the table, longest first), which
`make bench` takes into its results.  Every method of abi/keep.toml that
the run never entered is listed as not reached."""
import argparse
import json
import re
import sys
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402

OUT = qemu.ROOT / "build" / "bench"
KINDS = {0: "system call (IPC, fast path)", 1: "interrupt or exception from user mode", 2: "interrupt in the idle loop"}
METHODS, MAX_METHOD = 3, 32


def names():
    abi = tomllib.loads((qemu.ROOT / "abi" / "keep.toml").read_text())
    types = {t["value"]: t["name"] for t in abi["type"]}
    methods = {(next(v for v, n in types.items() if n == m["object"]), m["value"]): f"{m['object']}.{m['name']}"
               for m in abi["method"]}
    return types, methods


def parse(out):
    rows = {}
    for k, t, m, longest, count in re.findall(r"latency: (\d+) (\S+) (\S+) (\d+) (\d+)", out):
        rows[int(k)] = (t, m, int(longest), int(count))
    return rows


SELF_CHECKS = {"KERNEL.CHECK_PAGING", "KERNEL.CHECK_INVARIANTS"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernel", default=str(qemu.BUILD / "kernel-latency" / "kernel.bin"))
    ap.add_argument("--timeout", type=float, default=1800)
    args = ap.parse_args()
    qemu.check_built()
    cmd = qemu.base_cmd("tcg", "autotest", icount="shift=0,sleep=on", kernel=Path(args.kernel)) + ["-serial", "stdio"]
    print("latency: " + " ".join(cmd), flush=True)
    rc, out, timed_out, secs = qemu.run_captured(cmd, args.timeout, qemu.BUILD / "latency.log", None)
    if timed_out or "latency: end" not in out:
        sys.exit(f"latency: FAIL: no table (QEMU exit status {rc}{', timed out' if timed_out else ''})")
    m = re.findall(r"ktest: (\d+) passed, (\d+) failed", out)
    if not m or int(m[-1][1]):
        sys.exit(f"latency: FAIL: the in-guest suite did not pass on the latency build: {m[-1] if m else 'no result'}")
    types, methods = names()
    table = []
    for k, (t, meth, longest, count) in parse(out).items():
        if k < METHODS:
            name = KINDS.get(k, f"kind {k}")
        else:
            key = (int(t), int(meth))
            name = methods.get(key, f"{types.get(key[0], key[0])} method {key[1]} (no such method)")
        table.append((name, longest, count))
    # Methods that do not exist all fail the same way: one row.
    bad = [r for r in table if r[0].endswith("(no such method)")]
    table = [r for r in table if not r[0].endswith("(no such method)")]
    if bad:
        table.append(("a method the object does not have", max(r[1] for r in bad), sum(r[2] for r in bad)))
    table.sort(key=lambda r: -r[1])
    reached = {n for n, _, _ in table}
    unreached = sorted(n for n in methods.values() if n not in reached)
    worst = table[0]
    fig = lambda v, **kw: dict({"median": v, "min": v, "max": v, "unit": "instructions", "runs": 1}, **kw)
    results = {"kernel.latency.max": fig(worst[1], what=worst[0])}
    # The root task's self-checks walk every table and object by design and
    # are outside the bound (docs/realtime.md, "Kernel latency"): the
    # longest entry without them, beside the longest of all.
    bounded = [r for r in table if r[0] not in SELF_CHECKS]
    if bounded:
        results["kernel.latency.max.without_self_checks"] = fig(bounded[0][1], what=bounded[0][0])
    for n, longest, count in table:
        results["kernel.latency." + n.split(" (")[0].replace(" ", "_")] = fig(longest, entries=count)
    OUT.mkdir(parents=True, exist_ok=True)
    # A fragment bench.py merges into results.json: name -> figure.
    (OUT / "latency.json").write_text(json.dumps(results, indent=1) + "\n")
    lines = ["| kernel entry | longest (instructions) | entries |", "|---|---:|---:|"]
    lines += [f"| `{n}` | {longest:,} | {count:,} |" if "." in n and " " not in n else f"| {n} | {longest:,} | {count:,} |"
              for n, longest, count in table]
    if unreached:
        lines += ["", "Methods the run never entered: " + ", ".join(f"`{n}`" for n in unreached) + "."]
    (OUT / "latency.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    if bounded:
        print(f"latency: without the self-checks: {bounded[0][1]:,} instructions ({bounded[0][0]})")
    print(f"latency: kernel.latency.max = {worst[1]:,} instructions ({worst[0]}); "
          f"{len(table)} kinds of entry, {len(unreached)} methods not reached; {secs:.0f} s")


if __name__ == "__main__":
    main()
