#!/usr/bin/env python3
"""All SFI tests: verifier unit tests, hand-written escape modules, the generated
adversarial corpus (verdicts, then the accepted modules run against markers), tool-chain tests, runtime
tests, sandboxed-versus-native output of the test programs and of the
benchmark's Debian programs (fetched once), and a bounded fuzz run of the verifier.  One line per test, then `sfi-test: N passed, N failed`."""
import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cc"))
import sfibuild  # noqa: E402

SFI = sfibuild.SFI
BIN = os.path.join(SFI, "target", "release")
passed = failed = 0


def result(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, detail.strip()[:2000]), flush=True)


def run(cmd, timeout=120, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def verifier_unit_tests():
    r = run(["cargo", "test", "--release", "-j", "2", "-q", "-p", "sfi-verify", "--lib", "--", "--test-threads=2"], cwd=SFI, timeout=600)
    tests = re.findall(r"^test (\S+) \.\.\. (ok|FAILED)$", r.stdout, re.M)
    if not tests:
        # -q prints dots only; ask for the list of test names and statuses explicitly.
        r = run(["cargo", "test", "--release", "-j", "2", "-p", "sfi-verify", "--lib", "--", "--test-threads=2"], cwd=SFI, timeout=600)
        tests = re.findall(r"^test (\S+) \.\.\. (ok|FAILED)$", r.stdout, re.M)
    for name, status in tests:
        result("verifier/" + name.replace("tests::", ""), status == "ok", r.stdout[-1500:])
    if not tests:
        result("verifier/unit-tests", False, r.stdout + r.stderr)


def escape_modules():
    out = os.path.join(sfibuild.BUILD, "escape")
    os.makedirs(out, exist_ok=True)
    for src in sorted(glob.glob(os.path.join(SFI, "tests", "escape", "*.s"))):
        name = os.path.splitext(os.path.basename(src))[0]
        text = open(src).read()
        expect = re.search(r"^# expect: (.*)$", text, re.M).group(1).strip()
        flags = re.search(r"^# flags: (.*)$", text, re.M)
        mod = os.path.join(out, name + ".sfi")
        b = run([os.path.join(SFI, "cc", "sfi-ld"), "--raw"] + (flags.group(1).split() if flags else []) + ["-o", mod, src])
        if b.returncode:
            result("escape/" + name, False, "build failed: " + b.stderr)
            continue
        v = run([os.path.join(BIN, "sfi-verify"), mod])
        if expect == "accepted":
            ok = v.returncode == 0 and ": accepted" in v.stdout
        else:
            ok = v.returncode == 1 and (": " + expect) in v.stdout
        result("escape/" + name, ok, "expected '%s', got exit %d: %s" % (expect, v.returncode, v.stdout))


def corpus():
    """The generated adversarial corpus (tests/corpus/gen.py): every module
    must get exactly its expected verdict (the reject reason of the rule it
    breaks, or accepted); one line per verdict class, a FAIL line per
    misclassified module.  Then every accepted module runs in the host
    runtime with the embedder's markers in every argument register."""
    out = os.path.join(sfibuild.BUILD, "corpus")
    if os.path.isdir(out):
        for f in glob.glob(os.path.join(out, "*.sfi")):
            os.unlink(f)
    g = run([sys.executable, os.path.join(SFI, "tests", "corpus", "gen.py"), out])
    if g.returncode:
        result("corpus/generate", False, g.stdout + g.stderr)
        return
    print("    " + g.stdout.strip())
    rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(out, "manifest.tsv"))]
    paths = [os.path.join(out, r[0] + ".sfi") for r in rows]
    v = run([os.path.join(BIN, "sfi-verify")] + paths)
    got = {}
    for line in v.stdout.splitlines():
        path, _, rest = line.partition(": ")
        got[path] = "accepted" if rest.startswith("accepted") else re.sub(r"^code\+0x[0-9a-f]+: ", "", rest[len("rejected: "):])
    classes = {}
    for (name, expect, rule, first), path in zip(rows, paths):
        verdict = got.get(path, "(no verdict)")
        ok = verdict == expect or (expect != "accepted" and verdict.startswith(expect + ":"))
        n, bad = classes.get(expect, (0, 0))
        classes[expect] = (n + 1, bad + (not ok))
        if not ok:
            result("corpus/%s" % name, False, "rule %s, `%s`: expected '%s', got '%s'" % (rule, first, expect, verdict))
    for expect, (n, bad) in sorted(classes.items()):
        if not bad:
            result("corpus/%s (%d modules)" % (expect, n), True)
    accepted = [p for (name, expect, rule, first), p in zip(rows, paths) if expect == "accepted"]
    r = run([os.path.join(BIN, "sfi-corpus-run")] + accepted, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("FAIL"):
            result(line.split()[1].rstrip(":"), False, line)
    result("corpus-run/markers-intact (%d accepted modules run)" % len(accepted),
           r.returncode == 0 and ("%d modules run, %d with the marker intact" % (len(accepted), len(accepted))) in r.stdout,
           r.stdout[-1500:] + r.stderr[-1500:])


def cpu_diff():
    """The decoder against this CPU (sfi-cpu-diff): prefixed branches behave as
    iced predicts for the CPU's vendor and are refused where vendors differ;
    implicit addresses are where iced says, or the instruction is refused;
    accesses that need not fault never check a %rsp step."""
    r = run([os.path.join(BIN, "sfi-cpu-diff")], timeout=120)
    for l in r.stdout.splitlines():
        if l.startswith(("PASS ", "FAIL ")):
            result(l.split()[1].rstrip(":"), l.startswith("PASS"), l)
        elif l.startswith("cpu-diff: CPU"):
            print("    " + l)
    if r.returncode != 0 and "FAIL" not in r.stdout:
        result("cpu-diff/exit", False, "exit %d\n%s%s" % (r.returncode, r.stdout[-1000:], r.stderr[-1000:]))


def toolchain():
    """sfi-cc on real code: VEX instructions, refused instructions at build
    time, undefined weak symbols (tests/toolchain/run.py)."""
    r = run([sys.executable, os.path.join(SFI, "tests", "toolchain", "run.py")], timeout=900)
    lines = [l for l in r.stdout.splitlines() if l.startswith(("PASS ", "FAIL "))]
    for l in lines:
        result("toolchain/" + l.split()[1].rstrip(":"), l.startswith("PASS"), l)
    if r.returncode != 0 and not any(l.startswith("FAIL") for l in lines):
        result("toolchain/exit", False, "exit %d\n%s%s" % (r.returncode, r.stdout[-1000:], r.stderr[-2000:]))


def runtime_tests():
    src = os.path.join(SFI, "tests", "rt", "rtmod.c")
    mods = [sfibuild.build("rtmod", [src], f, outdir=os.path.join(sfibuild.BUILD, "rt"), libc=False) for f in ("stores", "full")]
    r = run([os.path.join(BIN, "sfi-selftest")] + mods, timeout=120)
    lines = [l for l in r.stdout.splitlines() if l.startswith(("PASS ", "FAIL "))]
    for l in lines:
        name = l.split()[1].rstrip(":")
        result(name, l.startswith("PASS"), l)
    if r.returncode != 0 and not any(l.startswith("FAIL") for l in lines):
        result("runtime/selftest-exit", False, "exit %d\n%s%s" % (r.returncode, r.stdout[-1000:], r.stderr[-2000:]))
    # The command-line embedder reports a fault and a timeout and keeps its own exit path.
    mod = mods[0]
    v = run([os.path.join(BIN, "sfi-verify"), mod])
    result("cli/sfi-verify-accepts", v.returncode == 0 and "accepted" in v.stdout, v.stdout + v.stderr)


def program_equality():
    for src in sorted(glob.glob(os.path.join(SFI, "tests", "progs", "*.c"))):
        name = os.path.splitext(os.path.basename(src))[0]
        try:
            exe = {f: sfibuild.build(name, [src], f) for f in sfibuild.FLAVORS}
        except sfibuild.BuildError as e:
            result("programs/%s/build" % name, False, str(e))
            continue
        native = run([exe["native"]])
        for f in ("stores", "full"):
            sb = run([os.path.join(BIN, "sfi-run"), "--timeout", "60", exe[f]])
            ok = sb.stdout == native.stdout and sb.returncode == native.returncode and native.stdout
            result("programs/%s/%s-equals-native" % (name, f), bool(ok),
                   "native exit %d, sandboxed exit %d\n--- native\n%s\n--- sandboxed\n%s%s" % (
                       native.returncode, sb.returncode, native.stdout[:500], sb.stdout[:500], sb.stderr[:500]))


def instruction_counts():
    """The instruction-count column of `make sfi-bench` (bench.counted,
    count_micro): under QEMU user mode with the plugin, sfi-run's domain call
    is one marked region (the module load left out), the counts repeat
    exactly from run to run, the output is the native one, and sfi-bench
    --count marks its null calls and its verification.  Skipped without
    qemu-x86_64 (tools/install-deps.sh installs it)."""
    import shutil
    sys.path.insert(0, os.path.join(SFI, "bench"))
    import bench
    if not shutil.which(bench.QEMU_USER):
        print("SKIP icount/*: %s not installed" % bench.QEMU_USER, flush=True)
        return
    src = os.path.join(SFI, "tests", "progs", "sha256.c")
    exe = {f: sfibuild.build("sha256", [src], f) for f in ("native", "stores")}
    native = run([exe["native"]])
    cmd = [os.path.join(BIN, "sfi-run"), exe["stores"]]
    regions, total, (st, out) = bench.plugin_counts(cmd)
    again = bench.plugin_counts(cmd)
    result("icount/sfi-run-marks-the-call", len(regions) == 1 and 0 < regions[0] < total,
           "regions %r, %d in all" % (regions, total))
    result("icount/output-equals-native", st == 0 and out.decode() == native.stdout and native.stdout != "", "exit %d" % st)
    result("icount/repeats-exactly", again[0] == regions, "%r then %r" % (regions, again[0]))
    n_native, _ = bench.counted([exe["native"]])
    n_stores, _ = bench.counted(cmd)
    result("icount/sandboxed-counts-more", n_stores > n_native > 0, "native %d, stores %d" % (n_native, n_stores))
    rt = sfibuild.build("rtmod", [os.path.join(SFI, "tests", "rt", "rtmod.c")], "stores", outdir=os.path.join(sfibuild.BUILD, "rt"), libc=False)
    per_call, per_byte = bench.count_micro(rt, [exe["stores"]])
    result("icount/sfi-bench-count", 10 < per_call < 1000 and 1 < per_byte < 10000, "per call %.1f, per byte %.1f" % (per_call, per_byte))


# The Debian programs `--debian short` (make test) builds and compares: the
# libraries that probe the CPU (the cpuid and xgetbv runtime entries) and the
# small call-heavy ones (the call and return sequences); `--debian all`
# (make sfi-test, make test-long) builds every program of the benchmark.
DEBIAN_SHORT = {"zstd", "libdeflate", "libsodium", "cjson", "yaml", "mujs", "xxhash", "kissfft"}
DEBIAN = "all"


def debian_programs():
    """The benchmark's Debian programs with their benchmark workloads: sandboxed
    output (both modes) must equal native output (`--debian short`: those of
    DEBIAN_SHORT only).  Fetches their sources as
    `make sfi-bench` does (`apt-get source` through a private deb-src
    configuration, once, into build/sfi/src) unless SFI_NO_FETCH is set; if
    they cannot be had, this step says so and is skipped."""
    sys.path.insert(0, os.path.join(SFI, "bench"))
    import bench
    bench.log = lambda msg: print("sfi-test: " + msg, flush=True)  # its fetch and build lines, as this suite's
    dirs = bench.fetched()
    if dirs is None and not os.environ.get("SFI_NO_FETCH"):
        print("sfi-test: fetching the Debian programs' sources (apt-get source, once)", flush=True)
        try:
            dirs = bench.fetch(bench.PKGS)
        except (subprocess.CalledProcessError, OSError) as e:
            print("sfi-test: fetching failed: %s" % e, flush=True)
    if dirs is None:
        print("SKIP debian/*: Debian sources not fetched (SFI_NO_FETCH, or no deb-src mirror reachable)", flush=True)
        return
    corpus = bench.make_corpus(dirs)
    progs = bench.programs(dirs)
    if DEBIAN == "short":
        left = sorted(p[0] for p in progs if p[0] not in DEBIAN_SHORT)
        print("sfi-test: debian: %s left to make sfi-debian-test (make test-long)" % ", ".join(left), flush=True)
        progs = [p for p in progs if p[0] in DEBIAN_SHORT]
    # Libraries that probe the CPU with cpuid and xgetbv (the runtime
    # entries); tested, not benchmarked.
    for name, pkg, make in (("zstd", "libzstd", bench.zstd_program), ("libdeflate", "libdeflate", bench.libdeflate_program),
                            ("libsodium", "libsodium", bench.sodium_program)):
        try:
            progs.append(make(bench.fetch([pkg])[pkg]))
        except (subprocess.CalledProcessError, OSError, IndexError) as e:
            print("SKIP debian/%s: %s's source not fetched: %s" % (name, pkg, e), flush=True)
    for name, kind, srcs, cflags, arg in progs:
        t0 = time.monotonic()
        try:
            exe = {f: sfibuild.build(name, srcs, f, cflags, outdir=os.path.join(sfibuild.BUILD, "bench")) for f in sfibuild.FLAVORS}
        except sfibuild.BuildError as e:
            result("debian/%s/build" % name, False, str(e))
            continue
        args = [corpus if a == "corpus" else a for a in arg]
        native = subprocess.run([exe["native"]] + args, capture_output=True, timeout=600)
        for f in ("stores", "full"):
            sb = subprocess.run([os.path.join(BIN, "sfi-run"), exe[f]] + args, capture_output=True, timeout=600)
            ok = native.returncode == 0 and sb.returncode == 0 and sb.stdout == native.stdout
            result("debian/%s/%s-equals-native" % (name, f), ok, "native exit %d, sandboxed exit %d\n%s" % (
                native.returncode, sb.returncode, sb.stderr.decode(errors="replace")[:500]))
        print("sfi-test: debian/%s built and compared in %.0f s" % (name, time.monotonic() - t0), flush=True)


def fuzz(seconds):
    seeds = glob.glob(os.path.join(sfibuild.BUILD, "progs", "*.sfi")) + glob.glob(os.path.join(sfibuild.BUILD, "escape", "*.sfi"))
    r = run([os.path.join(BIN, "sfi-fuzz"), "--seconds", str(seconds)] + sorted(seeds)[:20], timeout=seconds + 120)
    result("verifier/fuzz-%ds-no-crash" % seconds, r.returncode == 0 and "no crash" in r.stdout, r.stdout + r.stderr)
    print("    " + r.stdout.strip())


def main():
    """run_tests.py [--debian all|short|only]: every step with every Debian
    program (all, the default), with DEBIAN_SHORT's (short), or the Debian
    programs alone, every one of them (only)."""
    global DEBIAN
    args = sys.argv[1:]
    if args[:1] == ["--debian"] and len(args) == 2 and args[1] in ("all", "short", "only"):
        DEBIAN = args[1]
    elif args:
        sys.exit("usage: run_tests.py [--debian all|short|only]")
    steps = [verifier_unit_tests, escape_modules, corpus, cpu_diff, runtime_tests, toolchain, program_equality, instruction_counts, debian_programs,
             lambda: fuzz(int(os.environ.get("SFI_FUZZ_SECONDS", "20")))]
    if DEBIAN == "only":
        steps, DEBIAN = [debian_programs], "all"
    for step in steps:
        t0 = time.monotonic()
        try:
            step()
        except Exception as e:  # a broken step is a failed test, not a crash of the harness
            result("harness/%s" % getattr(step, "__name__", "step"), False, "%s: %s" % (type(e).__name__, e))
        print("sfi-test: %s took %.0f s" % (getattr(step, "__name__", "fuzz"), time.monotonic() - t0), flush=True)
    print("sfi-test: %d passed, %d failed" % (passed, failed))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
