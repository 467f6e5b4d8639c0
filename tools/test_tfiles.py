#!/usr/bin/env python3
"""Trusted files kept by the workhorse (docs/trusted-core.md, "Trusted
files"), against a hostile workhorse: a boot of the default system on a
copy of build/disk.img written for real, with a new TPM state (the vault
keeps the files' keys and roots):
  - tfiles writes its files and reads them back; the workhorse's Linux
    programs, as root, find only ciphertext under /data/trusted, and the
    disk image (searched on the host after the boot) holds no plaintext;
  - as root in the workhorse: a byte flipped, two blocks swapped, an
    older version put back after an update, a file truncated, deleted,
    renamed over another: each read is refused as an integrity, freshness
    or availability error, never returned as good data, and the untouched
    files still read and write; `run tfiles` reports every file's state in
    one run;
  - `kill workhorse` while tfiles writes a file in a loop: after the
    workhorse's restart the loop goes on, and the file reads back as the
    last version acknowledged;
  - a second boot with the same TPM state and disk: the files read back
    as they were (and the damaged ones stay refused).
Prints one line per test and a summary; exits 1 on any failure."""
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import test_boot  # noqa: E402
from test_tpm import Guest  # noqa: E402

# The workhorse's range of the disk (user/system/system.conf).
WH_AREA = (65536 * 512, 32768 * 512)
PLAIN = b"TFILE-PLAINTEXT"
# The loop of writes the kill lands in, and when init kills the workhorse.
# The loop's bound: it ends 20 writes after the one that finds the
# workhorse restarted (user/programs/tfiles), long before this.
LOOP = 5000
KILL_MS = 3000
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(f"tfiles-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-1500:] if detail else '')}",
          flush=True)
    return cond


def arg(what, n=0, version=0, kib=0):
    """tfiles' arg0 (user/programs/tfiles/src/main.rs)."""
    return what | n << 8 | version << 16 | kib << 32


def tf(g, what, n=0, version=0, kib=0, timeout=120):
    return g.cmd(f"run tfiles {arg(what, n, version, kib)}", timeout)


def linux(g, script, timeout=120):
    return g.cmd(f"linux sh -c '{script}'", timeout)


def read_line(out, n):
    m = re.search(rf"tfiles: read f{n}: [^\r\n]*", out)
    return m.group(0) if m else out[-300:]


def boot(disk, state, what):
    g = Guest("", state, disk=disk)
    up = g.expect(test_boot.PROMPT, 240)
    check(f"boots ({what})", up, g.text()[-1500:])
    return g if up else None


# Python in the workhorse, as root: a byte of f1 flipped; the first
# places of f2's blocks 0 and 1 swapped (one write put each block in its
# first place).  Each line within the shell's 256 bytes.
OPEN = "import glob;f=open(glob.glob('/data/trusted/*/{}.d')[0],'r+b');"
FLIP = OPEN.format("f1") + "f.seek(100);b=f.read(1);f.seek(100);f.write(bytes([b[0]^1]));print('hostile: flipped')"
SWAP = OPEN.format("f2") + ("a=f.read(4096);f.seek(8192);c=f.read(4096);f.seek(0);f.write(c);f.seek(8192);f.write(a);"
                            "print('hostile: swapped')")


def main():
    qemu.check_built()
    if shutil.which("swtpm") is None:
        sys.exit("tfiles-test: swtpm is missing: run tools/install-deps.sh")
    tmp = Path(tempfile.mkdtemp(prefix="keep-tfiles-"))
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    test_boot.blank_vault_area(disk)
    state = qemu.TPM_DIR / "test-tfiles"
    shutil.rmtree(state, ignore_errors=True)
    start = time.monotonic()
    try:
        g = boot(disk, state, "a new TPM state")
        if g is None:
            return
        # A directory of nobody's (what an earlier `make run` left is not this vault's).
        linux(g, "rm -rf /data/trusted")
        out = tf(g, 6)
        check("the workhorse refuses bad whfiles requests, making nothing", "tfiles: protocol checks ... ok" in out, out)
        sizes = {1: 16, 2: 16, 3: 12, 4: 12, 5: 8, 6: 8, 7: 8, 9: 4}
        for n, kib in sizes.items():
            out = tf(g, 1, n, 1, kib)
            check(f"write f{n} ({kib} KiB)", f"tfiles: write f{n} v1 ({kib << 10} bytes): ok, generation 1" in out, out)
        for n in sizes:
            out = tf(g, 2, n)
            check(f"read f{n} back", f"tfiles: read f{n}: ok, {sizes[n] << 10} bytes, version 1" in out, out)
        out = linux(g, "ls /data/trusted/*; cat /data/trusted/*/* | grep -c TFILE-PLAINTEXT")
        check("the workhorse holds f1.d, f1.1 and no plaintext (grep as root)",
              "f1.d" in out and "f1.1" in out and re.search(r"^0\s*$", out, re.M), out)
        # An older version, kept by the workhorse to put back after an update.
        out = tf(g, 1, 3, 2, 12)
        check("f3 updated to v2", "write f3 v2 (12288 bytes): ok, generation 2" in out, out)
        linux(g, "mkdir -p /tmp/old && cp /data/trusted/*/f3.* /tmp/old/")
        out = tf(g, 1, 3, 3, 12)
        check("f3 updated to v3", "write f3 v3 (12288 bytes): ok, generation 3" in out, out)

        # The hostile workhorse.
        out = g.cmd(f'linux python3 -c "{FLIP}"', 180)
        check("as root: a byte of f1 flipped", "hostile: flipped" in out, out)
        out = g.cmd(f'linux python3 -c "{SWAP}"', 180)
        check("as root: two blocks of f2 swapped", "hostile: swapped" in out, out)
        out = linux(g, "cd /data/trusted/* && cp /tmp/old/f3.* . && truncate -s 5000 f4.d && rm f5.d && "
                       "mv f6.d f7.d && ls -l && echo hostile: files done")
        check("as root: f3 put back, f4 truncated, f5 deleted, f6 renamed over f7", "hostile: files done" in out, out)
        expect = {1: "INTEGRITY: block 0", 2: "INTEGRITY: block 0", 3: "FRESHNESS: an older version (generation 1",
                  4: "AVAILABILITY: the data file is cut short", 5: "AVAILABILITY: the data file is gone",
                  6: "AVAILABILITY: the data file is gone", 7: "INTEGRITY: block 0"}
        what = {1: "a flipped byte", 2: "swapped blocks", 3: "an older version put back", 4: "a truncated file",
                5: "a deleted file", 6: "a renamed file (its old name)", 7: "a file renamed over it"}
        for n, e in expect.items():
            out = tf(g, 2, n)
            check(f"{what[n]}: refused as {e.split(':')[0].lower()}", f"tfiles: read f{n}: {e}" in out
                  and f"read f{n}: ok" not in out, read_line(out, n))
        out = tf(g, 2, 9)
        check("an untouched file still reads", "tfiles: read f9: ok, 4096 bytes, version 1" in out, out)
        out = tf(g, 1, 9, 2, 4)
        check("... and writes", "write f9 v2 (4096 bytes): ok, generation 2" in out, out)
        out = tf(g, 0)
        lines = {n: re.search(rf"^\s+f{n}: ([^\r\n]*)", out, re.M) for n in range(1, 10) if n != 8}
        check("`run tfiles` reports each file's state in one run",
              "tfiles: 8 files in the vault" in out and all(lines.values())
              and all(expect[n].split(":")[0] in lines[n].group(1) for n in expect)
              and "generation 2, 1 block, root" in lines[9].group(1) and ": ok" in lines[9].group(1), out)
        check("... without a key or a plaintext", PLAIN.decode() not in out, out)

        # A kill of the workhorse in the middle of trusted writes: init kills
        # it KILL_MS from now, while the loop (in the foreground) writes.
        want = -1
        k = g.cmd(f"kill workhorse {KILL_MS}", 60)
        check("kill workhorse with a delay is armed", f"will be killed in {KILL_MS} ms" in k, k)
        m = len(g.out)
        loop = g.cmd(f"run tfiles {arg(3, 8, LOOP, 64)}", 900)
        acked = [int(v) for v in re.findall(r"acknowledged f8 v(\d+) ", loop)]
        at = loop.find("system: server workhorse was killed")
        check("the workhorse killed while tfiles writes f8 in a loop", at > 0 and 0 < len(re.findall(
              r"acknowledged f8", loop[:at])) and "found the workhorse restarted" in loop[at:], loop[-2500:])
        check("the loop goes on after the workhorse's restart and ends", "tfiles: loop done" in loop
              and acked and acked[-1] > 1, loop[-2500:])
        check("acknowledged versions in order", acked == sorted(set(acked)), acked)
        out = tf(g, 2, 8)
        want = max(acked) if acked else -1
        check("no acknowledged write lost: f8 reads as the last version acknowledged",
              f"tfiles: read f8: ok, 65536 bytes, version {want}," in out, f"last acknowledged {want}; {out}")
        print(f"tfiles-test: (the loop acknowledged {len(acked)} of {LOOP} writes; "
              f"{len(re.findall('acknowledged', loop[:at]))} before the kill)")
        out = g.cmd("halt", 60)
        g.kill()
        whole = disk.read_bytes()
        check("the disk image holds no plaintext of the trusted files", PLAIN not in whole)
        check("... but the workhorse's range holds the stored files", b"f1.d" in whole[WH_AREA[0]:WH_AREA[0] + WH_AREA[1]])

        g = boot(disk, state, "the same TPM state and disk")
        if g is None:
            return
        out = tf(g, 2, 8)
        check("after a reboot: f8 as acknowledged", f"read f8: ok, 65536 bytes, version {want}," in out, out)
        out = tf(g, 2, 9)
        check("after a reboot: f9 v2", "read f9: ok, 4096 bytes, version 2, generation 2" in out, out)
        out = tf(g, 2, 3)
        check("after a reboot: f3 still refused", "read f3: FRESHNESS" in out, out)
        out = tf(g, 4, 9)
        out2 = tf(g, 2, 9)
        check("remove f9: gone", "removed f9" in out and "read f9: NOT FOUND" in out2, out + out2)
        g.kill()
    finally:
        try:
            g.kill()
        except Exception:
            pass
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        ok = sum(results)
        print(f"tfiles-test: {ok}/{len(results)} passed ({time.monotonic() - start:.0f} s)")
    sys.exit(0 if results and all(results) else 1)


if __name__ == "__main__":
    main()
