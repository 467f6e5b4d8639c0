#!/usr/bin/env python3
"""SFI benchmarks.  Fetches Debian source packages through a private apt
configuration (deb-src for the mirror this machine uses), builds each program
natively and sandboxed (stores+jumps, and full protection) against the same
mini libc, checks that the sandboxed output equals the native output (fails
loudly otherwise), and times SFI_BENCH_RUNS rounds (native, stores and full
run together on one CPU; CPU time of each child); the overhead is the median
of the rounds' paired ratios.  Also runs sfi-bench (cross-domain call, C call, pipe
round trip, verifier and load throughput).  One progress line per program.
Beside the times, the instructions each program executes, native and
sandboxed, counted once under QEMU user mode (qemu-x86_64) with the
project's instruction-counting plugin (tools/icount-plugin): a figure that
does not move with the host's load (SFI_BENCH_ICOUNT=0 leaves it out).
`bench.py --icount-only [PROGRAM...]` builds the programs and counts only.

Writes build/bench/sfi.json and build/bench/sfi.md (paths from the repo root)."""
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cc"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import sfibuild  # noqa: E402
import icount  # noqa: E402  (builds the instruction-counting plugin)

SFI, ROOT, BUILD = sfibuild.SFI, sfibuild.ROOT, sfibuild.BUILD
SRC = os.path.join(BUILD, "src")
APT = os.path.join(BUILD, "apt")
DRV = os.path.join(SFI, "bench", "drivers")
BIN = os.path.join(SFI, "target", "release")
RUNS = int(os.environ.get("SFI_BENCH_RUNS", "15"))
MICRO_BATCHES = 5  # per figure in each micro-benchmark round (one round after each program)
OUT = os.path.join(ROOT, "build", "bench")
ICOUNT = os.environ.get("SFI_BENCH_ICOUNT", "1") != "0"
QEMU_USER = "qemu-x86_64"


def log(msg):
    print("sfi-bench: " + msg, flush=True)


def mirrors():
    """(uri, suite) pairs of the Debian mirror(s) this machine's apt uses."""
    found = []
    for path in ["/etc/apt/sources.list"] + sorted(glob.glob("/etc/apt/sources.list.d/*")):
        if not os.path.isfile(path):
            continue
        text = open(path).read()
        for m in re.finditer(r"^deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", text, re.M):
            found.append((m.group(1), m.group(2)))
        for block in text.split("\n\n"):
            uris = re.search(r"^URIs:\s*(.+)$", block, re.M)
            suites = re.search(r"^Suites:\s*(.+)$", block, re.M)
            if uris and suites and re.search(r"^Types:.*\bdeb\b", block, re.M):
                for u in uris.group(1).split():
                    for s in suites.group(1).split():
                        found.append((u, s))
    main = [(u, s) for u, s in found if "security" not in u and "-" not in s]
    return main or [("http://deb.debian.org/debian", "bookworm")]


def apt_opts():
    return ["-o", "Dir::Etc::SourceList=" + os.path.join(APT, "sources.list"), "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", "Dir::State::Lists=" + os.path.join(APT, "lists"), "-o", "Dir::Cache=" + os.path.join(APT, "cache")]


def fetch(pkgs):
    os.makedirs(os.path.join(APT, "lists", "partial"), exist_ok=True)
    os.makedirs(os.path.join(APT, "cache", "archives", "partial"), exist_ok=True)
    os.makedirs(SRC, exist_ok=True)
    with open(os.path.join(APT, "sources.list"), "w") as f:
        for uri, suite in mirrors():
            f.write("deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n" % (uri, suite))
    if not glob.glob(os.path.join(APT, "lists", "*Sources*")):
        log("apt-get update (private deb-src configuration in %s)" % APT)
        subprocess.run(["apt-get"] + apt_opts() + ["update"], check=True, stdout=subprocess.DEVNULL)
    dirs = {}
    for p in pkgs:
        have = [d for d in glob.glob(os.path.join(SRC, p + "-*")) if os.path.isdir(d)]
        if not have:
            log("apt-get source %s" % p)
            subprocess.run(["apt-get"] + apt_opts() + ["source", p], cwd=SRC, check=True, stdout=subprocess.DEVNULL)
            have = [d for d in glob.glob(os.path.join(SRC, p + "-*")) if os.path.isdir(d)]
        dirs[p] = have[0]
    return dirs


PKGS = ["zlib", "bzip2", "lz4", "xxhash", "kissfft", "lua5.4", "sqlite3", "expat", "cjson",
        "libyaml", "pcre2", "brotli", "lzo2", "mujs", "libspng", "libgsm"]


def zstd_program(src):
    """zstd (Debian's libzstd, unmodified), which probes the CPU with cpuid
    when it makes a compression context; tested, not benchmarked.  Its
    Huffman decoder in assembly (a .S file for the C preprocessor) is left
    out with ZSTD_DISABLE_ASM, which selects the C decoder."""
    lib = os.path.join(src, "lib")
    srcs = [os.path.join(DRV, "zstd_drv.c")] + sorted(f for sub in ("common", "compress", "decompress")
                                                      for f in glob.glob(os.path.join(lib, sub, "*.c")))
    return ("zstd", "compression", srcs, ["-I" + lib, "-DZSTD_DISABLE_ASM"], ["corpus"])


def libdeflate_program(src):
    """libdeflate (Debian's source, unmodified), which probes the CPU with
    cpuid and xgetbv (written as bytes) when it first compresses or sums;
    tested, not benchmarked."""
    lib = os.path.join(src, "lib")
    srcs = [os.path.join(DRV, "libdeflate_drv.c")] + sorted(glob.glob(os.path.join(lib, "*.c"))) + [
        os.path.join(lib, "x86", "cpu_features.c")]
    return ("libdeflate", "compression", srcs, ["-I" + src], ["corpus"])


# libsodium's configuration as Debian's configure finds it on amd64 (the
# intrinsics headers, the AVX assembly and its xgetbv written as bytes,
# 128-bit integers), without the salsa20 assembly (HAVE_AMD64_ASM: its C
# versions are used) and with the driver's random numbers instead of the
# system's (RANDOMBYTES_CUSTOM_IMPLEMENTATION, no default implementation).
SODIUM_FLAGS = ["-DCONFIGURED=1", "-DNATIVE_LITTLE_ENDIAN=1", "-DHAVE_INLINE_ASM=1", "-DHAVE_CPUID=1", "-DHAVE_TI_MODE=1",
                "-DHAVE_AVX_ASM=1", "-DHAVE_MMINTRIN_H=1", "-DHAVE_EMMINTRIN_H=1", "-DHAVE_PMMINTRIN_H=1",
                "-DHAVE_TMMINTRIN_H=1", "-DHAVE_SMMINTRIN_H=1", "-DHAVE_AVXINTRIN_H=1", "-DHAVE_AVX2INTRIN_H=1",
                "-DHAVE_WMMINTRIN_H=1", "-DRANDOMBYTES_CUSTOM_IMPLEMENTATION=1",
                "-DRANDOMBYTES_DEFAULT_IMPLEMENTATION=NULL"]


def sodium_program(src):
    """libsodium (Debian's source, unmodified), whose sodium_init() probes
    the CPU with cpuid and xgetbv (written as bytes); tested, not
    benchmarked.  version.h is made from version.h.in as configure makes it,
    and the curve25519 assembly (sandy2x.S, used where cpuid reports AVX:
    natively here, never in a domain) is preprocessed into a .s file."""
    lib = os.path.join(src, "src", "libsodium")
    inc = os.path.join(lib, "include")
    gen = os.path.join(BUILD, "bench", "sodium-gen")
    os.makedirs(os.path.join(gen, "sodium"), exist_ok=True)
    ver = open(os.path.join(inc, "sodium", "version.h.in")).read()
    for k, v in (("@VERSION@", "1.0.18"), ("@SODIUM_LIBRARY_VERSION_MAJOR@", "10"),
                 ("@SODIUM_LIBRARY_VERSION_MINOR@", "3"), ("@SODIUM_LIBRARY_MINIMAL_DEF@", "")):
        ver = ver.replace(k, v)
    with open(os.path.join(gen, "sodium", "version.h"), "w") as f:
        f.write(ver)
    x2 = os.path.join(lib, "crypto_scalarmult", "curve25519", "sandy2x")
    asm = os.path.join(gen, "sandy2x.s")
    subprocess.run(["gcc", "-E", "-P", "-x", "assembler-with-cpp", "-I" + x2, "-o", asm, os.path.join(x2, "sandy2x.S")] + SODIUM_FLAGS,
                   check=True)
    skip = ("randombytes_internal_random.c", "randombytes_sysrandom.c")
    srcs = [os.path.join(DRV, "sodium_drv.c")] + sorted(
        f for f in glob.glob(os.path.join(lib, "**", "*.c"), recursive=True) if os.path.basename(f) not in skip) + [asm]
    return ("libsodium", "cryptography", srcs, ["-I" + gen, "-I" + os.path.join(gen, "sodium"), "-I" + inc, "-I" + os.path.join(inc, "sodium")] + SODIUM_FLAGS, [])


def fetched():
    """The source directories if every package was fetched already (no network), else None."""
    dirs = {}
    for p in PKGS:
        have = [d for d in glob.glob(os.path.join(SRC, p + "-*")) if os.path.isdir(d)]
        if not have:
            return None
        dirs[p] = have[0]
    return dirs


def sqlite_amalgamation(src):
    """Generates sqlite3.c from the Debian source tree (lemon, mkkeywordhash and
    the tclsh scripts of sqlite's own main.mk); returns its directory."""
    gen = os.path.join(BUILD, "bench", "sqlite-gen")
    if not os.path.exists(os.path.join(gen, "sqlite3.c")):
        log("generating the sqlite3 amalgamation (needs tclsh)")
        os.makedirs(gen, exist_ok=True)
        subprocess.run(["make", "-f", os.path.join(src, "Makefile.linux-gcc"), "TOP=" + src, "BCC=gcc -O1", "TCC=gcc -O1",
                        "NAWK=awk", "TCLSH_CMD=tclsh", "sqlite3.c"], cwd=gen, check=True, stdout=subprocess.DEVNULL)
    return gen


def programs(d):
    z, bz, lz, xx, kf, lua = d["zlib"], d["bzip2"], d["lz4"], d["xxhash"], d["kissfft"], d["lua5.4"]
    sq, ex, cj = d["sqlite3"], os.path.join(d["expat"], "expat"), d["cjson"]
    # Debian's luaconf.h includes a generated multiarch header; expat needs a config header.
    shim = os.path.join(BUILD, "bench", "shim")
    os.makedirs(shim, exist_ok=True)
    with open(os.path.join(shim, "lua5.4-deb-multiarch.h"), "w") as f:
        f.write('#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n')
    with open(os.path.join(shim, "expat_config.h"), "w") as f:
        f.write("#define BYTEORDER 1234\n#define HAVE_MEMMOVE 1\n#define XML_CONTEXT_BYTES 1024\n#define XML_DTD 1\n"
                "#define XML_NS 1\n#define XML_GE 1\n#define XML_POOR_ENTROPY 1\n")
    gen = sqlite_amalgamation(sq)
    # libyaml's config.h (its version, as configure writes it); PCRE2's generic
    # pcre2.h and character tables, configured by -D flags below.
    with open(os.path.join(shim, "config.h"), "w") as f:
        f.write('#define YAML_VERSION_MAJOR 0\n#define YAML_VERSION_MINOR 2\n#define YAML_VERSION_PATCH 5\n'
                '#define YAML_VERSION_STRING "0.2.5"\n')
    pc = os.path.join(d["pcre2"], "src")
    for src_name, dst in (("pcre2.h.generic", "pcre2.h"), ("pcre2_chartables.c.dist", "pcre2_chartables.c")):
        text = open(os.path.join(pc, src_name)).read()
        if not os.path.exists(os.path.join(shim, dst)) or open(os.path.join(shim, dst)).read() != text:
            with open(os.path.join(shim, dst), "w") as f:
                f.write(text)
    ya, br, lzo, mj, sp, gs = (d[p] for p in ("libyaml", "brotli", "lzo2", "mujs", "libspng", "libgsm"))
    yasrc = [os.path.join(ya, "src", f + ".c") for f in "api reader scanner parser loader writer emitter dumper".split()]
    yain = sorted(glob.glob(os.path.join(ya, "examples", "*.yaml")))
    pcsrc = [os.path.join(pc, "pcre2_%s.c" % f) for f in (
        "auto_possess compile config context convert dfa_match error extuni find_bracket maketables match match_data "
        "newline ord2utf pattern_info script_run serialize string_utils study substitute substring tables ucd valid_utf xclass").split()]
    pcsrc.append(os.path.join(shim, "pcre2_chartables.c"))
    pcflags = ["-I" + shim, "-I" + pc, "-DPCRE2_CODE_UNIT_WIDTH=8", "-DPCRE2_STATIC", "-DSUPPORT_UNICODE", "-DLINK_SIZE=2",
               "-DHEAP_LIMIT=20000000", "-DMATCH_LIMIT=10000000", "-DMATCH_LIMIT_DEPTH=10000000", "-DMAX_NAME_SIZE=32",
               "-DMAX_NAME_COUNT=10000", "-DNEWLINE_DEFAULT=2", "-DPARENS_NEST_LIMIT=250", "-DMAX_VARLOOKBEHIND=255"]
    brsrc = [f for sub in ("common", "enc", "dec") for f in sorted(glob.glob(os.path.join(br, "c", sub, "*.c")))]
    gssrc = [os.path.join(gs, "src", f + ".c") for f in
             "add code decode long_term lpc preprocess rpe short_term table gsm_create gsm_destroy gsm_encode gsm_decode".split()]
    spimg = sorted(glob.glob(os.path.join(sp, "tests", "images", "*.png")))
    zsrc = [os.path.join(z, f + ".c") for f in "adler32 compress crc32 deflate inflate inftrees inffast trees zutil uncompr".split()]
    bsrc = [os.path.join(bz, f + ".c") for f in "blocksort huffman crctable randtable compress decompress bzlib".split()]
    luasrc = [f for f in sorted(glob.glob(os.path.join(lua, "src", "*.c")))
              if os.path.basename(f) not in ("lua.c", "luac.c", "loslib.c", "liolib.c", "loadlib.c", "linit.c")]
    large = os.path.join(d["expat"], "testdata", "largefiles")
    cjin = sorted(f for f in glob.glob(os.path.join(cj, "tests", "inputs", "test*")) if not f.endswith(".expected"))
    # SQLite: the OS layer is the driver's in-memory VFS; long double would need x87 control-word changes (fldcw), which the verifier refuses.
    sqflags = ["-I" + gen, "-DSQLITE_OS_OTHER=1", "-DSQLITE_THREADSAFE=0", "-DSQLITE_OMIT_LOAD_EXTENSION", "-DSQLITE_TEMP_STORE=3",
               "-DSQLITE_OMIT_LOCALTIME", "-DSQLITE_DEFAULT_MEMSTATUS=0", "-DLONGDOUBLE_TYPE=double", "-U__linux__"]
    return [
        # name, kind, sources, cflags, arguments ("corpus" = the text corpus)
        ("zlib", "compression", [os.path.join(DRV, "zlib_drv.c")] + zsrc, ["-I" + z], ["corpus"]),
        ("bzip2", "compression", [os.path.join(DRV, "bzip2_drv.c")] + bsrc, ["-I" + bz, "-DBZ_NO_STDIO"], ["corpus"]),
        ("lz4", "compression", [os.path.join(DRV, "lz4_drv.c"), os.path.join(lz, "lib", "lz4.c"), os.path.join(lz, "lib", "lz4hc.c")], ["-I" + os.path.join(lz, "lib")], ["corpus"]),
        ("xxhash", "hashing", [os.path.join(DRV, "xxhash_drv.c")], ["-I" + xx, "-DXXH_VECTOR=0"], ["corpus"]),
        ("kissfft", "numeric", [os.path.join(DRV, "kissfft_drv.c"), os.path.join(kf, "kiss_fft.c"), os.path.join(kf, "kiss_fftr.c")], ["-I" + kf], ["2000000"]),
        ("lua", "interpreter", [os.path.join(DRV, "lua_drv.c")] + luasrc, ["-I" + os.path.join(lua, "src"), "-I" + shim, "-Dlua_getlocaledecpoint()='.'"], [os.path.join(DRV, "workload.lua")]),
        ("sqlite", "database engine", [os.path.join(DRV, "sqlite_vfs.c"), os.path.join(sq, "test", "speedtest1.c"), os.path.join(gen, "sqlite3.c")], sqflags,
         ["--memdb", "--size", "12", "--verify", "--testset", "main", "--nomemstat"]),
        ("expat", "XML parser", [os.path.join(DRV, "expat_drv.c")] + [os.path.join(ex, "lib", f + ".c") for f in ("xmlparse", "xmlrole", "xmltok")],
         ["-I" + os.path.join(ex, "lib"), "-I" + shim, "-DHAVE_EXPAT_CONFIG_H"], [os.path.join(large, "nes96.xml"), os.path.join(large, "wordnet_glossary-20010201.rdf")]),
        ("cjson", "JSON parser", [os.path.join(DRV, "cjson_drv.c"), os.path.join(cj, "cJSON.c")], ["-I" + cj], ["1000"] + cjin),
        ("yaml", "YAML parser", [os.path.join(DRV, "yaml_drv.c")] + yasrc, ["-I" + os.path.join(ya, "include"), "-I" + shim, "-DHAVE_CONFIG_H", "-DYAML_DECLARE_STATIC"],
         ["15000"] + yain),
        ("pcre2", "regular expressions", [os.path.join(DRV, "pcre2_drv.c")] + pcsrc, pcflags, ["4", "corpus"]),
        ("brotli", "compression", [os.path.join(DRV, "brotli_drv.c")] + brsrc, ["-I" + os.path.join(br, "c", "include")], ["0", "corpus"]),
        ("lzo", "compression", [os.path.join(DRV, "lzo_drv.c"), os.path.join(lzo, "minilzo", "minilzo.c")], ["-I" + os.path.join(lzo, "minilzo"), "-I" + os.path.join(lzo, "include", "lzo")], ["40", "corpus"]),
        ("mujs", "interpreter", [os.path.join(DRV, "mujs_drv.c"), os.path.join(mj, "one.c")], ["-I" + mj], [os.path.join(DRV, "workload.js")]),
        ("spng", "image codec", [os.path.join(DRV, "spng_drv.c"), os.path.join(sp, "spng", "spng.c")] + zsrc, ["-I" + os.path.join(sp, "spng"), "-I" + z, "-DSPNG_STATIC"],
         ["30"] + spimg),
        ("gsm", "audio codec", [os.path.join(DRV, "gsm_drv.c")] + gssrc, ["-I" + os.path.join(gs, "inc"), "-DNeedFunctionPrototypes=1", "-DSASR"], ["900"]),
    ]


def make_corpus(dirs):
    """The packages' own C sources and documentation, concatenated (about 2.5 MiB)."""
    path = os.path.join(BUILD, "corpus-2.5m.txt")
    if os.path.exists(path):
        return path
    files = []
    for d in sorted(dirs.values()):
        for ext in ("*.c", "*.h", "*.txt", "*.md", "*.html", "*.3"):
            files += sorted(glob.glob(os.path.join(d, "**", ext), recursive=True))
    with open(path, "wb") as out:
        for f in files:
            out.write(open(f, "rb").read())
            if out.tell() > 5 << 19:
                break
    return path


def timed_together(cmds, cpu=None, pin=True):
    """Runs the commands of the dict cmds at the same time, all pinned to one
    CPU (cpu, default the last one; unpinned if not pin), so that the
    kernel's scheduler interleaves them every few milliseconds; returns
    {key: (CPU seconds (user + system) of the child, wall seconds, (exit
    status, stdout), the module load's CPU seconds that sfi-run reported)}.
    The machine is a VM on a shared host whose speed drifts by tens of
    percent within seconds: run one after the other, two programs see
    different machines, while interleaved on one CPU they see the same one,
    and their CPU times compare (see docs/sfi.md, "Measurement")."""
    cpu = (os.cpu_count() or 1) - 1 if cpu is None else cpu
    files, procs = {}, {}
    t = time.perf_counter()
    for k, cmd in cmds.items():
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        files[k] = (out, err)
        procs[k] = subprocess.Popen(cmd, stdout=out, stderr=err, env=dict(os.environ, SFI_RUN_LOAD_TIME="1"),
                                    preexec_fn=(lambda: os.sched_setaffinity(0, {cpu})) if pin else None)
    res = {}
    by_pid = {p.pid: k for k, p in procs.items()}
    while by_pid:
        pid, status, ru = os.wait4(-1, 0)
        k = by_pid.pop(pid, None)
        if k is None:
            continue
        out, err = files[k]
        out.seek(0)
        err.seek(0)
        m = re.search(rb"^sfi-run: load cpu ([0-9.]+)$", err.read(), re.M)
        res[k] = (ru.ru_utime + ru.ru_stime, time.perf_counter() - t, (os.waitstatus_to_exitcode(status), out.read()),
                  float(m.group(1)) if m else 0.0)
        out.close()
        err.close()
    return res


def timed(cmd):
    """Runs cmd alone, unpinned; the tuple of timed_together.  CPU time is the
    figure used: wall time also counts the time other processes held the CPU."""
    return timed_together({0: cmd}, pin=False)[0]


def plugin_counts(cmd):
    """Runs cmd under QEMU user mode with the instruction-counting plugin;
    returns ([instructions of each marked region], instructions in all,
    (exit status, stdout)).  -cpu max: the runtime needs FSGSBASE."""
    with tempfile.NamedTemporaryFile(prefix="sfi-icount-", suffix=".txt") as log_f, tempfile.TemporaryFile() as out:
        st = subprocess.run([QEMU_USER, "-cpu", "max", "-plugin", "file=%s,out=%s" % (icount.build(), log_f.name)] + cmd,
                            stdout=out, stderr=subprocess.DEVNULL).returncode
        out.seek(0)
        res = (st, out.read())
        text = open(log_f.name).read()
    regions = [int(n) for n in re.findall(r"icount-plugin: region \d+ instructions (\d+)", text)]
    total = re.search(r"icount-plugin: exit: \d+ regions, (\d+) instructions in all", text)
    if not total:
        raise RuntimeError("instruction count of %r: plugin output %r" % (cmd, text))
    return regions, int(total.group(1)), res


def counted(cmd):
    """The instructions cmd executes, and (exit status, stdout).  A native
    program counts whole (its start-up and exit are a few hundred
    instructions); sfi-run marks the domain call (sfi-run.rs), so a
    sandboxed program counts from its entry to its return, host functions
    included, without the module load."""
    regions, total, res = plugin_counts(cmd)
    if len(regions) > 1:
        raise RuntimeError("instruction count of %r: %d regions" % (cmd, len(regions)))
    return (regions[0] if regions else total), res


def count_program(cmds):
    """Instructions of each command of cmds (native, stores, full), counted two at a time."""
    with ThreadPoolExecutor(max_workers=2) as ex:
        return dict(zip(cmds, ex.map(counted, cmds.values())))


def count_micro(rt, modules):
    """sfi-bench --count under QEMU user mode: the instructions of a null
    cross-domain call (region 1: sfi-bench's COUNT_CALLS calls, loop
    included) and of the verifier per byte of code (region 2: one pass over
    the modules)."""
    regions, _, (st, out) = plugin_counts([os.path.join(BIN, "sfi-bench"), "--count", rt] + modules)
    if st != 0 or len(regions) != 2:
        raise RuntimeError("sfi-bench --count: exit %d, %d regions" % (st, len(regions)))
    j = json.loads(out.decode().strip().splitlines()[-1])
    return regions[0] / j["calls"], regions[1] / j["code_bytes"]


def stats(samples, unit):
    return {"median": statistics.median(samples), "min": min(samples), "max": max(samples), "unit": unit, "runs": len(samples)}


UNITS = ("percent", "cycles", "MiB/s", "instructions")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


ONLY_ICOUNT = False
ONLY = []  # program names (--icount-only PROGRAM...)


def icount_report(results, icounts, failures):
    """--icount-only: the table of instruction counts, on stdout and in build/sfi/icount.md (not a results fragment)."""
    md = ["| program | native instructions | stores+jumps | full |", "|---|---:|---:|---:|"]
    for name, n in icounts.items():
        md.append("| %s | %d | %+.2f%% | %+.2f%% |" % (name, n["native"], (n["stores"] / n["native"] - 1) * 100,
                                                     (n["full"] / n["native"] - 1) * 100))
    g = [results.get("sfi.overhead.%s.geomean.instructions" % k, {}).get("median") for k in ("stores_jumps", "full")]
    if None not in g:
        md.append("| **geomean** (%d) | | **%+.2f%%** | **%+.2f%%** |" % (len(icounts), g[0], g[1]))
    with open(os.path.join(BUILD, "icount.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    print("\n".join(md))
    if failures:
        log("FAILED: %s" % ", ".join(failures))
        sys.exit(1)


def main():
    sfibuild.JOBS = 1  # per flavour; the flavours build in parallel
    # results: sfi.json (units percent, cycles, MiB/s only); other: the Markdown report only.
    results, other, rows, failures = {}, {}, [], []
    dirs = fetch(PKGS)
    corpus = make_corpus(dirs)
    log("corpus %s (%d bytes)" % (corpus, os.path.getsize(corpus)))
    ratios = {"stores": [], "full": []}      # per program: median of the paired ratios
    best_ratios = {"stores": [], "full": []}  # per program: fastest sandboxed run / fastest native run
    load_ratios = {"stores": [], "full": []}  # as ratios, but with the module load counted
    run_ratios = {"stores": [], "full": []}  # per program: the ratio of each run (run i native vs run i sandboxed)
    modules, built_progs = [], []
    progs = [p for p in programs(dirs) if not ONLY or p[0] in ONLY]
    # All programs are built first, so that the micro-benchmarks between the
    # programs' rounds verify the same modules every time.
    for i, (name, kind, srcs, cflags, arg) in enumerate(progs):
        log("[%d/%d] %s: building (native, stores, full)" % (i + 1, len(progs), name))
        try:
            # The three flavours are built side by side (one compiler each), so that
            # single-file programs like sqlite keep both cores busy.
            with ThreadPoolExecutor(max_workers=3) as ex:
                built = list(ex.map(lambda f: sfibuild.build(name, srcs, f, cflags, outdir=os.path.join(BUILD, "bench")), sfibuild.FLAVORS))
        except sfibuild.BuildError as e:
            log("BUILD FAILED for %s:\n%s" % (name, e))
            failures.append(name)
            continue
        exe = dict(zip(sfibuild.FLAVORS, built))
        modules += [exe["stores"], exe["full"]]
        built_progs.append((name, kind, exe, arg))
    if ONLY_ICOUNT:
        modules = []
    rt = None if ONLY_ICOUNT else sfibuild.build("rtmod", [os.path.join(SFI, "tests", "rt", "rtmod.c")], "stores", outdir=os.path.join(BUILD, "rt"), libc=False)
    micro = {}  # name -> (unit, samples), from all the micro-benchmark rounds

    def micro_round():
        """A few batches of each sfi-bench figure (call, pipe, verifier, load).
        One such round follows each program, so that the samples spread over
        the whole run: the shared host has slow periods of seconds to minutes,
        and a figure sampled in one window of a few seconds took whatever
        state the host was in then (docs/sfi.md, "Benchmarks")."""
        r = subprocess.run([os.path.join(BIN, "sfi-bench"), "--batches", str(MICRO_BATCHES), rt] + modules,
                           capture_output=True, text=True, check=True)
        for l in r.stdout.splitlines():
            j = json.loads(l)
            micro.setdefault(j["name"], (j["unit"], []))[1].extend(j["samples"])

    icounts = {}  # per program: {flavour: instructions}
    icount_ratios = {"stores": [], "full": []}

    def count_instructions(name, cmds, outputs):
        """The instruction counts of the three flavours; their outputs must be those of the timed runs."""
        got = count_program(cmds)
        if any(got[f][1] != outputs["native"] for f in got):
            log("OUTPUT MISMATCH under %s for %s" % (QEMU_USER, name))
            return False
        n = {f: got[f][0] for f in got}
        icounts[name] = n
        for f, key in (("stores", "stores_jumps"), ("full", "full")):
            r = n[f] / n["native"]
            icount_ratios[f].append(r)
            results["sfi.overhead.%s.%s.instructions" % (name, key)] = {"median": (r - 1) * 100, "min": (r - 1) * 100,
                                                                       "max": (r - 1) * 100, "unit": "percent", "runs": 1}
        for f, key in (("native", "native"), ("stores", "stores_jumps"), ("full", "full")):
            results["sfi.instructions.%s.%s" % (name, key)] = {"median": n[f], "min": n[f], "max": n[f],
                                                               "unit": "instructions", "runs": 1}
        return True

    for i, (name, kind, exe, arg) in enumerate(built_progs):
        args = [corpus if a == "corpus" else a for a in arg]
        cmds = {"native": [exe["native"]] + args,
                "stores": [os.path.join(BIN, "sfi-run"), exe["stores"]] + args,
                "full": [os.path.join(BIN, "sfi-run"), exe["full"]] + args}
        if ONLY_ICOUNT:
            ref = timed(cmds["native"])[2]
            if not count_instructions(name, cmds, {"native": ref}):
                failures.append(name)
                continue
            n = icounts[name]
            log("[%d/%d] %-8s native %d instructions  stores+jumps %+.2f%%  full %+.2f%%" % (
                i + 1, len(built_progs), name, n["native"], (n["stores"] / n["native"] - 1) * 100, (n["full"] / n["native"] - 1) * 100))
            continue
        times = {f: [] for f in cmds}
        with_load = {f: [] for f in cmds}
        outputs = {}
        for run in range(RUNS):
            # A round runs the three together on one CPU (timed_together).
            for f, (dt, wall, r, load) in timed_together(cmds).items():
                # The module load (verify, map, relocate) is reported separately
                # (sfi.load.throughput); sfi-run measures it and it is taken out here.
                times[f].append(dt - load)
                with_load[f].append(dt)
                outputs.setdefault(f, r)
        ok = outputs["stores"] == outputs["native"] and outputs["full"] == outputs["native"] and outputs["native"][0] == 0
        if not ok:
            log("OUTPUT MISMATCH for %s: native %r / stores %r / full %r" % (name, outputs["native"][:1], outputs["stores"][:1], outputs["full"][:1]))
            failures.append(name)
            continue
        if ICOUNT and not count_instructions(name, cmds, outputs):
            failures.append(name)
            continue
        nat = statistics.median(times["native"])
        line = {"name": name, "kind": kind, "native_s": nat, "spread": {}}
        other["sfi.time.%s.native" % name] = stats(times["native"], "s")
        for f, key in (("stores", "stores_jumps"), ("full", "full")):
            # Paired: round i's sandboxed time over round i's native time (they
            # ran interleaved on one CPU, on the same machine).
            per_run = [t / n for t, n in zip(times[f], times["native"])]
            ratio = statistics.median(per_run)
            load_ratios[f].append(statistics.median([t / n for t, n in zip(with_load[f], times["native"])]))
            ratios[f].append(ratio)
            run_ratios[f].append(per_run)
            # median: the median of the paired ratios; min/max: the extreme paired ratios.
            results["sfi.overhead.%s.%s" % (name, key)] = {"median": (ratio - 1) * 100, "min": (min(per_run) - 1) * 100,
                                                          "max": (max(per_run) - 1) * 100, "unit": "percent", "runs": RUNS}
            line["spread"][key] = ((min(per_run) - 1) * 100, (max(per_run) - 1) * 100)
            # Extra: the ratio of the fastest runs (the least disturbed).
            best = min(times[f]) / min(times["native"])
            best_ratios[f].append(best)
            results["sfi.overhead.%s.%s.best" % (name, key)] = {"median": (best - 1) * 100, "min": (best - 1) * 100,
                                                               "max": (best - 1) * 100, "unit": "percent", "runs": RUNS}
            other["sfi.time.%s.%s" % (name, key)] = stats(times[f], "s")
            line[key] = (ratio - 1) * 100
            line[key + "_best"] = (best - 1) * 100
        ic = ""
        if name in icounts:
            n = icounts[name]
            ic = "; instructions %+.2f%% / %+.2f%%" % ((n["stores"] / n["native"] - 1) * 100, (n["full"] / n["native"] - 1) * 100)
        log("[%d/%d] %-8s native %.3f s  stores+jumps %+.1f%%  full %+.1f%%%s  (output equal)" % (i + 1, len(built_progs), name, nat, line["stores_jumps"], line["full"], ic))
        rows.append(line)
        micro_round()
    for f, key in (("stores", "stores_jumps"), ("full", "full")):
        if icount_ratios[f]:
            g = (geomean(icount_ratios[f]) - 1) * 100
            results["sfi.overhead.%s.geomean.instructions" % key] = {"median": g, "min": g, "max": g, "unit": "percent", "runs": 1}
    if ONLY_ICOUNT:
        icount_report(results, icounts, failures)
        return
    for f, key in (("stores", "stores_jumps"), ("full", "full")):
        if ratios[f]:
            # median: geomean of the programs' median ratios; min/max: over runs, the geomean of run i's ratios.
            per_run = [geomean([r[i] for r in run_ratios[f]]) for i in range(RUNS)]
            results["sfi.overhead.%s.geomean" % key] = {"median": (geomean(ratios[f]) - 1) * 100, "min": (min(per_run) - 1) * 100,
                                                      "max": (max(per_run) - 1) * 100, "unit": "percent", "runs": RUNS}
            b = (geomean(best_ratios[f]) - 1) * 100
            results["sfi.overhead.%s.geomean.best" % key] = {"median": b, "min": b, "max": b, "unit": "percent", "runs": RUNS}
            b = (geomean(load_ratios[f]) - 1) * 100
            results["sfi.overhead.%s.geomean.with_load" % key] = {"median": b, "min": b, "max": b, "unit": "percent", "runs": RUNS}
    if not micro:
        micro_round()
    log("micro-benchmarks (sfi-bench: call, pipe, verifier, load): %d samples each, from %d rounds spread over the run"
        % (len(micro["sfi.verify.throughput"][1]), len(micro["sfi.verify.throughput"][1]) // MICRO_BATCHES))
    for name, (unit, samples) in micro.items():
        (results if unit in UNITS else other)[name] = stats(samples, unit)
    if ICOUNT:
        per_call, per_byte = count_micro(rt, modules)
        results["sfi.call.roundtrip.instructions"] = {"median": per_call, "min": per_call, "max": per_call, "unit": "instructions", "runs": 1}
        results["sfi.verify.instructions_per_byte"] = {"median": per_byte, "min": per_byte, "max": per_byte, "unit": "instructions", "runs": 1}
        log("instructions: null cross-domain call %.1f, verifier %.1f per byte of code" % (per_call, per_byte))
    call, pipe = results["sfi.call.roundtrip"]["median"], results["sfi.pipe.roundtrip"]["median"]
    other["sfi.call.pipe_over_call"] = {"median": pipe / call, "min": pipe / call, "max": pipe / call, "unit": "ratio", "runs": 1}
    assert all(v["unit"] in UNITS for v in results.values())
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "sfi.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    md = ["# SFI benchmarks", "", "%d rounds; each round runs native, stores+jumps and full together, pinned to one CPU, so that "
          "the scheduler interleaves them and all three see the same machine.  Overhead = median "
          "over rounds of (sandboxed CPU time / native CPU time of the same round) - 1 (min..max: the extreme rounds); CPU time = user + system of the child, "
          "for sfi-run without the module load (verify + map, measured by sfi-run; see sfi.load.throughput and the *.geomean.with_load figures).  "
          "Same mini libc for all.  *best*: fastest sandboxed run over fastest native run.  *Instructions*: executed, counted once "
          "per flavour under QEMU user mode (%s) with the instruction-counting plugin (tools/icount-plugin); native: the whole "
          "program; sandboxed: sfi-run's domain call, host functions included, without the module load; the same on every run "
          "and under any load." % (RUNS, QEMU_USER), "",
          "| program | kind | native CPU (s) | stores+jumps | (min..max) | full protection | (min..max) | best: stores+jumps | best: full "
          "| native instructions | instructions: stores+jumps | instructions: full |",
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for l in rows:
        sj, fu = l["spread"]["stores_jumps"], l["spread"]["full"]
        n = icounts.get(l["name"])
        ic = ("%d | %+.2f%% | %+.2f%%" % (n["native"], (n["stores"] / n["native"] - 1) * 100, (n["full"] / n["native"] - 1) * 100)
              if n else "— | — | —")
        md.append("| %s | %s | %.3f | %+.1f%% | %+.1f..%+.1f | %+.1f%% | %+.1f..%+.1f | %+.1f%% | %+.1f%% | %s |" % (
            l["name"], l["kind"], l["native_s"], l["stores_jumps"], sj[0], sj[1], l["full"], fu[0], fu[1], l["stores_jumps_best"], l["full_best"], ic))
    g = [results.get("sfi.overhead.%s.geomean" % k, {}).get("median") for k in ("stores_jumps", "full")]
    if None not in g:
        gb = [results["sfi.overhead.%s.geomean.best" % k]["median"] for k in ("stores_jumps", "full")]
        gi = [results.get("sfi.overhead.%s.geomean.instructions" % k, {}).get("median") for k in ("stores_jumps", "full")]
        gis = "**%+.2f%%** | **%+.2f%%**" % tuple(gi) if None not in gi else "— | —"
        md.append("| **geomean** (%d programs) | | | **%+.1f%%** | | **%+.1f%%** | | %+.1f%% | %+.1f%% | %s |" % (len(rows), g[0], g[1], gb[0], gb[1], gis))
        gl = [results["sfi.overhead.%s.geomean.with_load" % k]["median"] for k in ("stores_jumps", "full")]
        md += ["", "Geomean with the module load counted: stores+jumps %+.1f%%, full %+.1f%%." % (gl[0], gl[1])]
    md += ["", "| figure | median | min | max | unit |", "|---|---:|---:|---:|---|"]
    for k in sorted(set(results) | set(other)):
        if not k.startswith(("sfi.overhead", "sfi.time", "sfi.instructions")):
            v = results.get(k) or other[k]
            md.append("| %s | %.2f | %.2f | %.2f | %s |" % (k, v["median"], v["min"], v["max"], v["unit"]))
    with open(os.path.join(OUT, "sfi.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    log("wrote %s and sfi.md" % os.path.join(OUT, "sfi.json"))
    print("\n".join(md))
    if failures:
        log("FAILED: %s" % ", ".join(failures))
        sys.exit(1)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--icount-only"]:
        ONLY_ICOUNT, ONLY = True, sys.argv[2:]
    main()
