#!/usr/bin/env python3
"""Trusted files' figures for `make bench` (docs/trusted-core.md, "Trusted
files"): one boot of Keep under `-icount shift=0,sleep=on` with the
instruction-counting plugin (tools/icount.py), in which

  * `run tfiles` (its benchmarks, user/programs/tfiles) reads and writes a
    trusted file of 1 MiB through the workhorse in 4 KiB and 64 KiB
    requests: vault.read.4k, vault.read.64k, vault.write.4k,
    vault.write.64k (instructions per MiB; each write a commit: the
    blocks, the table, the workhorse's flush and the vault's PUT);
  * the workhorse's own programs do the same on /data
    (user/servers/workhorse/tests/databench.c): wh.data.read.4k, .64k,
    wh.data.write.4k, .64k (each write followed by fsync).

Every instruction between the markers counts, in every process and the
kernel (the tfiles program, the workhorse, the vault, the block server,
the TPM's driver); swtpm's and the disk's work on the host do not.
Writes build/bench/tfiles.json, which tools/bench.py merges.  With
--profile it also has the plugin write each region's instructions
(build/iprof/tfiles.N) and prints where each benchmark's instructions go,
by program and function (tools/iprof.py's table)."""
import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import icount  # noqa: E402
from workhorse_bench import IcountGuest, run, timer_entry  # noqa: E402
from test_boot import PROMPT  # noqa: E402

OUT = qemu.ROOT / "build" / "bench"
RUNS = 5
PROFILE = qemu.ROOT / "build" / "iprof" / "tfiles"
# The programs whose instructions a trusted file's request runs.
PROGRAMS = ["tfiles", "workhorse", "vault", "blk", "tpm", "root", "init", "spacebank", "dataspace", "console"]


class ProfileGuest(IcountGuest):
    """IcountGuest with the plugin's profile written to PROFILE.N."""

    def __init__(self):
        orig = icount.args
        icount.args = lambda irqs, profile=None: orig(irqs, PROFILE)
        try:
            super().__init__()
        finally:
            icount.args = orig


def log(msg):
    print(f"tfiles_bench.py: {msg}", flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=RUNS, help="runs of each benchmark")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds for tfiles' benchmarks")
    ap.add_argument("--profile", action="store_true", help="print each benchmark's instructions by program and function")
    ap.add_argument("--top", type=int, default=30, help="--profile: the functions listed")
    a = ap.parse_args()
    qemu.check_built()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "tfiles.json").unlink(missing_ok=True)
    start = time.monotonic()
    if a.profile:
        PROFILE.parent.mkdir(parents=True, exist_ok=True)
        for old in PROFILE.parent.glob(PROFILE.name + ".*"):
            old.unlink()
    g = ProfileGuest() if a.profile else IcountGuest()
    results = {}
    try:
        if not g.expect(PROMPT, 120):
            sys.exit("tfiles_bench.py: FAIL: no prompt")
        log("at the prompt"); run(g, "linux echo warm", b"warm\n", 120)
        wh = run(g, f"linux /tests/databench /data/databench {a.runs}", b"databench: done", 600)
        log("databench: " + ("done" if wh else "did not finish"))
        if wh is None:
            log("databench did not finish; see build/bench/log-tfiles.txt")
        # tfiles' arg0: request 5 (the benchmarks), the runs in bits 16-31.
        tf = run(g, f"run tfiles {5 | a.runs << 16}", b"tfiles: bench: done", a.timeout)
        if tf is None:
            log("tfiles' benchmarks did not finish; see build/bench/log-tfiles.txt")
        regions = icount.Regions("tfiles", log)
        # The plugin's lines come on QEMU's stderr, which Guest merges in
        # order with the guest's bench-io lines.
        for line in g.out.decode(errors="replace").splitlines():
            regions.feed(line)
        results.update(icount.results(regions, icount.unit_of))
        if a.profile:
            import iprof
            iprof.print_profiles(regions, PROFILE, PROGRAMS, argparse.Namespace(
                elf=str(qemu.BUILD / "kernel.elf"), top=a.top, lines=0, annotate=[]))
    finally:
        g.p.kill()
        (OUT / "log-tfiles.txt").write_bytes(bytes(g.out))
    for name in sorted(results):
        v = results[name]
        log(f"{name:<28} median {v['median']:>11} {v['unit']} (min {v['min']}, max {v['max']}, runs {v['runs']})")
    (OUT / "tfiles.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    log(f"{len(results)} results in build/bench/tfiles.json ({time.monotonic() - start:.0f} s)")
    return 0 if results else 1


if __name__ == "__main__":
    sys.exit(main())
