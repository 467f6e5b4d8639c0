#!/usr/bin/env python3
"""busybox's own test suite (testsuite/ of Debian's busybox source package,
version pinned below, its hashes those of Debian's .dsc) run by Debian's
busybox-static on the host and on Keep's workhorse (docs/workhorse.md,
"busybox's test suite"):

    test_busybox.py            fetch (once), run on both, compare
    test_busybox.py --host     the host run only

Both runs use nothing but busybox: on the host the suite's `#!/bin/sh`
scripts are pointed at busybox's sh and PATH holds only its applets, as on
Keep, where /bin/sh is busybox.  The runs print `PASS:`/`FAIL:` per test;
the script prints both counts and every test whose result differs.  A
test that passes on the host and fails on Keep is a failure of this test
unless it is in KNOWN (each explained in docs/workhorse.md); a KNOWN one
that passes is reported so the list stays true.  runtest runs once per
applet on both (on Keep each at the keep> prompt, stopped after STALL
seconds); two of bc's tests are left out on both (SLOW).  About 5
minutes: `make test-long`."""
import gzip
import hashlib
import io
import os
import re
import shutil
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
WORK = B / "busybox-testsuite"
BUSYBOX = B / "linux" / "busybox" / "bin" / "busybox"
VERSION = "1:1.35.0-4+deb12u1"
# Debian 12's busybox source, the one its busybox-static is built from
# (busybox_1.35.0-4+deb12u1.dsc, Checksums-Sha256).
SOURCES = {
    "busybox_1.35.0.orig.tar.bz2": "faeeb244c35a348a334f4a59e44626ee870fb07b6884d68c10ae8bc19f83a694",
    "busybox_1.35.0-4+deb12u1.debian.tar.xz": "1cacbe095ef4880ea7879933c8e3c5075d1527cd6fbcb626a9b41e5daefd1a46",
}
# Tests that pass on the host and not on Keep, and why (docs/workhorse.md
# says the same).
KNOWN = {
    "start-stop-daemon with both -x and -a":
        "the test says it fails where /bin/false is busybox's, as on Keep (on the host it is coreutils')",
}
# Tests left out on both sides (reported SKIPPED by the suite itself), and
# why: each pipes about 3 million lines through two bc processes, 14 s on
# the host and over 30 minutes under QEMU's emulation.
SLOW = {"bc.tests": ["bc parsing of numbers", "bc printing of numbers"]}


def patched(name, data):
    """A test file as both runs get it: each SLOW test preceded by SKIP=1,
    and SKIP cleared again before the next test (testing.sh keeps it)."""
    for test in SLOW.get(name, []):
        line = f'testing "{test}"'.encode()
        at = data.find(line)
        if at < 0:
            raise SystemExit(f"test_busybox: {name} has no test {test!r} any more")
        nxt = data.find(b"testing ", at + len(line))
        if nxt >= 0:
            nxt = data.rfind(b"\n", 0, nxt) + 1
            data = data[:nxt] + b"SKIP=\n" + data[nxt:]
        data = data[:at] + b"SKIP=1\n" + data[at:]
    return data


# Seconds an applet's tests may take on Keep before they are stopped.
STALL = 600


def log(msg):
    print("test_busybox: " + msg, flush=True)


def apt_source():
    """`apt-get source --download-only` of the pinned version through a
    private deb-src configuration (build/busybox-testsuite/apt), as the SFI
    tests fetch theirs: apt checks the .dsc's signature and the files'
    hashes; the SOURCES hashes are checked again below."""
    apt = WORK / "apt"
    (apt / "lists" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "cache" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    (apt / "sources.list").write_text(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main\n"
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian-security "
        "bookworm-security main\n")
    opts = ["-o", f"Dir::Etc::SourceList={apt / 'sources.list'}", "-o", "Dir::Etc::SourceParts=/dev/null",
            "-o", f"Dir::State::Lists={apt / 'lists'}", "-o", f"Dir::Cache={apt / 'cache'}"]
    if not list((apt / "lists").glob("*Sources*")):
        log("apt-get update (private deb-src configuration in build/busybox-testsuite/apt)")
        subprocess.run(["apt-get", *opts, "update"], check=True, stdout=subprocess.DEVNULL)
    log(f"apt-get source --download-only busybox={VERSION}")
    r = subprocess.run(["apt-get", *opts, "source", "--download-only", f"busybox={VERSION}"], cwd=WORK)
    if r.returncode != 0:
        raise SystemExit(f"test_busybox: busybox {VERSION}'s source is not on Debian's mirror any more: "
                         "update VERSION and SOURCES (and busybox-static in tools/fetch-busybox.sh)")


def fetch():
    """The testsuite directory and busybox-static's .config, fetched and
    checked once."""
    WORK.mkdir(parents=True, exist_ok=True)
    if not all((WORK / name).exists() for name in SOURCES):
        apt_source()
    for name, sha in SOURCES.items():
        path = WORK / name
        got = hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "nothing"
        if got != sha:
            path.unlink(missing_ok=True)
            raise SystemExit(f"test_busybox: {name}: sha256 {got}, want {sha} (removed; run again)")
    src = WORK / "src"
    if not (src / "testsuite" / "runtest").exists():
        shutil.rmtree(src, ignore_errors=True)
        src.mkdir()
        with tarfile.open(WORK / "busybox_1.35.0.orig.tar.bz2") as t:
            t.extractall(src, members=[m for m in t.getmembers() if "/testsuite/" in m.name + "/"])
        (src / "busybox-1.35.0" / "testsuite").rename(src / "testsuite")
        with tarfile.open(WORK / "busybox_1.35.0-4+deb12u1.debian.tar.xz") as t:
            cfg = t.extractfile("debian/config/pkg/static").read()
        (src / "config").write_bytes(cfg)
    return src / "testsuite", src / "config"


def results(text):
    """{test name: 'PASS' | 'FAIL' | 'SKIPPED' | 'UNTESTED' | 'HUNG' (an applet
    whose tests were stopped, Keep only)}."""
    out = {}
    for m in re.finditer(r"^(PASS|FAIL|SKIPPED|UNTESTED|HUNG): (.*?)\s*$", text, re.M):
        name, n = m.group(2), 2
        while name in out:  # a few names repeat: the second is "NAME #2"
            name, n = f"{m.group(2)} #{n}", n + 1
        out[name] = m.group(1)
    return out


def run_host(testsuite, config, applets):
    d = WORK / "host"
    shutil.rmtree(d, ignore_errors=True)
    (d / "bin").mkdir(parents=True)
    (d / "applets").mkdir()
    shutil.copy(BUSYBOX, d / "bin" / "busybox")
    shutil.copy(config, d / "bin" / ".config")
    bb = d / "bin" / "busybox"
    for a in subprocess.run([str(bb), "--list"], capture_output=True, text=True, check=True).stdout.split():
        (d / "applets" / a).symlink_to(bb)
    shutil.copytree(testsuite, d / "testsuite", symlinks=True)
    for f in (d / "testsuite").rglob("*"):
        if f.is_file() and not f.is_symlink():
            data = f.read_bytes()
            if data.startswith(b"#!/bin/sh"):
                data = b"#!" + str(bb).encode() + b" sh" + data[len(b"#!/bin/sh"):]
            f.write_bytes(patched(f.name, data))
    env = {"PATH": str(d / "applets"), "HOME": "/tmp", "bindir": str(d / "bin"), "tsdir": str(d / "testsuite")}
    text = ""
    for applet in applets:  # one runtest per applet, as on Keep
        r = subprocess.run([str(bb), "sh", "./runtest", applet], cwd=d / "testsuite", env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, timeout=STALL)
        text += r.stdout.decode(errors="replace")
    (WORK / "host.txt").write_text(text)
    return results(text)


def keep_image(testsuite, config):
    """build/boot.img with the workhorse's root file system grown by
    /testsuite, /bb (busybox and its .config) and /bb-applets (a link per
    applet), as WORK/boot.img."""
    raw = io.BytesIO()
    names = set()
    with tarfile.open(B / "linux-rootfs.tar.gz") as inp, tarfile.open(fileobj=raw, mode="w",
                                                                      format=tarfile.USTAR_FORMAT) as out:
        for m in inp.getmembers():
            names.add(m.name)
            out.addfile(m, inp.extractfile(m) if m.isfile() else None)
        mkrootfs.add(out, names, "bb/", kind=tarfile.DIRTYPE)
        mkrootfs.add(out, names, "bb/busybox", kind=tarfile.SYMTYPE, link="/bin/busybox", mode=0o777)
        mkrootfs.add(out, names, "bb/.config", config.read_bytes(), mode=0o644)
        # PATH: busybox's applets only, as on the host (/bin has bash too).
        mkrootfs.add(out, names, "bb-applets/", kind=tarfile.DIRTYPE)
        for a in subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split():
            mkrootfs.add(out, names, f"bb-applets/{a}", kind=tarfile.SYMTYPE, link="/bin/busybox", mode=0o777)
        mkrootfs.add(out, names, "testsuite/", kind=tarfile.DIRTYPE)
        for f in sorted(testsuite.rglob("*")):
            name = "testsuite/" + str(f.relative_to(testsuite))
            if f.is_symlink():
                mkrootfs.add(out, names, name, kind=tarfile.SYMTYPE, link=os.readlink(f), mode=0o777)
            elif f.is_dir():
                mkrootfs.add(out, names, name + "/", kind=tarfile.DIRTYPE)
            else:
                mkrootfs.add(out, names, name, patched(f.name, f.read_bytes()), mode=f.stat().st_mode & 0o777)
    rootfs = gzip.compress(raw.getvalue(), compresslevel=6, mtime=0)
    img = (B / "boot.img").read_bytes()
    entries = [(name, rootfs if name == "linux-rootfs.tar.gz" else data) for name, data in mkimage.entries(img)]
    path = WORK / "boot.img"
    path.write_bytes(mkimage.build(entries))
    return path


def applets_with_tests(testsuite):
    """The applets runtest would test (busybox's, with a directory of
    old-style tests or an APPLET.tests script), in runtest's order."""
    names = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    return [a for a in ["busybox"] + sorted(set(names) - {"busybox"})
            if (testsuite / a).is_dir() or (testsuite / f"{a}.tests").is_file()]


def run_keep(image, applets):
    """runtest once per applet at the keep> prompt; an applet whose tests
    have not finished after STALL seconds is stopped with Ctrl-C and
    reported as `HUNG: applet` (a failure unless KNOWN)."""
    g = Guest(image=image)
    text = ""
    try:
        if not g.expect(PROMPT, 120):
            raise SystemExit("test_busybox: no keep> prompt")
        for i, applet in enumerate(applets):
            began = time.monotonic()
            # As on the host: busybox's applets only in PATH, no terminal
            # as stdin.
            m = g.send(f"linux sh -c 'cd /testsuite && PATH=/bb-applets HOME=/tmp bindir=/bb tsdir=/testsuite "
                       f"sh ./runtest {applet} </dev/null; echo runtest-done'")
            if not g.expect(b"runtest-done\r\n", STALL, m):
                g.send_keys(b"\x03")
                g.expect(b"\n" + PROMPT, 60, m)
                g.out += f"\nHUNG: {applet}\n".encode()
            else:
                g.expect(b"\n" + PROMPT, 60, m)
            out = g.out[m:].decode(errors="replace").replace("\r", "")
            text += out
            (WORK / "keep.txt").write_text(text)
            r = results(out)
            log(f"keep {i + 1}/{len(applets)} {applet}: {sum(v == 'PASS' for v in r.values())} passed, "
                f"{sum(v in ('FAIL', 'HUNG') for v in r.values())} failed, {time.monotonic() - began:.0f} s")
    finally:
        g.p.kill()
    return results(text)


def main():
    testsuite, config = fetch()
    log("running the suite on the host")
    applets = applets_with_tests(testsuite)
    host = run_host(testsuite, config, applets)
    count = lambda r: sum(1 for v in r.values() if v == "PASS")  # noqa: E731
    log(f"host: {count(host)} passed, {sum(1 for v in host.values() if v == 'FAIL')} failed, {len(host)} results")
    if "--host" in sys.argv:
        return 0
    log("running the suite on Keep (long)")
    keep = run_keep(keep_image(testsuite, config), applets)
    log(f"keep: {count(keep)} passed, {sum(1 for v in keep.values() if v == 'FAIL')} failed, {len(keep)} results")
    bad = []
    for name in sorted(set(host) | set(keep)):
        h, k = host.get(name, "missing"), keep.get(name, "missing")
        if h == k:
            continue
        why = KNOWN.get(name)
        print(f"  {'known' if why else 'DIFF '} {name}: host {h}, keep {k}" + (f" ({why})" if why else ""))
        if h == "PASS" and not why:
            bad.append(name)
    for name in sorted(KNOWN):
        if keep.get(name) == "PASS":
            print(f"  note: {name} is listed as known but passes on Keep now")
    print(f"test_busybox: host {count(host)} passed, keep {count(keep)} passed; "
          + ("all differences explained" if not bad else f"{len(bad)} unexplained failures on Keep"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
