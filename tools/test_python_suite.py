#!/usr/bin/env python3
"""Python's regression suite (Debian 12's libpython3.11-testsuite, the
version of the pinned python3.11, its hash pinned below) run by Debian's
python3.11 on the host and on Keep's workhorse, pass counts compared per
module and in sum (docs/workhorse.md, "Python's regression suite"):

    test_python_suite.py                 every module of the package
    test_python_suite.py MOD...          only these (test_os test_json ...)
    test_python_suite.py --subset        the representative subset (SUBSET)
    test_python_suite.py --host [MOD..]  the host's run only
    --out=NAME                           its files in build/python-suite/NAME

Both sides run the same files: the workhorse's root file system
(build/linux-rootfs.tar.gz) grown by the package's modules (their byte
code compiled on the host as fetch-linux-packages.sh compiles the
standard library) and by tools/python_suite_runner.py as /pysuite/run.py.
On the host that tree is extracted and run under chroot in a mount
namespace of its own (/dev and /proc of the host, a fresh tmpfs /tmp),
with the environment `linux` gives a program; on Keep from a boot image
with that root file system, one `linux python3 /pysuite/run.py MOD` at
the keep> prompt per module, stopped after STALL seconds (HUNG).  The
report goes to build/python-suite/report.md; a summary is printed.  A
module that passes fewer tests on Keep than on the host is a failure of
this script unless it is in KNOWN (each explained in docs/workhorse.md);
a KNOWN one that passes as many is reported so the list stays true."""
import gzip
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mkimage  # noqa: E402
import mkrootfs  # noqa: E402
from test_boot import Guest, PROMPT  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
B = ROOT / "build"
WORK = B / "python-suite"
PYROOT = B / "linux" / "root"  # the pinned packages, extracted (fetch-linux-packages.sh)
PACKAGE = "libpython3.11-testsuite"
VERSION = "3.11.2-6+deb12u9"  # python3.11's in tools/linux-packages.txt
SHA256 = "5dd0f85e950b344a51374e0ef68089e808f73c6c594c80e5232936b5c7ea4a28"
RUNNER = Path(__file__).resolve().parent / "python_suite_runner.py"
# What `linux` gives a program (user/servers/workhorse/src/main.rs).
ENV = {"PATH": "/bin:/usr/bin", "HOME": "/", "TERM": "vt100"}
# Seconds a module may take on Keep (and a third of it on the host).
STALL = 900
# The representative subset (--subset): the language and its builtins,
# data and text modules, files and directories, processes, signals,
# threads, select/poll, sockets, time.
SUBSET = [
    "test_bool", "test_int", "test_list", "test_dict", "test_set", "test_string", "test_types",
    "test_json", "test_csv", "test_base64", "test_binascii", "test_zlib", "test_bz2", "test_hashlib",
    "test_struct", "test_textwrap", "test_fnmatch", "test_glob", "test_shutil", "test_tempfile",
    "test_fileio", "test_stat", "test_genericpath", "test_posixpath", "test_os", "test_posix",
    "test_subprocess", "test_signal", "test_select", "test_poll", "test_epoll", "test_fork1",
    "test_wait4", "test_threading", "test_time", "test_socket", "test_fcntl", "test_mmap",
]
# Modules that pass fewer tests on Keep than on the host, and why
# (docs/workhorse.md says the same).
KNOWN = {
    "test_socket": "no IPv6, UDP-Lite, AF_VSOCK; SO_REUSEPORT, SO_PROTOCOL, if_nameindex, sethostname",
    "test_tempfile": "chmod(follow_symlinks=False): O_PATH|O_NOFOLLOW of a symbolic link is ELOOP",
    "test_signal": "see docs/workhorse.md",
    "test_posix": "sched_getscheduler(1) ESRCH, sched_rr_get_interval ENOSYS, linkat AT_SYMLINK_FOLLOW EINVAL",
    "test_mmap": "mappings near 2 and 4 GiB of a sparse file: the workhorse's memory limits",
    "test_os": "copy_file_range and splice ENOSYS",
    "test_shutil": "lzma's MemoryError, open(O_CREAT) of 'name/', statfs of /tmp with no used blocks",
    "test_fcntl": "F_NOTIFY EINVAL",
    "test_time": "clock_settime(CLOCK_MONOTONIC) EPERM, not EINVAL",
}


def log(msg):
    print("test_python_suite: " + msg, flush=True)


def fetch():
    """The package's .deb, fetched once with `apt-get download` (apt checks
    its hash against the signed lists) and its SHA-256 checked again;
    extracted into WORK/pkg."""
    debs = WORK / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    deb = debs / f"{PACKAGE}_{VERSION}_all.deb"
    if not deb.exists():
        log(f"apt-get download {PACKAGE}={VERSION}")
        r = subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=debs)
        if r.returncode != 0:
            sudo = [] if os.getuid() == 0 else ["sudo"]
            subprocess.run(sudo + ["apt-get", "update", "-q"], check=True)
            r = subprocess.run(["apt-get", "download", f"{PACKAGE}={VERSION}"], cwd=debs)
        if r.returncode != 0 or not deb.exists():
            raise SystemExit(f"test_python_suite: {PACKAGE} {VERSION} is not on Debian's mirror: update VERSION "
                             "and SHA256 with python3.11 in tools/linux-packages.txt")
    got = hashlib.sha256(deb.read_bytes()).hexdigest()
    if got != SHA256:
        deb.unlink()
        raise SystemExit(f"test_python_suite: {deb.name}: sha256 {got}, want {SHA256} (removed; run again)")
    pkg = WORK / "pkg"
    if not (pkg / "done").exists():
        shutil.rmtree(pkg, ignore_errors=True)
        subprocess.run(["dpkg-deb", "-x", str(deb), str(pkg)], check=True)
        # Byte code, as fetch-linux-packages.sh makes the standard library's
        # (unchecked-hash .pyc made by the packaged interpreter); the
        # modules of deliberately bad syntax fail, as in Debian's postinst.
        libs = f"{PYROOT}/lib/x86_64-linux-gnu:{PYROOT}/usr/lib/x86_64-linux-gnu"
        subprocess.run(["env", "-i", f"PYTHONHOME={PYROOT}/usr", "PYTHONDONTWRITEBYTECODE=1",
                        f"{PYROOT}/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", "--library-path", libs,
                        f"{PYROOT}/usr/bin/python3.11", "-m", "compileall", "-q", "-f", "-j", "0",
                        "--invalidation-mode", "unchecked-hash", "-s", str(pkg), "-p", "/",
                        str(pkg / "usr/lib/python3.11")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        (pkg / "done").write_text("")
    return pkg / "usr/lib/python3.11"


def modules(lib):
    """Every test module of the package, in regrtest's order (its
    findtests: test_*.py and test_* packages of the test directory)."""
    test = lib / "test"
    return sorted(p.stem if p.suffix == ".py" else p.name for p in test.iterdir()
                  if p.name.startswith("test_") and (p.suffix == ".py" or (p / "__init__.py").exists()))


def rootfs(lib):
    """The workhorse's root file system grown by the package's files under
    /usr/lib/python3.11 and the runner as /pysuite/run.py (names ustar
    cannot hold, a few .pyc, are left out: those modules compile at
    import), as WORK/rootfs.tar.gz."""
    raw = io.BytesIO()
    names = set()
    left_out = 0
    with tarfile.open(B / "linux-rootfs.tar.gz") as inp, tarfile.open(fileobj=raw, mode="w",
                                                                      format=tarfile.USTAR_FORMAT) as out:
        for m in inp.getmembers():
            names.add(m.name)
            out.addfile(m, inp.extractfile(m) if m.isfile() else None)
        top = lib.parent.parent.parent
        for dirpath, dirnames, filenames in os.walk(lib):
            dirnames.sort()
            for n in sorted(dirnames) + sorted(filenames):
                p = Path(dirpath) / n
                name = str(p.relative_to(top))
                if len(name) + (1 if p.is_dir() else 0) >= 100:
                    left_out += 1
                    continue
                if p.is_symlink():
                    mkrootfs.add(out, names, name, kind=tarfile.SYMTYPE, link=os.readlink(p), mode=0o777)
                elif p.is_dir():
                    mkrootfs.add(out, names, name + "/", kind=tarfile.DIRTYPE, mode=0o755)
                else:
                    mkrootfs.add(out, names, name, p.read_bytes(), mode=p.stat().st_mode & 0o777)
        mkrootfs.add(out, names, "pysuite/", kind=tarfile.DIRTYPE)
        mkrootfs.add(out, names, "pysuite/run.py", RUNNER.read_bytes(), mode=0o644)
    if left_out:
        log(f"{left_out} names too long for ustar left out (byte code compiled at import instead)")
    path = WORK / "rootfs.tar.gz"
    path.write_bytes(gzip.compress(raw.getvalue(), compresslevel=6, mtime=0))
    return path


def results(text):
    """{module: {'run':.., 'pass':.., ... , 'failed': [test ids]} or
    {'status': 'import-error' | 'HUNG' | 'missing'}}."""
    out = {}
    for line in text.replace("\r", "").splitlines():
        m = re.match(r"PYSUITE (\S+) run=(\d+) pass=(\d+) fail=(\d+) error=(\d+) skip=(\d+) xfail=(\d+) xpass=(\d+)", line)
        if m:
            out[m.group(1)] = dict(zip(["run", "pass", "fail", "error", "skip", "xfail", "xpass"],
                                       map(int, m.groups()[1:])), failed={}, skipped={}, status="ran")
            continue
        m = re.match(r"PYSUITE (\S+) import-error (.*)", line)
        if m:
            out[m.group(1)] = {"status": "import-error", "pass": 0, "why": m.group(2), "failed": {}}
            continue
        m = re.match(r"PYSUITE-(FAIL|SKIP) (\S+) (.*?)(?: :: (.*))?$", line)
        if m and m.group(2) in out:
            key = "failed" if m.group(1) == "FAIL" else "skipped"
            out[m.group(2)].setdefault(key, {})[m.group(3).strip()] = (m.group(4) or "").strip()
        m = re.match(r"PYSUITE-HUNG (\S+)", line)
        if m:
            out.setdefault(m.group(1), {"pass": 0, "failed": {}})["status"] = "HUNG"
    return out


def default_signals():
    """The host's run starts with every signal's default action, as a
    program `linux` starts on Keep (nohup or a shell's background job
    would leave SIGHUP or SIGINT ignored, inherited across exec)."""
    for sig in range(1, signal.NSIG):
        if sig not in (signal.SIGKILL, signal.SIGSTOP):
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass


def run_host(tree, mods):
    """Each module under chroot in a mount namespace of its own: the tree
    with the host's /dev and /proc and a fresh tmpfs /tmp."""
    host_root = WORK / "host-root"
    if not (host_root / "pysuite" / "run.py").exists() or \
            (host_root / "pysuite" / "run.py").read_bytes() != RUNNER.read_bytes() or \
            (host_root / "tree").exists() and (host_root / "tree").read_text() != str(tree.stat().st_mtime):
        shutil.rmtree(host_root, ignore_errors=True)
        host_root.mkdir(parents=True)
        with tarfile.open(tree) as t:
            t.extractall(host_root)
        (host_root / "tree").write_text(str(tree.stat().st_mtime))
    text = ""
    script = ('mount --make-rprivate / && mount --rbind /dev "$R/dev" && mount -t proc proc "$R/proc" && '
              'mount -t tmpfs tmpfs "$R/tmp" && exec chroot "$R" /bin/env -i PATH=/bin:/usr/bin HOME=/ '
              'TERM=vt100 /usr/bin/python3 /pysuite/run.py "$M"')
    for i, mod in enumerate(mods):
        began = time.monotonic()
        try:
            r = subprocess.run(["unshare", "--mount", "--fork", "--pid", "sh", "-c", script],
                               env={"R": str(host_root), "M": mod, "PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                               timeout=STALL // 3, preexec_fn=default_signals)
            out = r.stdout.decode(errors="replace")
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") + f"\nPYSUITE-HUNG {mod}\n"
        text += out
        r1 = results(out).get(mod, {})
        log(f"host {i + 1}/{len(mods)} {mod}: {r1.get('pass', 0)} passed, {r1.get('status', 'no result')}, "
            f"{time.monotonic() - began:.0f} s")
    (WORK / "host.txt").write_text(text)
    return results(text)


def keep_image(tree):
    img = (B / "boot.img").read_bytes()
    fs = tree.read_bytes()
    entries = [(name, fs if name == "linux-rootfs.tar.gz" else data) for name, data in mkimage.entries(img)]
    path = WORK / "boot.img"
    path.write_bytes(mkimage.build(entries))
    return path


def run_keep(image, mods):
    """One `linux python3 /pysuite/run.py MOD` at the keep> prompt per
    module; one not done after STALL seconds is stopped with Ctrl-C and
    reported HUNG.  A workhorse that ends (init restarts it) shows in the
    console and is reported."""
    g = Guest(image=image)
    text = ""
    try:
        if not g.expect(PROMPT, 180):
            raise SystemExit("test_python_suite: no keep> prompt")
        for i, mod in enumerate(mods):
            began = time.monotonic()
            m = g.send(f"linux python3 /pysuite/run.py {mod}")
            if not g.expect(f"PYSUITE-DONE {mod}".encode(), STALL, m):
                g.send_keys(b"\x03")
                g.out += f"\nPYSUITE-HUNG {mod}\n".encode()
            g.expect(b"\n" + PROMPT, 120, m)
            out = g.out[m:].decode(errors="replace").replace("\r", "")
            text += out
            (WORK / "keep.txt").write_text(text)
            r1 = results(out).get(mod, {})
            log(f"keep {i + 1}/{len(mods)} {mod}: {r1.get('pass', 0)} passed, {r1.get('status', 'no result')}, "
                f"{time.monotonic() - began:.0f} s")
            if "was killed; restarted" in out or "workhorse ended" in out or "panicked" in out:
                log(f"the workhorse ended during {mod}")
    finally:
        g.p.kill()
    return results(text)


def report(mods, host, keep, bad):
    hp = sum(host.get(m, {}).get("pass", 0) for m in mods)
    kp = sum(keep.get(m, {}).get("pass", 0) for m in mods)
    same = sum(1 for m in mods if host.get(m, {}).get("pass", 0) == keep.get(m, {}).get("pass", 0))
    lines = ["# Python's regression suite on Keep's workhorse and on the host", "",
             f"{PACKAGE} {VERSION}, {len(mods)} modules (tools/test_python_suite.py).", "",
             f"**Passed: host {hp}, Keep {kp}** ({100 * kp / hp if hp else 0:.1f}% of the host's); "
             f"{same} of {len(mods)} modules pass as many tests on both.", "",
             "| module | host run | host pass | Keep run | Keep pass | Keep status | differs |", "|---|---|---|---|---|---|---|"]
    for m in mods:
        h, k = host.get(m, {}), keep.get(m, {})
        d = h.get("pass", 0) - k.get("pass", 0)
        lines.append(f"| {m} | {h.get('run', '-')} | {h.get('pass', 0)} | {k.get('run', '-')} | {k.get('pass', 0)} | "
                     f"{k.get('status', 'missing')} | {'' if d == 0 else f'{-d:+d}' + (' known' if m in KNOWN else '')} |")
    lines += ["", "## Tests that pass on the host and not on Keep", ""]
    for m in mods:
        h, k = host.get(m, {}), keep.get(m, {})
        if k.get("status") != "ran" and h.get("status") == "ran":
            lines.append(f"- {m}: {k.get('status', 'missing')} {k.get('why', '')}".rstrip())
            continue
        for t in sorted(set(k.get("failed", {})) - set(h.get("failed", {}))):
            lines.append(f"- {m}: {t}: {k['failed'][t]}")
        for t in sorted(set(k.get("skipped", {})) - set(h.get("skipped", {}))):
            lines.append(f"- {m}: {t}: skipped on Keep: {k['skipped'][t]}")
    (WORK / "report.md").write_text("\n".join(lines) + "\n")
    return hp, kp, same


def main():
    global WORK
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    out = [a for a in sys.argv[1:] if a.startswith("--out=")]
    lib = fetch()
    every = modules(lib)
    mods = SUBSET if "--subset" in sys.argv else (args or every)
    if out:  # the runs' files (trees, image, outputs, report) in a folder of their own
        WORK = WORK / out[0].split("=", 1)[1]
        WORK.mkdir(parents=True, exist_ok=True)
    unknown = [m for m in mods if m not in every]
    if unknown:
        raise SystemExit(f"test_python_suite: no such module in {PACKAGE}: {' '.join(unknown)}")
    log(f"{len(mods)} of the package's {len(every)} modules")
    tree = rootfs(lib)
    log("the host's run (chroot in the workhorse's root file system)")
    host = run_host(tree, mods)
    if "--host" in sys.argv:
        hp = sum(host.get(m, {}).get("pass", 0) for m in mods)
        log(f"host: {hp} passed in {len(mods)} modules")
        return 0
    log("the run on Keep (long)")
    keep = run_keep(keep_image(tree), mods)
    bad = [m for m in mods if keep.get(m, {}).get("pass", 0) < host.get(m, {}).get("pass", 0) and m not in KNOWN]
    hp, kp, same = report(mods, host, keep, bad)
    for m in mods:
        h, k = host.get(m, {}).get("pass", 0), keep.get(m, {}).get("pass", 0)
        if h != k:
            print(f"  {'known' if m in KNOWN else 'DIFF '} {m}: host {h} passed, keep {k} passed"
                  f" ({keep.get(m, {}).get('status', 'missing')})" + (f": {KNOWN[m]}" if m in KNOWN else ""))
    for m in sorted(KNOWN):
        if m in mods and keep.get(m, {}).get("pass", 0) >= host.get(m, {}).get("pass", 0):
            print(f"  note: {m} is listed as known but passes as many on Keep now")
    print(f"test_python_suite: host {hp} passed, keep {kp} passed ({100 * kp / hp if hp else 0:.1f}%), "
          f"{same}/{len(mods)} modules equal; report in {WORK / 'report.md'}; "
          + ("all differences explained" if not bad else f"{len(bad)} modules unexplained"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
