#!/usr/bin/env python3
"""Quick A/B experiments for the SFI tool chain (not part of make sfi-bench).

  quick.py build OUTDIR [prog,...]        build native/stores/full of the programs into OUTDIR
  quick.py run ROUNDS prog[,..] LABEL=DIR[@SFI-RUN]...   paired rounds: native (from the first DIR) and
                                          stores/full of every DIR, run together on one CPU
                                          (SFI_SEQUENTIAL=1: one after the other, shuffled); prints the median
                                          (min-max) of each flavour's ratio to native, per program

Uses bench.py's program list and timing (child CPU time minus the module load)."""
import os
import random
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402
import sfibuild  # noqa: E402

TOGETHER = os.environ.get("SFI_SEQUENTIAL") != "1"  # all commands of a round at once on one CPU (bench.timed_together)


def progs(sel):
    d = bench.fetched()
    assert d, "run make sfi-bench once to fetch the sources"
    ps = bench.programs(d)
    return [p for p in ps if not sel or p[0] in sel], bench.make_corpus(d)


def build(outdir, sel):
    sfibuild.JOBS = 1
    for name, kind, srcs, cflags, arg in progs(sel)[0]:
        with ThreadPoolExecutor(max_workers=2) as ex:
            list(ex.map(lambda f: sfibuild.build(name, srcs, f, cflags, outdir=outdir), sfibuild.FLAVORS))
        print("built", name, flush=True)


def run(rounds, sel, dirs):
    ps, corpus = progs(sel)
    for name, kind, srcs, cflags, arg in ps:
        args = [corpus if a == "corpus" else a for a in arg]
        cmds = {"native": [os.path.join(dirs[0][1].partition("@")[0], name)] + args}
        for label, d in dirs:
            d, _, runner = d.partition("@")  # DIR@SFI-RUN: another runtime (an older verifier)
            for f in ("stores", "full"):
                cmds["%s.%s" % (label, f)] = [runner or os.path.join(bench.BIN, "sfi-run"), os.path.join(d, "%s.%s.sfi" % (name, f))] + args
        times = {k: [] for k in cmds}
        outs = {}
        rnd = random.Random(1)
        for _ in range(rounds):
            if TOGETHER:
                for k, (dt, wall, r, load) in bench.timed_together(cmds).items():
                    times[k].append(dt - load)
                    outs.setdefault(k, r)
                continue
            ks = list(cmds)
            rnd.shuffle(ks)
            for k in ks:
                dt, wall, r, load = bench.timed(cmds[k])
                times[k].append(dt - load)
                outs.setdefault(k, r)
        bad = [k for k in cmds if outs[k] != outs["native"]]
        line = "%-8s native %.3fs" % (name, statistics.median(times["native"]))
        for k in cmds:
            if k == "native":
                continue
            rs = [(t / n - 1) * 100 for t, n in zip(times[k], times["native"])]
            best = (min(times[k]) / min(times["native"]) - 1) * 100
            line += "  %s %+.1f%% (%+.0f..%+.0f; best %+.1f%%)" % (k, statistics.median(rs), min(rs), max(rs), best)
        print(line + ("  OUTPUT MISMATCH %s" % bad if bad else ""), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "build":
        build(sys.argv[2], set(sys.argv[3].split(",")) if len(sys.argv) > 3 else None)
    else:
        run(int(sys.argv[2]), set(sys.argv[3].split(",")) if sys.argv[3] != "all" else None,
            [tuple(a.split("=", 1)) for a in sys.argv[4:]])
