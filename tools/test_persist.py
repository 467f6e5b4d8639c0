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
  - the workhorse killed (`kill workhorse 6000`: init kills it 6 s later
    and restarts it) while a Linux program writes a large file in a loop,
    printing the size after each acknowledged write: after the restart the
    store mounts, the file holds every acknowledged byte (its size is the
    last size printed or one write more, and its content is exactly what
    the program wrote up to there), the other files are intact, and
    `run counter-client` (a trusted program's IPC beside it) works after;
  - then `halt` and a third boot: still the same;
  - a fourth boot whose description grants the workhorse no dataspace
    manager: its requests go as message strings, the tree reads the same,
    and a file written then reads back after `kill workhorse`.

Usage: test_persist.py [--keep-disk PATH]"""
import hashlib
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
from test_boot import Guest, PROMPT, run_line  # noqa: E402

failures = []


def workhorse_buffers(g):
    """The buffers the block server has attached for the workhorse's range,
    and those it let go when init said an instance of it ended ("at end"),
    from the shell's `disk` table (None if there is no such row)."""
    out = (g.keys(b"disk\r", 30) or "").replace("\r", "")
    row = re.search(r"^\s+\d+\s+workhorse\s+65536\s+32768\s+rw\s+\d+\s+\d+\s+(\d+)\s+(\d+)$", out, re.M)
    if row is None:
        print(out)
    return (int(row.group(1)), int(row.group(2))) if row else None


def check(name, cond, detail=""):
    print(f"persist-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-3000:] if detail else '')}",
          flush=True)
    if not cond:
        failures.append(name)


def boot(disk, append=""):
    g = Guest(append, disk=disk)
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


# What user/servers/workhorse/tests/persist.py makes (path -> (seed, size)) and
# its pattern(seed, n): the guest's script itself, imported (it runs only
# under __main__).
sys.path.insert(0, str(qemu.ROOT / "user" / "servers" / "workhorse" / "tests"))
from persist import FILES, MORE_FILE, UTIME_NS, pattern  # noqa: E402


def tree(text):
    """The lines of persist.py's listing."""
    return [l for l in text.splitlines() if l.startswith("/data")]


LIST = "linux python3 /tests/persist.py list"


def main():
    keep = "--keep-disk" in sys.argv
    tmp = Path(tempfile.mkdtemp(prefix="keep-persist-"))
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    try:
        # First boot: format, make the files.
        host0 = time.time()
        g = boot(disk)
        out = run_line(g, "linux python3 /tests/persist.py make", 300) or ""
        check("the first mount formats the range and says so", "formatted a new one" in out, out)
        check("files, directories, links made under /data by python3", "\nmade" in out, out)
        check("rename across the mount is EXDEV", "rename across the mount: 18" in out, out)
        first = run_line(g, LIST, 300) or ""
        listed = all(f" {n} {hashlib.sha256(pattern(s, n)).hexdigest()[:16]}" in first for s, n in FILES.values())
        check("every file reads back with its SHA-256 before the reboot",
              listed and "/data/sym link dir/odd" in first and "/data/hard file 0o644 2 4096" in first, first)
        df = run_line(g, "linux df /data", 300) or ""
        check("df /data shows the store", re.search(r"keepstore\s+6140\s+\d+\s+\d+\s+\d+% /data", df), df)
        st = run_line(g, "linux cat /proc/keepstore", 300) or ""
        check("/proc/keepstore shows the store", "state ok" in st and re.search(r"log_records [1-9]", st), st)
        check("the store's requests go through one dataspace attached to the block server (disk: buffers 1)",
              workhorse_buffers(g) == (1, 0))
        check("halt", halt(g) is not None)

        # Second boot: the same tree.
        host1 = time.time()
        g = boot(disk)
        second = run_line(g, LIST, 300) or ""
        check("after a reboot the store is mounted, not formatted",
              "the store on the disk:" in second and "formatted" not in second, second)
        check("after a reboot every file, link, mode, directory and modification and change time is the same",
              tree(second) == tree(first) and tree(first), f"before:\n{first}\nafter:\n{second}")
        check("a time set by utimensat is kept to the nanosecond across the reboot",
              re.search(rf"^/data/sector file .* mtime {UTIME_NS} ctime \d+$", second, re.M) is not None, second)
        stamps = [int(x) for x in re.findall(r" mtime (\d+) ctime (?:\d+)$", second, re.M)]
        check("the other times are real (non-zero) and kept", len(stamps) > 5 and all(stamps), second)
        # File times are the wall clock's (the rtc server's; docs/workhorse.md,
        # "Time and timers"): what the first boot changed lies between its
        # start and the second's on the host's clock (a minute's slack).
        ctimes = [int(x) for x in re.findall(r" ctime (\d+)$", second, re.M)]
        check("the stored change times are the wall clock's (host time of the first boot)",
              len(ctimes) > 5 and all((host0 - 60) * 1e9 <= c <= (host1 + 60) * 1e9 for c in ctimes),
              f"host {host0:.0f}-{host1:.0f}: {ctimes}")

        # The workhorse killed while a program writes /data/loop 32 KiB at
        # a time (python3's start takes about a second).
        out = g.keys(b"kill workhorse 6000\r") or ""
        check("kill workhorse with a delay is armed", "will be killed in 6000 ms" in out, out)
        m = g.send("linux python3 /tests/persist.py loop")
        killed = g.expect(b"system: server workhorse was killed; restarted", 120, m)
        g.expect(b"\n" + PROMPT, 60, m)
        text = bytes(g.out[m:]).decode(errors="replace").replace("\r", "")
        acked = [int(x) for x in re.findall(r"^acked (\d+)$", text, re.M)]
        last = acked[-1] if acked else -1
        check(f"killed while writing ({len(acked)} writes acknowledged), init restarts it",
              killed and len(acked) >= 5 and "linux: the workhorse ended" in text, text[-2000:])
        trusted = g.keys(b"run counter-client\r", 60) or ""
        check("a trusted program's IPC works beside the restart",
              "1 + 2 + ... + 10 = 55" in trusted and "exited with code 0" in trusted, trusted)
        after = run_line(g, LIST, 300) or ""
        check("after the restart the store mounts", "the store on the disk:" in after, after)
        # The killed instance's buffer went at init's notice (the block
        # server's `notify`), not at the reap `disk` itself runs first.
        check("the restarted workhorse attached a dataspace of its own, and the killed one's was let go at init's "
              "notice (disk: buffers 1, at end 1)", workhorse_buffers(g) == (1, 1))
        loop = re.search(r"^/data/loop file \S+ 1 (\d+) (\w+) mtime \d+ ctime \d+$", after, re.M)
        size = int(loop.group(1)) if loop else -1
        # The write in flight at the kill may be there or not; nothing
        # acknowledged may be missing.  At 4 MiB the program wraps: the
        # operation in flight after the last full size is the truncation to
        # 0, printed only after it returned.
        in_flight = (last, 0) if last == 4 << 20 else (last, last + 32768)
        good = loop is not None and last >= 0 and size in in_flight and \
            hashlib.sha256(pattern(7, 4 << 20)[:size]).hexdigest()[:16] == loop.group(2)
        check(f"the file written at the kill holds every acknowledged write (last acknowledged {last}, "
              f"on the disk {size})", good, after)
        rest = [l for l in tree(after) if not l.startswith("/data/loop ")]
        check("the other files are intact after the kill", rest == tree(first), f"{first}\n---\n{after}")
        check("halt", halt(g) is not None)

        # Third boot: the same again.
        g = boot(disk)
        third = run_line(g, LIST, 300) or ""
        check("a third boot shows the same tree", tree(third) == tree(after) and tree(after), f"{after}\n---\n{third}")
        halt(g)

        # A fourth boot whose description grants the workhorse no dataspace
        # manager (user/system/wh-strings-test.conf): the store's requests
        # go as message strings, reading the same tree and writing a file
        # that reads back after a restart of the workhorse.
        g = boot(disk, "system=system-wh-strings")
        fourth = run_line(g, LIST, 300) or ""
        check("without a dataspace manager the workhorse says its /data requests go as message strings",
              "workhorse: /data requests go as message strings: no dataspace manager by name (not granted to this program)"
              in g.text(), g.text()[-3000:])
        check("through message strings the store mounts and reads the same tree",
              "the store on the disk:" in fourth and tree(fourth) == tree(third), f"{third}\n---\n{fourth}")
        check("the workhorse has no buffer attached to the block server (disk: buffers 0)", workhorse_buffers(g) == (0, 0))
        wrote = run_line(g, "linux python3 /tests/persist.py more", 300) or ""
        m = g.send("kill workhorse")
        restarted = g.expect(b"system: server workhorse was killed; restarted", 60, m)
        g.expect(PROMPT, 60, m)
        later = run_line(g, LIST, 300) or ""
        path, seed, size = MORE_FILE
        digest = hashlib.sha256(pattern(seed, size)).hexdigest()[:16]
        check("a file written and synced through message strings reads back after a restart of the workhorse",
              "wrote /data/more" in wrote and restarted
              and re.search(rf"^{path} file 0o644 1 {size} {digest} ", later, re.M) is not None
              and [l for l in tree(later) if not l.startswith(path + " ")] == tree(third), f"{wrote}\n---\n{later}")
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
