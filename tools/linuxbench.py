#!/usr/bin/env python3
"""The Linux side of the EROS-style comparison (`make bench`;
docs/performance.md, "Against Linux").

Boots Debian's own Linux kernel (the `linux-image-amd64` package of this
machine's apt sources, fetched with `apt-get download` and cached in
build/linuxbench/) under exactly the QEMU flags of Keep's suite
(qemu.base_cmd: q35, 512 MiB, TCG with `-cpu max`, `-icount
shift=0,sleep=off`; the isa-debug-exit device is there but unused), with an
initramfs whose /init is tools/linuxbench/linuxbench.c built static.  The
guest measures the Linux counterparts of Keep's null system call, process
switch, user-level-pager page fault, exception handler and heap growth the
way Keep's suite does (docs/performance.md) and prints them; this script
writes them as build/bench/linux.json, a fragment that tools/bench.py merges
into results.json and compares.  A second boot, the I/O boot
(linuxio.c), measures the I/O paths and runs the workhorse's busybox and
Python workloads (busybench.sh, pybench.sh) on the workhorse's own root
file system, written as build/bench/linux-io.json.

If the kernel cannot be had (no apt source), it says so and writes nothing:
the comparison is then missing from the results, not faked.
    tools/linuxbench.py [--timeout S]"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402  (the one place that knows the QEMU command line)
import icount  # noqa: E402  (the instruction-counting plugin's host side)
import netpeer  # noqa: E402  (the host's side of the network benchmarks)

ROOT = qemu.ROOT
WORK = ROOT / "build" / "linuxbench"
OUT = ROOT / "build" / "bench"
SOURCES = [ROOT / "tools" / "linuxbench" / n for n in ("linuxbench.c", "linuxio.c", "linuxio.h")]
# Debian's virtio drivers are modules: the I/O boot loads these (linuxio.c
# names the order), taken from the same package as the kernel.
# The workhorse's busybox (Debian's busybox-static, make image fetches it).
BUSYBOX = ROOT / "build" / "linux" / "busybox" / "bin" / "busybox"
# The workhorse's root file system (tools/mkrootfs.py: busybox and its
# applet links, Debian's python3.11 with its standard library and byte code,
# the shared libraries, /etc, the programs and scripts of
# user/servers/workhorse/tests in /tests): the I/O boot's initramfs holds
# all of it but the conformance programs, so the workloads run the same
# files on both sides.
ROOTFS = ROOT / "build" / "linux-rootfs.tar.gz"
# What the I/O boot keeps of /tests: the workloads' runner and scripts.
WORKLOADS = ["benchrun", "busybench.sh", "pybench.sh", "pybench.py"]
MODULES = ["virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev", "virtio_pci",
           "virtio_blk", "failover", "net_failover", "virtio_net"]
LINE_RE = re.compile(r"linuxbench: (\{.*\})$")


def log(msg):
    print(f"linuxbench.py: {msg}", flush=True)


def kernel():
    """The vmlinuz of Debian's current linux-image-amd64 and its virtio
    modules (build/linuxbench/modules/), fetched once."""
    cached = sorted(WORK.glob("vmlinuz-*"))
    if cached and all((WORK / "modules" / f"{m}.ko").exists() for m in MODULES):
        return cached[-1]
    dep = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True, text=True)
    pkg = re.search(r"Depends: (linux-image-[0-9]\S*)", dep.stdout)
    if not pkg:
        return None
    log(f"fetching {pkg.group(1)} (apt-get download, about 70 MB, once)")
    WORK.mkdir(parents=True, exist_ok=True)
    got = subprocess.run(["apt-get", "download", pkg.group(1)], cwd=WORK, capture_output=True, text=True)
    debs = sorted(WORK.glob(f"{pkg.group(1)}_*.deb"))
    if got.returncode != 0 or not debs:
        log(f"apt-get download failed: {got.stderr.strip()[-300:]}")
        return None
    tmp = WORK / "deb"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    tar = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", str(debs[-1])], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tmp), "--wildcards", "./boot/vmlinuz-*"]
                   + [f"./lib/modules/*/{m}.ko" for m in MODULES],
                   stdin=tar.stdout, check=True)
    tar.wait()
    for v in (tmp / "boot").glob("vmlinuz-*"):
        shutil.move(str(v), WORK / v.name)
    (WORK / "modules").mkdir(exist_ok=True)
    for ko in tmp.glob("lib/modules/*/kernel/**/*.ko"):
        shutil.move(str(ko), WORK / "modules" / ko.name)
    shutil.rmtree(tmp)
    for d in debs:
        d.unlink()
    cached = sorted(WORK.glob("vmlinuz-*"))
    return cached[-1] if cached else None


def cpio_newc(entries):
    """An initramfs: (name, mode, data, (major, minor)) in the newc format."""
    out = bytearray()
    for ino, (name, mode, data, dev) in enumerate(entries + [("TRAILER!!!", 0, b"", (0, 0))], 1):
        nm = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, dev[0], dev[1], len(nm), 0]
        out += b"070701" + b"".join(b"%08X" % f for f in fields) + nm
        out += b"\0" * (-len(out) % 4) + data
        out += b"\0" * (-len(out) % 4)
    return bytes(out)


def rootfs_entries():
    """The workhorse's root file system, of /tests only WORKLOADS, as
    initramfs entries."""
    import tarfile
    kinds = {tarfile.DIRTYPE: 0o040000, tarfile.REGTYPE: 0o100000, tarfile.SYMTYPE: 0o120000}
    entries = []
    with tarfile.open(ROOTFS) as tar:
        for m in tar:
            name = m.name.rstrip("/")
            if name.startswith("tests/") and name.removeprefix("tests/") not in WORKLOADS:
                continue
            if m.type not in kinds:
                sys.exit(f"linuxbench.py: {ROOTFS.relative_to(ROOT)}: {m.name} is neither a file, a directory "
                         f"nor a symbolic link")
            data = tar.extractfile(m).read() if m.isreg() else m.linkname.encode() if m.issym() else b""
            entries.append((name, kinds[m.type] | (m.mode & 0o7777), data, (0, 0)))
    missing = [n for n in WORKLOADS if not any(e[0] == f"tests/{n}" for e in entries)]
    if missing:
        sys.exit(f"linuxbench.py: {ROOTFS.relative_to(ROOT)} has no /tests/{', '.join(missing)} (make image)")
    return entries


def initramfs(io=False):
    """The initramfs: /init (linuxbench.c and linuxio.c, static), and for
    the I/O boot the workhorse's root file system (ROOTFS, with the
    workloads' runner and scripts in /tests) and the virtio modules as
    /lib/NAME.ko."""
    init = WORK / "init"
    if not init.exists() or init.stat().st_mtime < max(p.stat().st_mtime for p in SOURCES):
        WORK.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", str(init)]
                       + [str(p) for p in SOURCES if p.suffix == ".c"] + ["-lpthread"], check=True)
    entries = [
        ("dev", 0o40755, b"", (0, 0)),
        ("dev/console", 0o20600, b"", (5, 1)),  # the kernel opens it as init's stdout
        ("init", 0o100755, init.read_bytes(), (0, 0)),
        # linux.proc.fork_exec_wait runs busybox's true, as the workhorse's does.
        ("bin", 0o40755, b"", (0, 0)),
        ("bin/busybox", 0o100755, BUSYBOX.read_bytes(), (0, 0)),
        ("bin/true", 0o120777, b"busybox", (0, 0)),
        ("bin/sh", 0o120777, b"busybox", (0, 0)),
    ]
    if io:
        entries += [("lib", 0o40755, b"", (0, 0))]
        entries += [(f"lib/{m}.ko", 0o100644, (WORK / "modules" / f"{m}.ko").read_bytes(), (0, 0))
                    for m in MODULES]
        # The root file system first, each name once: an entry of this
        # list replaces the archive's of the same name in its place (so a
        # directory still comes before what it holds).
        merged = {e[0]: e for e in rootfs_entries()}
        for e in entries:
            merged[e[0]] = e
        entries = list(merged.values())
    img = WORK / ("initramfs-io.cpio" if io else "initramfs.cpio")
    img.write_bytes(cpio_newc(entries))
    return img


def boot(vmlinuz, img, timeout):
    # Keep's suite's flags (qemu.base_cmd: q35, 512 MiB, TCG, -cpu max, icount).
    cmd = qemu.base_cmd("tcg", "console=ttyS0 quiet panic=-1", icount=True, kernel=vmlinuz, initrd=img,
                         devices=False)
    cmd += ["-serial", "stdio"]
    log(f"booting {vmlinuz.name} under icount (about 20 s)")
    start = time.monotonic()
    results = {}

    def on_line(line):
        m = LINE_RE.search(line)
        if m:
            j = json.loads(m.group(1))
            s = j["samples"]
            results[j["name"]] = {"median": int(statistics.median(s)), "min": min(s), "max": max(s),
                                  "unit": j["unit"], "runs": len(s)}
            log(f"{j['name']:<32} median {results[j['name']]['median']:>7} {j['unit']} "
                f"(min {min(s)}, max {max(s)}, {time.monotonic() - start:5.1f} s)")
        elif "linuxbench:" in line or "Kernel panic" in line:
            log(line.strip())

    lines, _ = qemu.stream(cmd, timeout, WORK / "log.txt", on_line)
    if not any("linuxbench: done" in l for l in lines):
        sys.exit(f"linuxbench.py: FAIL: the guest did not finish (see {(WORK / 'log.txt').relative_to(ROOT)})")
    return results


def boot_io(vmlinuz, img, timeout, parts=""):
    """The I/O benchmarks (linuxio.c) on Keep's machine (qemu.device_args:
    the VT-d IOMMU, which Linux uses with intel_iommu=on, virtio-blk on
    build/disk.img and virtio-net, both iommu_platform=on), under -icount
    shift=0,sleep=on with the instruction-counting plugin.  cpuidle.off=1:
    Linux's idle then halts at once, as Keep's does; with cpuidle its menu
    governor takes the polling state for short waits, which executes
    instructions for as long as the device takes in real time (the 64 KiB
    read flipped between 0.69 and 1.42 million instructions per MiB from
    boot to boot)."""
    append = "console=ttyS0 quiet panic=-1 intel_iommu=on cpuidle.off=1 linuxbench=io"
    cmd = qemu.base_cmd("tcg", append + (f" linuxio={parts}" if parts else ""),
                         icount=icount.ICOUNT_IO, kernel=vmlinuz, initrd=img)
    cmd += ["-serial", "stdio"] + icount.args([])
    log(f"booting {vmlinuz.name} for the I/O benchmarks (icount plugin, sleep=on)")
    start = time.monotonic()
    regions = icount.Regions("linux-io", log)
    peer = netpeer.Peer(cmd, qemu.BENCH_PORT, log)

    def on_line(line):
        if peer.feed(line):
            pass
        elif regions.feed(line):
            if "bench-io:" in line:
                log(f"{line.strip()} ({time.monotonic() - start:5.1f} s)")
        elif "linuxbench:" in line or "Kernel panic" in line:
            log(line.strip())

    lines, _ = qemu.stream(cmd, timeout, WORK / "log-io.txt", on_line)
    if not any("linuxbench: done" in l for l in lines):
        sys.exit(f"linuxbench.py: FAIL: the I/O guest did not finish (see {(WORK / 'log-io.txt').relative_to(ROOT)})")
    return icount.results(regions, icount.unit_of)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--timeout", type=float, default=1200)
    ap.add_argument("--io-only", metavar="PARTS", nargs="?", const="",
                    help="only the I/O benchmarks (linux-io.json); PARTS: blk,net,busybox,python (default all)")
    a = ap.parse_args()
    if not shutil.which("qemu-system-x86_64"):
        sys.exit("linuxbench.py: qemu-system-x86_64 is missing (tools/install-deps.sh)")
    # A figure of an earlier run must not pass for one of this run.
    (OUT / "linux.json").unlink(missing_ok=True)
    (OUT / "linux-io.json").unlink(missing_ok=True)
    for f in (BUSYBOX, ROOTFS):
        if not f.exists():
            sys.exit(f"linuxbench.py: {f.relative_to(ROOT)} is missing (make image makes it)")
    vmlinuz = kernel()
    if vmlinuz is None:
        log("no Linux kernel to boot (no apt source for linux-image-amd64): the Linux comparison is not measured")
        return
    OUT.mkdir(parents=True, exist_ok=True)
    if a.io_only is None:
        results = boot(vmlinuz, initramfs(), a.timeout)
        (OUT / "linux.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
        log(f"{len(results)} results in {(OUT / 'linux.json').relative_to(ROOT)} ({vmlinuz.name})")
    qemu.check_built()  # the I/O boot uses Keep's disk image
    io = boot_io(vmlinuz, initramfs(io=True), a.timeout, a.io_only or "")
    (OUT / "linux-io.json").write_text(json.dumps(io, indent=1, sort_keys=True) + "\n")
    log(f"{len(io)} results in {(OUT / 'linux-io.json').relative_to(ROOT)}")


if __name__ == "__main__":
    main()
