#!/usr/bin/env python3
"""Builds the workhorse's root file system archive (ustar, see
user/servers/workhorse/src/tar.rs), gzip-compressed (the server inflates it when it
starts, docs/workhorse.md):

    mkrootfs.py OUT.tar.gz BUSYBOX PACKAGES TESTFILE...

/bin/busybox (Debian's busybox-static, unmodified) with a symbolic link
per applet (the list comes from running `busybox --list` on the host);
the files of the Debian packages extracted under PACKAGES (bash, python3.11
and its standard library, the shared libraries and ld.so, unmodified:
tools/fetch-linux-packages.sh) except their documentation (usr/share) and
glibc's character-set converters (gconv); /tests/ with the conformance
programs and scripts; /etc/passwd, group and hosts; and empty /tmp, /dev,
/dev/shm, /proc, /root."""
import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

# Left out of the packages: documentation, man pages, locales, lintian
# overrides (usr/share), and iconv's converters (8 MiB nobody here uses).
SKIP = ("usr/share", "usr/lib/x86_64-linux-gnu/gconv")


def add(tar, names, name, data=None, mode=0o755, kind=tarfile.REGTYPE, link=""):
    if len(name) >= 100:
        raise SystemExit(f"mkrootfs: name too long for ustar without prefix: {name}")
    if name in names:
        return
    names.add(name)
    info = tarfile.TarInfo(name)
    info.mode = mode
    info.type = kind
    info.linkname = link
    info.mtime = 0
    info.uname = info.gname = "root"
    info.size = len(data) if data is not None else 0
    tar.addfile(info, io.BytesIO(data) if data is not None else None)


def add_tree(tar, names, root):
    """Every directory, file and symbolic link under root (parents first)."""
    count = 0
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames.sort()
        dirnames[:] = [d for d in dirnames if os.path.normpath(os.path.join(rel, d)) not in SKIP]
        for n in sorted(dirnames) + sorted(filenames):
            p = os.path.join(dirpath, n)
            name = os.path.normpath(os.path.join(rel, n))
            st = os.lstat(p)
            if os.path.islink(p):
                add(tar, names, name, kind=tarfile.SYMTYPE, link=os.readlink(p), mode=0o777)
            elif os.path.isdir(p):
                add(tar, names, name + "/", kind=tarfile.DIRTYPE, mode=st.st_mode & 0o7777)
            else:
                add(tar, names, name, Path(p).read_bytes(), mode=st.st_mode & 0o7777)
                count += 1
    return count


def main():
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    out, busybox, packages, tests = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
    applets = subprocess.run([str(busybox), "--list"], check=True, capture_output=True,
                             text=True).stdout.split()
    raw = io.BytesIO()
    names = set()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        # The packages first: their files win over busybox's applet links.
        files = add_tree(tar, names, packages)
        for d in ["bin", "dev", "proc", "root", "etc", "tests"]:
            add(tar, names, d + "/", kind=tarfile.DIRTYPE)
        # /tmp as on Linux: anyone may create there, only an owner remove.
        add(tar, names, "tmp/", kind=tarfile.DIRTYPE, mode=0o1777)
        # /dev/shm: POSIX shared memory and named semaphores (shm_open,
        # sem_open), files of the in-memory tree, world-writable and sticky
        # as Linux's tmpfs there.
        add(tar, names, "dev/shm/", kind=tarfile.DIRTYPE, mode=0o1777)
        add(tar, names, "bin/busybox", busybox.read_bytes())
        for a in applets:
            if a != "busybox":
                add(tar, names, "bin/" + a, kind=tarfile.SYMTYPE, link="busybox", mode=0o777)
        add(tar, names, "etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", mode=0o644)
        add(tar, names, "etc/group", b"root:x:0:\n", mode=0o644)
        # The machine's name as Debian's installer writes it (`hostname -f`).
        add(tar, names, "etc/hosts", b"127.0.0.1\tlocalhost\n127.0.1.1\tkeep\n", mode=0o644)
        for t in tests:
            p = Path(t)
            add(tar, names, "tests/" + p.name, p.read_bytes(), mode=0o755)
    data = raw.getvalue()
    with open(out, "wb") as f:
        f.write(gzip.compress(data, compresslevel=9, mtime=0))
    print(f"  ROOTFS  {out}: busybox with {len(applets)} applets, {files} files of Debian packages, "
          f"{len(tests)} test files; {len(data) >> 20} MiB, {os.path.getsize(out) >> 20} MiB compressed")


if __name__ == "__main__":
    main()
