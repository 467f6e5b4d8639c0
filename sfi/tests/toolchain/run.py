#!/usr/bin/env python3
"""Tool-chain tests (sfi-cc / sfi-ld): one line per test, `PASS name`,
`FAIL name: why` or `SKIP name: why`; exit status 1 if any failed.

  run.py [--cc DIR]     DIR: another tool chain's sfi/cc (to check that a
                        test fails without a fix); builds then go to a
                        temporary directory

Tests:
  vex/*        BMI2/AVX2 code (VEX-encoded shlx, pdep, mulx, vpaddd...) builds in
               both modes and its sandboxed output equals native; the layout's
               fallback for a pseudo-prefix gas refuses works on its own
  forbidden/*  instructions the verifier refuses (syscall, int $n, xsetbv,
               wrgsbase, pushf...) stop sfi-cc -c with the instruction and
               the C source line; sfi-cc -o runs the verifier on the module it
               links (and refuses a cpuid split over two .byte directives)
  runtime-entries/*  cpuid, rdtsc, rdtscp and xgetbv (also written as bytes,
               and inside .ifnc conditionals) become calls of the runtime's
               entries: a CPU probe (cpuid.c, cpuid_regs.s) builds and its output
               equals native (registers, flags and red zone as the
               instructions leave them); the answers are the fixed set
  sp-step/*    a small %rsp step that no access checks before a branch is
               checked at once (push, or a test of the new top) where the
               flags are dead, and keeps the full fix-up where they are read
  weak/*       undefined weak symbols are NULL (GOT loads, data, comparisons), are
               not imports, and calling one faults
  link/*       module layout: code that fills its last page exactly still gets its
               closing int3 bundle before the data
"""
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SFI = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(SFI, "cc"))
import sfibuild  # noqa: E402

BIN = os.path.join(SFI, "target", "release")
failed = 0


def result(name, ok, detail=""):
    global failed
    if ok:
        print("PASS %s" % name, flush=True)
    else:
        failed += 1
        print("FAIL %s: %s" % (name, " | ".join(detail.strip().splitlines())[:1500]), flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, **kw)


def cpu_flags():
    try:
        m = re.search(r"^flags\s*:(.*)$", open("/proc/cpuinfo").read(), re.M)
        return set(m.group(1).split()) if m else set()
    except OSError:
        return set()


def build3(name, srcs):
    """{flavor: path} or the BuildError's text."""
    try:
        return {f: sfibuild.build(name, [os.path.join(HERE, s) for s in srcs], f, outdir=OUT) for f in sfibuild.FLAVORS}
    except sfibuild.BuildError as e:
        return str(e)


def equals_native(group, name, srcs, args=()):
    exe = build3(name, srcs)
    if isinstance(exe, str):
        result("%s/build" % group, False, exe)
        return
    result("%s/build" % group, True)
    native = run([exe["native"]] + list(args))
    for f in ("stores", "full"):
        sb = run([os.path.join(BIN, "sfi-run"), exe[f]] + list(args))
        ok = native.returncode == 0 and sb.returncode == 0 and sb.stdout == native.stdout and native.stdout
        result("%s/%s-equals-native" % (group, f), bool(ok), "native exit %d, sandboxed exit %d; native %r; sandboxed %r %s" % (
            native.returncode, sb.returncode, native.stdout[:300], sb.stdout[:300], sb.stderr[:300]))


def module_imports(path):
    b = open(path, "rb").read()
    flags, code, doff, dlen, bss, nent, nimp, nrel, _ = struct.unpack_from("<9I", b, 8)
    p = 64 + code + dlen
    for _ in range(nent):
        p += 5 + b[p + 4]
    out = []
    for _ in range(nimp):
        out.append(b[p + 1:p + 1 + b[p]].decode())
        p += 1 + b[p]
    return out


def test_vex():
    if not {"bmi2", "avx2", "fma"} <= cpu_flags():
        print("SKIP vex/*: the CPU lacks bmi2, avx2 or fma", flush=True)
        return
    equals_native("vex/bmi2-avx2", "bmi2", ["bmi2.c"])
    # The fallback alone: with VEX detection off, the probes learn from gas's
    # errors which instructions refuse {rex}, and the result is the same.
    asm = os.path.join(OUT, "bmi2-vexprobe.s")
    r = run(["gcc"] + SFICC_MOD.GCC_FLAGS + ["-O2"] + sfibuild.INC + ["-S", "-o", asm, os.path.join(HERE, "bmi2.c")])
    if r.returncode:
        result("vex/refused-prefix-fallback", False, r.stderr)
        return
    saved = getattr(SFICC_MOD, "vex_encoded", None)
    try:
        objs = []
        for detect in (True, False):
            SFICC_MOD.vex_encoded = saved if detect else (lambda b: False)
            with tempfile.TemporaryDirectory() as tmp:
                obj = os.path.join(OUT, "bmi2-vexprobe-%d.o" % detect)
                SFICC_MOD.rewrite_asm(open(asm).read(), True, tmp, obj)
                objs.append(run(["objdump", "-d", "--no-show-raw-insn", obj]).stdout.split("\n", 3)[-1])
        result("vex/refused-prefix-fallback", objs[0] == objs[1], "the layouts differ")
    except Exception as e:  # noqa: BLE001 - any failure of the rewrite is the test's failure
        result("vex/refused-prefix-fallback", False, "%s: %s" % (type(e).__name__, e))
    finally:
        SFICC_MOD.vex_encoded = saved


FORBIDDEN_CASES = [
    # name, inline assembly, the mnemonic the message must name
    ("syscall", '"syscall" : "=a"(r) : "a"(39) : "rcx", "r11"', "syscall"),
    ("int80", '"int $0x80" : "=a"(r) : "a"(20)', "int"),
    ("rdpid", '"rdpid %q0" : "=r"(r)', "rdpid"),
    ("xsetbv", '"xsetbv" : "+a"(r) : "c"(0), "d"(0)', "xsetbv"),
    ("wrgsbase", '"wrgsbase %q1" : "=r"(r) : "r"(0L)', "wrgsbase"),
    ("pushf", '"pushfq; popq %q0" : "=r"(r)', "pushfq"),
    ("movseg", '"movl %%fs, %0" : "=r"(r)', "%fs"),
    ("ldmxcsr", '"ldmxcsr %1" : "=r"(r) : "m"(r)', "ldmxcsr"),
]


def test_forbidden():
    cc = SFICC_CMD
    for name, asm, mnem in FORBIDDEN_CASES:
        src = os.path.join(OUT, "forbid_%s.c" % name)
        with open(src, "w") as f:
            f.write("/* %s */\nint probe(int x) {\n    unsigned r = 0;\n    if (x)\n        __asm__ volatile(%s);\n    return (int)r + x;\n}\n" % (name, asm))
        r = run(cc + ["-O2", "-c", src, "-o", os.path.join(OUT, "forbid_%s.o" % name)])
        where = "%s:5" % src
        ok = (r.returncode != 0 and re.search(r"`[^`]*%s[^`]*`" % re.escape(mnem), r.stderr) is not None
              and where in r.stderr and "refused" in r.stderr)
        result("forbidden/%s-at-build" % name, ok, "exit %d: %s" % (r.returncode, r.stderr))
    # Hand-written assembly (no .loc): the message names the line of the .s file.
    s = os.path.join(OUT, "forbid_asm.s")
    with open(s, "w") as f:
        f.write("\t.text\n\t.globl f\n\t.type f, @function\nf:\n\txsetbv\n\tret\n")
    r = run(cc + ["-c", s, "-o", os.path.join(OUT, "forbid_asm.o")])
    result("forbidden/assembly-line", r.returncode != 0 and "assembly line 5" in r.stderr and "xsetbv" in r.stderr,
           "exit %d: %s" % (r.returncode, r.stderr))
    # The link step runs the verifier: an object that gcc compiled without
    # sfi-cc (an unsandboxed store) must not become a module.
    c = os.path.join(OUT, "plain.c")
    with open(c, "w") as f:
        f.write("int g(int *p) { *p = 5; return 1; }\n")
    o, mod = os.path.join(OUT, "plain.o"), os.path.join(OUT, "plain.sfi")
    if os.path.exists(mod):
        os.unlink(mod)
    run(["gcc", "-O2", "-fpie", "-fno-asynchronous-unwind-tables", "-c", c, "-o", o])
    r = run(cc + ["-o", mod, o])
    result("forbidden/link-runs-verifier", r.returncode != 0 and "unsandboxed store" in r.stderr and not os.path.exists(mod),
           "exit %d, module %s: %s" % (r.returncode, "written" if os.path.exists(mod) else "not written", r.stderr))
    # ... and accepts a good one.
    good = os.path.join(OUT, "good.c")
    with open(good, "w") as f:
        f.write("int g(int *p) { *p = 5; return 1; }\n")
    r = run(cc + ["-O2", "-o", os.path.join(OUT, "good.sfi"), good])
    result("forbidden/link-accepts-good", r.returncode == 0 and os.path.exists(os.path.join(OUT, "good.sfi")), r.stderr)


# The runtime's fixed answers (sfi/verify/src/entries.s) as cpuid.c prints them.
FIXED_LEAVES = """00000000.0: 00000007 7065654b 55504320 49465320
00000001.0: 00000600 00010800 02d82203 06088111
00000002.0: 00000000 00000000 00000000 00000000
00000007.0: 00000000 00000108 00000000 00000000
00000007.1: 00000000 00000000 00000000 00000000
0000000d.0: 00000000 00000000 00000000 00000000
80000000.0: 80000001 00000000 00000000 00000000
80000001.0: 00000000 00000000 00000020 28000000
80000002.0: 00000000 00000000 00000000 00000000
40000000.0: 00000000 00000000 00000000 00000000
libdeflate's cpuid 1: 00000600 00010800 02d82203 06088111
xgetbv 0: 3 3, 1: 0
rdtsc low bits 0 0 aux 0
"""


def test_runtime_entries():
    equals_native("runtime-entries/probe", "cpuid", ["cpuid.c", "cpuid_regs.s"])
    exe = build3("cpuid", ["cpuid.c", "cpuid_regs.s"])
    if isinstance(exe, str):
        return
    for f in ("stores", "full"):
        r = run([os.path.join(BIN, "sfi-run"), exe[f], "leaves"])
        result("runtime-entries/%s-fixed-leaves" % f, r.returncode == 0 and r.stdout == FIXED_LEAVES,
               "exit %d: %r %s" % (r.returncode, r.stdout, r.stderr))
    # A cpuid the rewriter cannot rewrite (bytes that are not one directive
    # of exactly its encoding) does not become a module (the rewriter refuses
    # bytes in code; the verifier refuses a raw cpuid: tests/escape/cpuid_raw.s).
    c = os.path.join(OUT, "cpuid_bytes.c")
    with open(c, "w") as fh:
        fh.write('int probe(int x) {\n    unsigned a = x, b, c = 0, d;\n'
                 '    __asm__ volatile(".byte 0x0f\\n.byte 0xa2" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));\n    return a + b + c + d;\n}\n')
    mod = os.path.join(OUT, "cpuid_bytes.sfi")
    r = run(SFICC_CMD + ["-O2", "-o", mod, c])
    result("runtime-entries/raw-cpuid-refused", r.returncode != 0 and "not allowed" in r.stderr and not os.path.exists(mod),
           "exit %d: %s" % (r.returncode, r.stderr))


def test_sp_steps():
    """A small %rsp step no access checks before a branch: checked at once
    (push / test) where the flags are dead, the full fix-up where the
    step's flags are read; outputs equal native either way."""
    equals_native("sp-step/program", "spstep", ["spstep.c", "spstep_asm.s"])
    for f in ("stores", "full"):
        exe = os.path.join(OUT, "spstep.%s.sfi" % f)
        if not os.path.exists(exe):
            continue
        o = os.path.join(OUT, "spstep_%s.o" % f)
        r = run(SFICC_CMD + (["--full"] if f == "full" else []) + ["-c", os.path.join(HERE, "spstep_asm.s"), "-o", o])
        dis = run(["objdump", "-d", o]).stdout if r.returncode == 0 else ""
        funcs = dict(re.findall(r"<(\w+)>:\n(.*?)(?=\n\n|\Z)", dis, re.S))
        kept = "or     $0xf0000000,%esp" in funcs.get("flags_after_step", "")
        cheap = ("push   %rax" in funcs.get("step_then_branch", "") and "0xf0000000" not in funcs.get("step_then_branch", "")
                 and "test   %esp,(%rsp)" in funcs.get("step24_then_branch", "") and "0xf0000000" not in funcs.get("step24_then_branch", ""))
        result("sp-step/%s-fixup-kept-where-flags-read" % f, kept, dis[:2000] or r.stderr)
        result("sp-step/%s-checked-at-once-where-flags-dead" % f, cheap, dis[:2000] or r.stderr)


def test_weak():
    equals_native("weak/null", "weak", ["weak.c", "weak_def.c"], ["x"])
    exe = build3("weak_call", ["weak_call.c"])
    if isinstance(exe, str):
        result("weak/call-build", False, exe)
        return
    for f in ("stores", "full"):
        imps = module_imports(exe[f])
        result("weak/%s-not-imported" % f, not [i for i in imps if i.startswith("missing")], "imports: %s" % imps)
        r = run([os.path.join(BIN, "sfi-run"), exe[f]])
        result("weak/%s-call-faults" % f, r.stdout == "before\n" and "fault in domain" in r.stderr and "offset 0x0," in r.stderr,
               "exit %d: %r %s" % (r.returncode, r.stdout, r.stderr))
    n = run([exe["native"]])
    result("weak/native-call-faults", n.returncode < 0 and n.stdout == "before\n", "exit %d" % n.returncode)


def test_link():
    # 4096 bytes of code, then data: the int3 bundle that sfi-ld appends after
    # code that fills its last bundle must not run into the data's page.
    src = os.path.join(OUT, "fullpage.s")
    with open(src, "w") as f:
        f.write("\t.text\n\t.globl f\n\t.type f, @function\nf:\n\t.rept 4096\n\tint3\n\t.endr\n"
                "\t.data\n\t.globl d\nd:\n\t.quad 1\n")
    mod = os.path.join(OUT, "fullpage.sfi")
    r = run([os.path.join(os.path.dirname(SFICC_CMD[0]), "sfi-ld"), "--raw", "-o", mod, src])
    ok = r.returncode == 0
    if ok:
        b = open(mod, "rb").read()
        flags, code, doff = struct.unpack_from("<3I", b, 8)
        ok = code == 4096 + 32 and doff >= 0x20000 + code and doff % 0x1000 == 0 and b[64 + 4096:64 + code] == b"\xcc" * 32
        r = run([os.path.join(BIN, "sfi-verify"), mod]) if ok else r
    result("link/code-fills-last-page", ok, "exit %d: %s%s" % (r.returncode, r.stdout, r.stderr))


def main():
    global OUT, SFICC_CMD, SFICC_MOD
    args = sys.argv[1:]
    tmp = None
    if args[:1] == ["--cc"]:
        cc_dir = os.path.abspath(args[1])
        tmp = tempfile.TemporaryDirectory(prefix="sfi-tc-")
        sfibuild.SFICC = os.path.join(cc_dir, "sfi-cc")
        sfibuild.BUILD = tmp.name
        OUT = tmp.name
        sys.path.insert(0, cc_dir)
    else:
        OUT = os.path.join(sfibuild.BUILD, "toolchain")
    os.makedirs(OUT, exist_ok=True)
    SFICC_CMD = [sfibuild.SFICC]
    import sficc  # noqa: E402 - from the tool chain under test
    SFICC_MOD = sficc
    if not os.path.exists(os.path.join(BIN, "sfi-run")):
        print("FAIL toolchain/setup: %s not built (make -C sfi tools)" % os.path.join(BIN, "sfi-run"))
        sys.exit(1)
    test_vex()
    test_forbidden()
    test_runtime_entries()
    test_sp_steps()
    test_weak()
    test_link()
    if tmp:
        tmp.cleanup()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
