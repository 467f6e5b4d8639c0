#!/usr/bin/env python3
"""Builds the workhorse's root file system archive (ustar, see
user/workhorse/src/tar.rs):

    mkrootfs.py OUT.tar BUSYBOX TESTFILE...

/bin/busybox (Debian's busybox-static, unmodified) with a symbolic link
per applet (the list comes from running `busybox --list` on the host),
/tests/ with the conformance programs and scripts, and empty /tmp, /dev,
/proc, /root, /etc."""
import io
import subprocess
import sys
import tarfile
from pathlib import Path


def add(tar, name, data=None, mode=0o755, kind=tarfile.REGTYPE, link=""):
    if len(name) >= 100:
        raise SystemExit(f"mkrootfs: name too long for ustar without prefix: {name}")
    info = tarfile.TarInfo(name)
    info.mode = mode
    info.type = kind
    info.linkname = link
    info.mtime = 0
    info.uname = info.gname = "root"
    info.size = len(data) if data is not None else 0
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    out, busybox, tests = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    applets = subprocess.run([str(busybox), "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for d in ["bin", "tmp", "dev", "proc", "root", "etc", "tests"]:
            add(tar, d + "/", kind=tarfile.DIRTYPE)
        add(tar, "bin/busybox", busybox.read_bytes())
        for a in applets:
            if a != "busybox":
                add(tar, "bin/" + a, kind=tarfile.SYMTYPE, link="busybox", mode=0o777)
        add(tar, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", mode=0o644)
        add(tar, "etc/group", b"root:x:0:\n", mode=0o644)
        for t in tests:
            p = Path(t)
            add(tar, "tests/" + p.name, p.read_bytes(), mode=0o755)
    print(f"  ROOTFS  {out}: busybox with {len(applets)} applets, {len(tests)} test files")


if __name__ == "__main__":
    main()
