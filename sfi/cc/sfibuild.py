"""Build helpers shared by the tests and the benchmarks: compile C programs
three ways (native, sandboxed stores+jumps, sandboxed full) against the same
mini libc."""
import hashlib
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

SFI = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(SFI)
BUILD = os.path.join(ROOT, "build", "sfi")
SFICC = os.path.join(SFI, "cc", "sfi-cc")
LIBC = os.path.join(SFI, "libc")
GCCINC = subprocess.run(["gcc", "-print-file-name=include"], capture_output=True, text=True).stdout.strip()
INC = ["-nostdinc", "-isystem", os.path.join(LIBC, "include"), "-isystem", GCCINC]
FLAVORS = ("native", "stores", "full")
JOBS = int(os.environ.get("SFI_JOBS", "2"))


class BuildError(Exception):
    pass


def sh(cmd, cwd=None):
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if r.returncode:
        raise BuildError("%s\n%s%s" % (" ".join(cmd), r.stdout[-3000:], r.stderr[-3000:]))
    return r.stdout


def compiler(flavor):
    if flavor == "native":
        return ["gcc"]
    return [SFICC] + (["--full"] if flavor == "full" else [])


def stale(out, deps):
    if not os.path.exists(out):
        return True
    t = os.path.getmtime(out)
    return any(os.path.getmtime(d) > t for d in deps)


def compile_one(src, obj, flavor, cflags, deps=()):
    if not stale(obj, [src, SFICC, os.path.join(SFI, "cc", "sficc.py")] + list(deps)):
        return obj
    os.makedirs(os.path.dirname(obj), exist_ok=True)
    if src.endswith(".s") and flavor == "native":
        sh(["gcc", "-c", "-o", obj, src])
    elif src.endswith(".s"):
        sh(compiler(flavor) + ["-c", "-o", obj, src])
    else:
        sh(compiler(flavor) + ["-O2"] + INC + cflags + ["-c", "-o", obj, src])
    return obj


def compile_many(jobs_list):
    with ThreadPoolExecutor(max_workers=JOBS) as ex:
        return list(ex.map(lambda a: compile_one(*a), jobs_list))


def libc_objs(flavor):
    srcs = ["libc.c", "start.c", "setjmp.s"] + (["host_native.c"] if flavor == "native" else [])
    headers = [os.path.join(LIBC, "include", h) for h in os.listdir(os.path.join(LIBC, "include")) if h.endswith(".h")]
    jobs = [(os.path.join(LIBC, s), os.path.join(BUILD, "libc", flavor, s + ".o"), flavor, [], headers) for s in srcs]
    return compile_many(jobs)


def build(name, sources, flavor, cflags=(), outdir=None, libc=True):
    """Builds `sources` (C or .s) for `flavor`; returns the native executable or module path."""
    outdir = outdir or os.path.join(BUILD, "progs")
    # Objects are kept per set of flags, so that changing the flags rebuilds.
    tag = hashlib.sha1(" ".join(cflags).encode()).hexdigest()[:8]
    objdir = os.path.join(outdir, "obj", name, flavor + "-" + tag)
    jobs = []
    for s in sources:
        base = os.path.splitext(os.path.basename(s))[0]
        jobs.append((s, os.path.join(objdir, base + ".o"), flavor, list(cflags)))
    objs = compile_many(jobs) + (libc_objs(flavor) if libc else [])
    out = os.path.join(outdir, name + ("" if flavor == "native" else ".%s.sfi" % flavor))
    if stale(out, objs):
        if flavor == "native":
            sh(["gcc", "-nostdlib", "-static", "-o", out] + objs)
        else:
            sh(compiler(flavor) + ["-o", out] + objs)
    return out
