#!/usr/bin/env python3
"""The workhorse's file system on the disk (docs/workhorse.md, "The file
system on the disk"), from the host, on a copy of build/disk.img that
persists between boots (QEMU without snapshot=on):

  - first boot: the store's range holds no store, so it is formatted (the
    console says so); Linux programs make files, directories, links and a
    symbolic link under /data, with sizes from 0 to 1 MiB;
  - `halt`, boot again on the same disk: every file reads back with the
    same SHA-256, the links, modes and the directory tree are the same, and
    the console reports the store it mounted;
  - the workhorse killed (`kill workhorse`, init restarts it) while a
    Linux program writes a large file in a loop, printing the size after
    each acknowledged write: after the restart the store mounts, the file
    holds every acknowledged byte (its size is at least the last size
    printed, at most one write more, and its content is exactly what the
    program wrote up to there), the other files are intact, and
    `run counter-client` (a trusted program's IPC beside it) works during
    and after;
  - then `halt` and a third boot: still the same.

Usage: test_persist.py [--keep-disk PATH]"""
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
from test_boot import Guest, PROMPT  # noqa: E402

failures = []


def check(name, cond, detail=""):
    print(f"persist-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-3000:] if detail else '')}",
          flush=True)
    if not cond:
        failures.append(name)


class DiskGuest(Guest):
    """A Guest whose disk is `disk`, written for real (no overlay)."""

    def __init__(self, disk):
        cmd = qemu.base_cmd("tcg", persistent=True) + ["-serial", "stdio"]
        drive = cmd.index("-drive") + 1
        cmd[drive] = cmd[drive].replace(f"file={qemu.DISK},", f"file={disk},")
        assert str(disk) in cmd[drive]
        self.start = time.monotonic()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        import os
        os.set_blocking(self.p.stdout.fileno(), False)
        self.out = bytearray()


def run(g, line, timeout=300):
    """What `line` printed up to the next prompt (None: no prompt)."""
    m = g.send(line)
    if not g.expect(b"\n" + PROMPT, timeout, m):
        return None
    out = g.out[m:].decode(errors="replace").replace("\r", "")
    at = out.find(line + "\n")
    out = out[at + len(line) + 1:] if at >= 0 else out
    return out[: out.rfind(PROMPT.decode())]


def boot(disk):
    g = DiskGuest(disk)
    if not g.expect(PROMPT, 120):
        g.kill()
        raise SystemExit(f"persist-test: no prompt: {g.text()[-2000:]}")
    return g


def halt(g):
    g.send("halt")
    code = g.wait_exit(60)
    if code is None:
        g.kill()
    return code


def pattern(seed, n):
    """The bytes `gen SEED N` (below) writes: a counter-mode SHA-256 stream."""
    out = bytearray()
    k = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{k}".encode()).digest()
        k += 1
    return bytes(out[:n])


# What user/workhorse/tests/persist.py makes (path -> (seed, size)).
FILES = {
    "/data/empty": (1, 0),
    "/data/one": (2, 1),
    "/data/sector": (3, 512),
    "/data/dir/page": (4, 4096),
    "/data/dir/odd": (5, 70001),
    "/data/dir/sub/big": (6, 1 << 20),
}


def store_status(g):
    return run(g, "linux cat /proc/keepstore") or ""


def main():
    keep = "--keep-disk" in sys.argv
    tmp = Path(tempfile.mkdtemp(prefix="keep-persist-"))
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    try:
        # First boot: format, make the files.
        g = boot(disk)
        out = python(g, "make", MAKE) or ""
        check("the first mount formats the range and says so", "formatted a new one" in out, out)
        check("files, directories, links made under /data by python3", "made" in out, out)
        check("rename across the mount is EXDEV", "rename across the mount: 18" in out, out)
        first = python(g, "list", LIST) or ""
        want = {p: hashlib.sha256(pattern(s, n)).hexdigest()[:16] for p, (s, n) in FILES.items()}
        listed_ok = all(f" {n} {want[p]}" in first for p, (s, n) in FILES.items()) and "/data/sym link dir/odd" in first
        check("every file reads back with its SHA-256 before the reboot", listed_ok, first)
        df = run(g, "linux df /data") or ""
        check("df /data shows the store", "/data" in df and "keepstore" in df, df)
        st = store_status(g)
        check("/proc/keepstore shows the store", "state ok" in st and "log_records" in st, st)
        code = halt(g)
        check("halt", code is not None, code)

        # Second boot: the same tree.
        g = boot(disk)
        second = python(g, "list", LIST) or ""
        check("after a reboot the store is mounted, not formatted",
              "the store on the disk:" in second and "formatted" not in second, second)
        strip = lambda t: "\n".join(l for l in t.splitlines() if l.startswith("/data"))  # noqa: E731
        check("after a reboot every file, link, mode and directory is the same",
              strip(second) == strip(first) and strip(first), f"before:\n{strip(first)}\nafter:\n{strip(second)}")

        # The workhorse killed while a program writes.
        m = g.send(f"linux sh -c 'rm -f /tmp/loop.py'")
        g.expect(b"\n" + PROMPT, 60, m)
        for k in range(0, len(LOOP), 200):
            piece = LOOP[k:k + 200].encode().hex()
            esc = "".join(f"\\x{piece[i:i + 2]}" for i in range(0, len(piece), 2))
            run(g, f"linux sh -c 'printf \"{esc}\" >> /tmp/loop.py'", 60)
        m = g.send("linux python3 /tmp/loop.py")
        acked = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and len(acked) < 40:
            g.expect(b"\xff", 1, m)  # read what there is
            acked = [int(x) for x in re.findall(rb"acked (\d+)\r?\n", bytes(g.out[m:]))]
        check("the writer runs (40 writes acknowledged)", len(acked) >= 40, g.text()[-2000:])
        # `kill workhorse` is typed while it writes: the shell takes the line
        # when the program ends (killed).
        init_m = g.send_keys(b"")
        ok = g.expect(b"\n" + PROMPT, 1, m)
        g.p.stdin.write(b"")
        kill_out = run(g, "kill workhorse", 120)
        m2 = len(g.out)
        g.expect(b"\n" + PROMPT, 30, m)
        text = bytes(g.out[m:]).decode(errors="replace")
        acked = [int(x) for x in re.findall(r"acked (\d+)\n", text.replace("\r", ""))]
        last = acked[-1] if acked else -1
        check("the writer is ended by the kill and the shell says so", kill_out is not None and last > 0, text[-2000:])
        trusted = run(g, "run counter-client", 120) or ""
        check("a trusted program's IPC works beside the restart", "counter-client" in trusted and "FAIL" not in trusted, trusted)
        after = python(g, "list", LIST) or ""
        check("after the restart the store mounts", "the store on the disk:" in after, after)
        loop = re.search(r"^/data/loop file \S+ 1 (\d+) (\w+)$", after, re.M)
        size = int(loop.group(1)) if loop else -1
        data = pattern(7, 4 << 20)
        # The file may hold the write in flight at the kill, or not.
        good = loop and size >= last and size <= last + 32768 and size % 32768 == 0 and \
            hashlib.sha256(data[:size]).hexdigest()[:16] == loop.group(2)
        check(f"the file written at the kill holds every acknowledged write (last acknowledged {last}, on the disk {size})",
              good, after)
        check("the other files are intact after the kill",
              strip(after).replace(loop.group(0) if loop else "", "").strip() == strip(first).strip() if loop else False,
              f"before:\n{strip(first)}\nafter:\n{strip(after)}")
        code = halt(g)

        # Third boot: the same again.
        g = boot(disk)
        third = python(g, "list", LIST) or ""
        check("a third boot shows the same tree", strip(third) == strip(after), f"{strip(after)}\n---\n{strip(third)}")
        halt(g)
    finally:
        if keep:
            print(f"persist-test: disk kept in {disk}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"persist-test: {'all passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
