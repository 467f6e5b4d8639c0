#!/usr/bin/env python3
"""Whole-system tests from the host side, each a separate boot:
  - the shell: boots to `keep> ` (time measured), help/ps/mem/unknown
    command, `run hello`, `bench` of one benchmark, `halt` powers QEMU off;
  - in the same boot, the prompt's line editing (cursor keys, Home/End,
    Backspace/Delete, Ctrl-U, Ctrl-C, history, Tab completion, unknown
    escape sequences) and the newer commands (programs, help CMD, uptime, date,
    run nosuch, background programs, kill, Ctrl-C of a running program);
  - a kernel fault prints registers, the faulting address and a
    symbolised backtrace, then stops;
  - a missing boot image and a corrupt boot image are refused with a message;
  - `devices` shows the IOMMU and the PCI functions, and the machine without
    the IOMMU boots and says so, and its disk works through the PCI server's
    mediator (docs/devices.md).
  - the system description: its server found by name, restarted by its
    supervisor, shown by ps and mem; a malformed one refused naming the line;
    supervision by init (system=system-test): a server that crashes while
    the shell sits idle is restarted at once and found by name again, and
    one that keeps crashing is restarted after its backoff up to its limit,
    then left down and reported; the largest description (system=system-max:
    64 banks, 32 servers, 64 entries) is built whole, its last program finds
    its last server by name and init restarts that server when killed;
  - the drivers' memory is their banks' (docs/space-banks.md, "Drivers and
    dataspaces"): `kill blk` and `kill net` give every frame the server had
    back (the pool plus what the banks hold is the same after the restart:
    a frame a driver made from the pool would be lost), and the new
    instance's bank holds what the old one's did;
  - devices from the description (system=system-disk): two block clients
    write and read back checksummed data while the block server is killed
    and restarted; no acknowledged write is lost;
  - the dataspace manager killed three times while the system uses it
    (with the block and network servers once): the disk, the workhorse's
    /data, Linux programs and a stack's TCP echo go on, and mem shows no
    frame left behind (docs/dataspaces.md, "When the manager is restarted").
Prints one line per test and a summary; exits 1 on any failure."""
import atexit
import os
import random
import shutil
import struct
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
import tomllib
with open(Path(__file__).resolve().parent.parent / "abi" / "keep.toml", "rb") as _f:
    ABI_VERSION = ".".join(str(n) for n in tomllib.load(_f)["meta"]["version"])

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mkdisk  # noqa: E402
import qemu  # noqa: E402

PROMPT = b"keep> "
# The vault's start line (docs/trusted-core.md, "Secure storage").
VAULT_START = re.compile(rb"vault: (open|SEALED ELSEWHERE|ROLLBACK|DAMAGED|NO TPM|I/O ERROR)[^\r\n]*\r?\n")


# The vault's area of the default description (user/system/system.conf).
VAULT_AREA = (120832, 256)
_base_disk = None


def blank_vault_area(path):
    """Puts back what a new build/disk.img has in the vault's area (the
    pattern of tools/mkdisk.py): no store in it."""
    with open(path, "r+b") as f:
        f.seek(VAULT_AREA[0] * 512)
        for s in range(VAULT_AREA[0], VAULT_AREA[0] + VAULT_AREA[1]):
            f.write(struct.pack("<64Q", *(mkdisk.pattern(s, w) for w in range(64))))


def base_disk():
    """build/disk.img as a boot under snapshot sees it, but with the
    vault's area as on a new disk: `make run` (a persistent disk and TPM
    state) leaves a store there sealed to its own TPM, which a boot's
    fresh TPM cannot open.  One copy per test run, removed at exit."""
    global _base_disk
    if _base_disk is None:
        d = Path(tempfile.mkdtemp(prefix="keep-boot-disk-"))
        atexit.register(shutil.rmtree, d, True)
        _base_disk = d / "disk.img"
        shutil.copyfile(qemu.DISK, _base_disk)
        blank_vault_area(_base_disk)
    return _base_disk


class Guest:
    """QEMU with the serial port on pipes."""

    def __init__(self, append="", image=qemu.IMAGE, extra=(), iommu=True, disk=None, icount=False):
        """`disk`: a disk image written for real (no overlay) instead of
        build/disk.img under snapshot; `icount`: under -icount (qemu.base_cmd),
        guest time counted in instructions."""
        cmd = qemu.base_cmd("tcg", append, icount=icount, iommu=iommu, persistent=disk is not None) + ["-serial", "stdio"] + list(extra)
        drive = cmd.index("-drive") + 1
        cmd[drive] = cmd[drive].replace(f"file={qemu.DISK},", f"file={disk if disk is not None else base_disk()},")
        assert str(disk if disk is not None else base_disk()) in cmd[drive]
        if image is None:
            i = cmd.index("-initrd")
            del cmd[i : i + 2]
        else:
            cmd[cmd.index("-initrd") + 1] = str(image)
        self.start = time.monotonic()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT)
        os.set_blocking(self.p.stdout.fileno(), False)
        self.out = bytearray()
        # The default description's vault prints its start line after the
        # prompt (sealing a new store's key takes the TPM a while): the
        # first wait for the prompt waits for that line too, so that it
        # lands in no command's output.  prompt_secs: QEMU start to prompt.
        self.settle = "system=" not in append
        self.prompt_secs = None

    def expect(self, needle, timeout=30.0, since=0):
        deadline = time.monotonic() + timeout * qemu.KCOV_SLACK
        while time.monotonic() < deadline:
            if needle in self.out[since:]:
                if needle == PROMPT and self.prompt_secs is None:
                    self.prompt_secs = time.monotonic() - self.start
                    if self.settle:
                        self.wait_for(VAULT_START, 90)
                return True
            chunk = self.p.stdout.read(4096)
            if chunk:
                self.out += chunk
            elif self.p.poll() is not None:
                return needle in self.out[since:]
            else:
                time.sleep(0.01)
        return False

    def wait_for(self, pattern, timeout):
        """Reads until `pattern` (a compiled bytes regex) matches the output."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not pattern.search(self.out):
            chunk = self.p.stdout.read(4096)
            if chunk:
                self.out += chunk
            elif self.p.poll() is not None:
                break
            else:
                time.sleep(0.01)
        return pattern.search(self.out) is not None

    def send(self, line):
        return self.send_keys(line.encode() + b"\r")

    def send_keys(self, keys):
        """Types raw bytes (escape sequences included); returns the mark."""
        mark = len(self.out)
        for ch in keys:
            self.p.stdin.write(bytes([ch]))
            self.p.stdin.flush()
            time.sleep(0.002)
        return mark

    def keys(self, keys, timeout=10.0):
        """Types `keys` (ending in Enter or Ctrl-C) and returns what the
        guest printed up to the next prompt on a fresh row ("\nkeep> ";
        the editor's redraws put the prompt after a CR), or None."""
        m = self.send_keys(keys)
        if not self.expect(b"\n" + PROMPT, timeout, m):
            return None
        return self.out[m:].decode(errors="replace")

    def wait_exit(self, timeout=30.0):
        deadline = time.monotonic() + timeout * qemu.KCOV_SLACK
        while time.monotonic() < deadline:
            chunk = self.p.stdout.read(4096)
            if chunk:
                self.out += chunk
            if self.p.poll() is not None:
                self.out += self.p.stdout.read() or b""
                return self.p.returncode
            time.sleep(0.01)
        return None

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()

    def text(self):
        return self.out.decode(errors="replace")


results = []


def check(name, cond, detail=""):
    results.append(cond)
    print(f"boot-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + detail if detail else '')}",
          flush=True)


def boot_time_again(first):
    g = Guest()
    try:
        up = g.expect(PROMPT, 60)
        secs = g.prompt_secs if up else float("inf")
    finally:
        g.kill()
    print(f"boot-test: the first boot took {first:.2f} s; a second boot to the prompt: {secs:.2f} s")
    return secs


def test_shell():
    """The default system: boots to the prompt (the time reported), and the shell's
    commands and the servers the default description starts work."""
    g = Guest()
    try:
        up = g.expect(PROMPT, 60)
        secs = g.prompt_secs
        check("boots to the keep> prompt", up, g.text()[-500:])
        if not up:
            return
        # The time to the prompt is the host's (TCG on a shared machine), so
        # it is reported, not asserted; a second boot tells a stall of the
        # host from a slow system.
        print(f"boot-test: QEMU start to prompt: {secs:.2f} s")
        if secs >= 5.0:
            secs = boot_time_again(secs)
            print(f"boot-test: QEMU start to prompt, second boot: {secs:.2f} s (5 s is the aim on an idle host)")
        text = g.text()
        check("banner shows version, memory and CPU features",
              f"Keep {ABI_VERSION}" in text and "MiB" in text and "cpu features:" in text, text[-800:])
        m = g.send("help")
        check("help lists the commands",
              g.expect(PROMPT, 10, m) and all(c in g.out[m:].decode() for c in
                                                ("help", "ps", "mem", "test", "bench", "halt",
                                                 "programs", "run", "kill", "uptime")),
              g.out[m:].decode())
        m = g.send("ps")
        check("ps lists the root task", g.expect(PROMPT, 10, m) and "root" in g.out[m:].decode(),
              g.out[m:].decode())
        m = g.send("mem")
        check("mem shows the memory map", g.expect(PROMPT, 10, m) and "usable" in g.out[m:].decode(),
              g.out[m:].decode())
        m = g.send("devices")
        out = g.out[m:].decode(errors="replace") if g.expect(PROMPT, 30, m) else ""
        check("devices shows the IOMMU on and the virtio disk and NIC from the PCI server",
              "IOMMU: DMA remapping on" in out and "1af4:1042" in out and "virtio block" in out
              and "1af4:1041" in out, g.out[m:].decode(errors="replace"))
        m = g.send("frobnicate")
        check("unknown command gets a helpful message",
              g.expect(PROMPT, 10, m) and "unknown command" in g.out[m:].decode()
              and "help" in g.out[m:].decode(), g.out[m:].decode())
        m = g.send("run greet 7")
        check("run greet 7 runs the example program of docs/writing-programs.md",
              g.expect(PROMPT, 30, m) and "hello, 7" in g.out[m:].decode(), g.out[m:].decode())
        m = g.send("run hello")
        check("run hello loads and runs a program",
              g.expect(PROMPT, 30, m) and "hello from a user program" in g.out[m:].decode(),
              g.out[m:].decode())
        m = g.send("bench ipc.call_reply.cross_as")
        check("bench in the shell runs a benchmark and reports it",
              g.expect(PROMPT, 60, m) and "bench: ipc.call_reply.cross_as median=" in g.out[m:].decode()
              and "bench: done" in g.out[m:].decode(), g.out[m:].decode()[-800:])
        # Not under -icount: the figures are real-time ticks and no ratios
        # are printed (cap.lookup.* is a pair the summary would compare).
        m = g.send("bench cap.lookup*")
        ok = g.expect(b"bench: done", 120, m)
        out = g.out[m:].decode(errors="replace")
        check("bench without -icount says its unit is TSC ticks of real time and prints no ratio",
              ok and "of real time (not under -icount)" in out and "unit=tsc-ticks" in out
              and "bench: ratio" not in out and "one tick per instruction" not in out, out[-800:])
        m = g.send("bench blk.read.seq64k")
        ok = g.expect(b"bench: done", 60, m)
        out = g.out[m:].decode(errors="replace")
        check("bench of an I/O benchmark at the prompt says it runs only in make bench's I/O boot, and why",
              ok and "run only in `make bench`'s I/O boot" in out and "blk.read.seq64k median" not in out,
              out[-800:])
        system_description(g)
        line_editing(g)
        commands(g)
        hostile_input(g)
        m = g.send("halt")
        rc = g.wait_exit(20)
        check("halt powers the machine off with QEMU's exit status 0 (ACPI soft-off)", rc == 0,
              "QEMU still running" if rc is None else f"exit status {rc}")
    finally:
        g.kill()


def test_make_run_halt():
    """`make run` (tools/qemu.py run) ends with status 0 after `halt`."""
    p = subprocess.Popen([sys.executable, str(qemu.ROOT / "tools" / "qemu.py"), "run", "--accel", "tcg"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = bytearray()
    os.set_blocking(p.stdout.fileno(), False)
    deadline = time.monotonic() + 60 * qemu.KCOV_SLACK
    sent = False
    try:
        while time.monotonic() < deadline and p.poll() is None:
            chunk = p.stdout.read(4096)
            if chunk:
                out += chunk
            if not sent and PROMPT in out:
                p.stdin.write(b"halt\r")
                p.stdin.flush()
                sent = True
            time.sleep(0.02)
        rc = p.poll()
        check("make run ends with status 0 after halt", sent and rc == 0,
              f"prompt seen {sent}, status {rc}\n" + out.decode(errors="replace")[-600:])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# The console multiplexer's owner line, on a line of its own, which it
# prints on every switch of the screen (docs/trusted-core.md, "The trusted
# path"): the shell's `linux` gives the workhorse's terminal the screen and
# takes it back.
OWNER_LINE = re.compile("\n\u258c\\[keep: [^\n]*\n")


def without_owner_lines(out):
    """`out` (CR gone) without the owner lines of switches."""
    return OWNER_LINE.sub("", out)


def run_line(g, line, timeout=120):
    """Output of `line` at the prompt (echo, prompt and the owner lines of
    the multiplexer's switches removed, CR gone)."""
    m = g.send(line)
    if not g.expect(b"\n" + PROMPT, timeout, m):
        return None
    out = without_owner_lines(g.out[m:].decode(errors="replace").replace("\r", ""))
    # From the end of the echoed command line: a message the shell prints
    # at the prompt while the line is typed (a background program's end)
    # makes the editor draw the line again below it.
    at = out.find(line + "\n")
    out = out[at + len(line) + 1:] if at >= 0 else (out.split("\n", 1)[1] if "\n" in out else "")
    return out[: out.rfind(PROMPT.decode())]


LEFT, RIGHT, UP, DOWN = b"\x1b[D", b"\x1b[C", b"\x1b[A", b"\x1b[B"
HOME, END, DELETE = b"\x1b[H", b"\x1b[F", b"\x1b[3~"
CTRL_A, CTRL_C, CTRL_E, CTRL_U = b"\x01", b"\x03", b"\x05", b"\x15"
BACKSPACE, ENTER = b"\x7f", b"\r"


def output_lines(out):
    """The rows a command printed (the editor's redraws of the input line
    start with a CR and the prompt, so they never equal a printed row)."""
    return [] if out is None else out.split("\n")


def printed(g, keys, expected, timeout=10.0):
    """Types `keys`; true when a row of the output is exactly `expected`."""
    out = g.keys(keys, timeout)
    return expected in output_lines(out), repr(out)


def line_editing(g):
    """Each check types a line that runs the intended command only when the
    editing keys work (the old shell inserted "[D" for Left, ignored Tab,
    Home, Ctrl-U and Ctrl-C)."""
    ok, out = printed(g, b"ecXho edit-ok" + LEFT * 10 + BACKSPACE + ENTER, "edit-ok")
    check("line editing: Left and Backspace fix a typo in the middle", ok, out)
    ok, out = printed(g, b"ecXho edit-right" + LEFT * 14 + RIGHT + b"\x08" + END + ENTER,
                      "edit-right")
    check("line editing: Right, Backspace as 0x08, End", ok, out)
    ok, out = printed(g, b"cho home-ok" + HOME + b"e" + END + b"!" + ENTER, "home-ok!")
    check("line editing: Home and End (ESC [ H, ESC [ F)", ok, out)
    ok, out = printed(g, b"ho home-alt" + b"\x1b[1~" + b"ec" + b"\x1b[4~" + b"2" + b"\x1bOH"
                      + DELETE + b"e" + b"\x1bOF" + ENTER, "home-alt2")
    check("line editing: Home/End as ESC [ 1~ / 4~ and ESC O H / F, Delete", ok, out)
    ok, out = printed(g, b"oops, not this" + CTRL_U + b"echo ctrl-u-ok" + ENTER, "ctrl-u-ok")
    check("line editing: Ctrl-U erases the line", ok, out)
    ok, out = printed(g, b"echo ctrl-ae" + CTRL_A + b"\x06" * 5 + b"\x0b" + CTRL_E + b"-ok" + ENTER,
                      "-ok")
    check("line editing: Ctrl-A, Ctrl-F, Ctrl-K, Ctrl-E", ok, out)
    out = g.keys(b"echo cancelled-line" + CTRL_C)
    ok = out is not None and "^C" in out and "cancelled-line" not in output_lines(out)
    ok2, out2 = printed(g, b"echo after-cancel" + ENTER, "after-cancel")
    check("line editing: Ctrl-C abandons the line and gives a new prompt", ok and ok2,
          repr(out) + " / " + out2)
    ok, out = printed(g, b"echo hist-one" + ENTER, "hist-one")
    ok2, out2 = printed(g, UP + ENTER, "hist-one")
    check("history: Up runs the previous line again", ok and ok2, out2)
    ok, out = printed(g, b"echo hist-two" + ENTER, "hist-two")
    ok2, out2 = printed(g, b"echo draft" + UP + UP + UP + DOWN + DOWN + DOWN + b"-kept" + ENTER,
                        "draft-kept")
    check("history: Down past the newest returns to the line being edited", ok and ok2, out2)
    out = g.keys(b"pro\t" + ENTER)
    check("Tab completes 'pro' to 'programs'",
          out is not None and "programs in the boot image" in out and "hello" in out, repr(out))
    ok, out = printed(g, b"run hel\t" + ENTER, "hello from a user program", 30)
    check("Tab completes 'run hel' to 'run hello'", ok, out)
    ok, out = printed(g, b"echo esc" + b"\x1b[2~" + b"\x1b[15~" + b"\x1bOP" + b"\x1b[1;5P"
                      + b"\x1b[Z" + b"-ok" + ENTER, "esc-ok")
    check("line editing: unknown escape sequences insert nothing", ok, out)


UPTIME = re.compile(r"^up (?:\d+ days?, )?\d+:\d\d:\d\d\.\d{3} \((\d+) ms, \d+ timer ticks since boot\)$",
                    re.M)


def hostile_input(g):
    """Random keys (escape sequences, control keys, bytes above 127; a fixed
    seed) and malformed commands: the shell answers each and goes on."""
    rnd = random.Random(7)
    alphabet = [b"\x1b[A", b"\x1b[B", b"\x1b[C", b"\x1b[D", b"\x1b[H", b"\x1b[F", b"\x1b[3~", b"\x1b[1~",
                b"\x1b[4~", b"\x1bOH", b"\x1b[5;5~", b"\x1b[1;5C", b"\x1b[999999999999999999~", b"\x1b", b"\t",
                b"\x7f", b"\x08", b"\x01", b"\x02", b"\x04", b"\x05", b"\x06", b"\x0b", b"\x0c", b"\x0e",
                b"\x10", b"\x15", b"\x17", b"\x19"]
    alphabet += [bytes([c]) for c in range(32, 127)] + [bytes([c]) for c in range(128, 256, 7)]
    g.send_keys(b"".join(rnd.choice(alphabet) for _ in range(1500)))
    out = g.keys(CTRL_C + b"echo alive after random keys" + ENTER, 20)
    check("random keys leave the shell working", out is not None and "alive after random keys" in out,
          repr(out)[-400:])
    for line in ["kill", "kill abc", "kill -1", "kill 99999999999999999999999", "run", "run hello 99999999999999999999999",
                 "run hello x y z", "run &", "help help help", "bench nosuch*", "echo " + "x" * 300, "  ", "uptime now",
                 "\u00e9\u00e9"]:
        out = g.keys(line.encode() + ENTER, 20)
        check(f"malformed command {line[:30]!r} is answered", out is not None, g.text()[-300:])
    out = g.keys(b"echo still here" + ENTER, 20)
    check("the shell survives malformed commands", out is not None and "still here" in out, repr(out))


def commands(g):
    out = g.keys(b"programs" + ENTER)
    check("programs lists the programs in the boot image",
          out is not None and "  hello" in out and "  ktest" in out and "pfilter" in out, repr(out))
    out = g.keys(b"ls" + ENTER)
    check("ls is programs", out is not None and "programs in the boot image" in out
          and "  hello" in out, repr(out))
    out = g.keys(b"run nosuch" + ENTER)
    check("run nosuch says so and lists the programs",
          out is not None and "no program 'nosuch'" in out and "hello" in out and "ktest" in out,
          repr(out))
    out = g.keys(b"help run" + ENTER)
    check("help run gives the usage and a description",
          out is not None and "usage: run <program>" in out and "background" in out, repr(out))
    out = g.keys(b"help nosuch" + ENTER)
    check("help nosuch says there is no such command",
          out is not None and "no such command 'nosuch'" in out, repr(out))

    host_ms = (time.monotonic() - g.start) * 1000
    out = g.keys(b"uptime" + ENTER)
    first = UPTIME.search(out.replace("\r", "")) if out else None
    time.sleep(0.5)
    out2 = g.keys(b"uptime" + ENTER)
    host_ms2 = (time.monotonic() - g.start) * 1000
    second = UPTIME.search(out2.replace("\r", "")) if out2 else None
    ok = (first is not None and second is not None
          and 0 < int(first[1]) < int(second[1]) <= host_ms2 + 2000
          and int(first[1]) <= host_ms + 2000)
    check("uptime prints a plausible, growing time since boot", ok,
          f"{out!r} / {out2!r}; host: {host_ms:.0f} ms, {host_ms2:.0f} ms")

    host = time.time()
    out = g.keys(b"date" + ENTER)
    m = re.search(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC \((\d+) seconds since 1970\)$", (out or "").replace("\r", ""), re.M)
    check("date shows the rtc server's wall clock: the host's time within 5 minutes, as a UTC date",
          m is not None and abs(int(m[2]) - host) < 300
          and time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(int(m[2]))) == m[1], f"{out!r} (host {int(host)})")

    out = g.keys(b"run hello 3 0 &" + ENTER)
    m = re.search(r"\[(\d+)\] hello runs in the background", out or "")
    check("run PROG & starts a background program", m is not None, repr(out))
    if m:
        pid = m[1]
        ps = g.keys(b"ps" + ENTER)
        listed = re.search(rf"^\s+{pid}\s+\S+\s+\d+\s+hello\s+bg$", (ps or "").replace("\r", ""), re.M)
        check("ps shows the background program", listed is not None, repr(ps))
        out = g.keys(f"kill {pid}".encode() + ENTER)
        ps = g.keys(b"ps" + ENTER)
        gone = ps is not None and not re.search(rf"^\s+{pid}\s", ps, re.M)
        check("kill PID stops and destroys a background program",
              out is not None and f"[{pid}] hello killed" in out and gone, repr(out) + " / " + repr(ps))
    out = g.keys(b"kill 99999" + ENTER)
    out2 = g.keys(b"kill abc" + ENTER)
    out3 = g.keys(b"kill 1" + ENTER)
    ok, out4 = printed(g, b"echo survived" + ENTER, "survived")
    check("kill of a bad or unknown pid or of a process the shell did not start errs; the shell survives",
          out is not None and "no process with pid 99999" in out
          and out2 is not None and "'abc' is not a pid" in out2
          and out3 is not None and "not started by this shell" in out3 and ok,
          f"{out!r} / {out2!r} / {out3!r} / {out4}")
    out = g.keys(b"run hello 3 300 &" + ENTER)
    m = re.search(r"\[(\d+)\] hello runs", out or "")
    ended = m is not None and g.expect(f"[{m[1]}] hello exited with code 0".encode(), 10)
    check("a background program that ends is reported and reaped without a command",
          ended, g.out[-300:].decode(errors="replace"))
    m2 = g.send_keys(b"run hello 3 0" + ENTER)
    time.sleep(0.5)
    out = g.keys(CTRL_C)
    check("Ctrl-C stops a program running in the foreground",
          out is not None and "run: hello stopped" in out, repr(g.out[m2:]))


def system_description(g):
    """The system built from user/system/system.conf (docs/space-banks.md):
    the counter server runs, its client finds it by name, a server that
    quits is restarted by its supervisor, ps and mem show the system."""
    text = g.text()
    check("the root task builds the system description at boot",
          "system: system: 5 banks, 12 servers started, 10 programs to run" in text, text[-800:])
    opened = g.expect(b"checkpointer: area of 2048 blocks: no checkpoint in the area; starting afresh", 30)
    check("the description's checkpointer opens its area on the disk at boot (docs/persistence.md)",
          opened, g.text()[-800:])
    check("the description starts the block server at boot, with its disk through the PCI server",
          "blk: virtio-blk 00:02.0: 131072 sectors, DMA through the IOMMU" in text, text[-800:])
    out = g.keys(b"run disk" + ENTER, 60)
    check("run disk (from the description) writes and reads back its range through the boot-time block server",
          out is not None and "disktest a: done: 1 rounds, 256 writes acknowledged, every sector read back intact" in out
          and "exited with code 0" in out, repr(out))
    out = g.keys(b"disk" + ENTER, 30)
    row = re.search(r"^\s+\d+\s+disk\s+4096\s+2048\s+rw\s+514\s+0\s+0\s+0$", (out or "").replace("\r", ""), re.M)
    check("disk shows the boot-time block server, its client's range, rights and requests, and the grants",
          out is not None and "disk: block server 'blk' (restarted 0 of 3 times)" in out and row is not None
          and "device: reset 0 times after it stopped, 0 requests started again, 0 submissions refused" in out
          and "granted: disk             blk=4096+2048:rw" in out, repr(out))
    out = g.keys(b"devices" + ENTER, 30)
    check("devices asks the boot-time PCI server and shows what each described driver may open",
          out is not None and "from the PCI server 'pci' of the system description" in out
          and "00:02.0  1af4:1042  class 010000  virtio block" in out and "driver blk          may open id:1af4:1042" in out,
          repr(out))
    # The vault of the default description (docs/trusted-core.md, "Secure
    # storage"): a new store on this boot's fresh TPM, which its client uses.
    started = g.expect(b"made a new store", 60)
    out = g.keys(b"run vault-a 1" + ENTER, 60)
    check("the description's vault makes its store at boot and its client vault-a puts a secret",
          started and out is not None and "PUT secret: ok" in out and "exited with code 0" in out, repr(out))
    out = g.keys(b"vault" + ENTER, 30)
    check("vault shows the default system's store unsealed, with vault-a's key",
          out is not None and "state: unsealed" in out and "vault-a: 1 key, 22 bytes" in out, repr(out))
    out = g.keys(b"run counter-client" + ENTER, 30)
    check("run counter-client (from the description) finds the counter by name",
          out is not None and "1 + 2 + ... + 10 = 55" in out and "exited with code 0" in out, repr(out))
    out = g.keys(b"run counter-client 3" + ENTER, 30)
    check("the name service refuses an unknown name (NOT_GRANTED), an unknown label and init's own requests "
          "(BAD_REQUEST), and answers after",
          out is not None and "name service: an unknown name: not granted to this program" in out
          and "name service: label 99: bad request" in out
          and "name service: init's START through a program's capability: bad request" in out
          and "name service: counter, after the refusals: ok" in out and "exited with code 0" in out, repr(out))
    out = g.keys(b"ps" + ENTER)
    row = re.search(r"^\s+counter\s+server\s+services\s+600\s+init\s+0/2\s+BLOCKED", (out or "").replace("\r", ""), re.M)
    check("ps shows each described program's bank, supervisor and restarts", row is not None, repr(out))
    m = g.send("run counter-client 1")
    restarted = g.expect(b"system: server counter exited with code 0; restarted (1 of 2)", 30, m)
    check("a server that ends is restarted by its supervisor", restarted, g.out[m:].decode(errors="replace"))
    # The client's own end and the prompt after it, before the next
    # command (on a loaded host they may come well after the restart).
    g.expect(b"run: counter-client exited with code 0", 30, m)
    g.expect(b"\n" + PROMPT, 30, m)
    out = g.keys(b"ps" + ENTER)
    check("ps counts the restart",
          out is not None and re.search(r"counter\s+server\s+services\s+600\s+init\s+1/2", out) is not None, repr(out))
    out = g.keys(b"run counter-client" + ENTER, 30)
    check("the restarted server is found by name again",
          out is not None and "1 + 2 + ... + 10 = 55" in out, repr(out))
    out = g.keys(b"mem" + ENTER)
    ok = out is not None and all(w in out for w in ("space banks", "prime", "services", "apps",
                                                      "counter (instance)", "init", "accounts", "taken"))
    check("mem shows the banks, their limits and use, and the accounts", ok, repr(out))
    out = g.keys(b"run stranger" + ENTER, 30)
    check("a program without uses=counter is refused the counter by the name service",
          out is not None and "none by name (not granted to this program)" in out
          and "exited with code 2" in out, repr(out))
    out = g.keys(b"run budgeted 5" + ENTER, 30)
    check("a program's budget=B/P from the description is its process's budget (PROCESS.BUDGET)",
          out is not None and "counter-client: budget 2000/10000 us" in out
          and "exited with code 0" in out, repr(out))
    # Two more quits use up restart=2: the server stays down, and the
    # name service says so.
    for n in (2, 3):
        m = g.send("run counter-client 1")
        g.expect(b"\n" + PROMPT, 30, m)
        g.expect(b"system: server counter exited with code 0; ", 30, m)
    down = g.expect(b"system: server counter exited with code 0; not restarted (restart=2)", 30)
    out = g.keys(b"run counter-client" + ENTER, 30)
    check("past its restarts a server stays down and LOOKUP says it is not running",
          down and out is not None and "none by name (not running)" in out, repr(out))


def test_supervision():
    """init supervises without the shell (user/system/test.conf)."""
    g = Guest("system=system-test")
    try:
        up = g.expect(PROMPT, 60)
        # crashy faults at once, each time: restarted 20, 40 and 80 ms
        # later, then left down; all of it while the shell waits for input.
        gave_up = g.expect(b"system: server crashy faulted: vector 14 (#PF page fault)", 30) and \
            g.expect(b"; not restarted (restart=3)", 30)
        t = g.text()
        steps = [f"restart {n} of 3 in {ms} ms" in t and f"system: server crashy restarted ({n} of 3)" in t
                 for n, ms in ((1, 20), (2, 40), (3, 80))]
        check("a server that keeps crashing is restarted after its backoff (doubling) up to its limit, each reported",
              up and gave_up and all(steps) and "constructor: instance 'crashy' stopped: page fault" in t
              and "address 0x10" in t, t[-1500:])
        # crashy uses deaf (notify, never asks which clients ended): at
        # each end init signals deaf's notification and goes on; it never
        # waits for deaf, so it never has to give up on it either.
        waited = t.count("the notice that crashy ended")
        check("a server that never takes init's notices that a client ended does not hold init up (4 ends, each "
              "reported, no notice waited for)", gave_up and waited == 0 and t.count("system: server crashy faulted") == 4,
              f"{waited} {t[-1500:]}")
        out = g.keys(b"ps" + ENTER)
        check("ps shows it down with its restarts used up, and the counter still running",
              out is not None and re.search(r"crashy\s+server\s+services\s+400\s+init\s+3/3\s+down", out) is not None
              and re.search(r"counter\s+server\s+services\s+600\s+init\s+0/2\s+BLOCKED", out) is not None, repr(out))
        out = g.keys(b"run counter-client 2" + ENTER, 30)
        asked = out is not None and "asking the server to crash in a second" in out and "exited with code 0" in out
        # Nothing is typed now: the shell sits in its console read.
        m = len(g.out)
        crashed = g.expect(b"system: server counter faulted: vector 14 (#PF page fault)", 20, m)
        restarted = g.expect(b"; restarted (1 of 2)", 10, m)
        idle = g.out[m:].decode(errors="replace")
        check("a server that crashes while the shell sits idle is restarted at once and reported",
              asked and crashed and restarted and "constructor: instance 'counter' stopped: page fault" in idle,
              repr(out) + " / " + idle)
        out = g.keys(b"run counter-client" + ENTER, 30)
        check("its client reaches the new instance through the name service",
              out is not None and "1 + 2 + ... + 10 = 55" in out and "exited with code 0" in out, repr(out))
        out = g.keys(b"ps" + ENTER)
        check("ps counts the restart",
              out is not None and re.search(r"counter\s+server\s+services\s+600\s+init\s+1/2\s+BLOCKED", out) is not None,
              repr(out))
        # init's own supervisor is the root task: when init ends, the
        # whole system is shut down and built again from the description.
        out = g.keys(b"kill init" + ENTER, 90)
        t = (out or "").replace("\r", "")
        check("kill init: the root task reports init's end and builds the system again from the description",
              "system: init ended: its process is gone" in t
              and "the system is built again from system-test (1 of 3)" in t
              and "system: system-test: " in t and "servers started" in t, repr(out))
        out = g.keys(b"ps" + ENTER)
        check("ps shows the new init supervised by root (1 restart) and fresh servers",
              out is not None and re.search(r"init\s+init\s+\(own\)\s+-\s+root\s+1/3\s+(BLOCKED|RUNNABLE)", out) is not None
              and re.search(r"counter\s+server\s+services\s+600\s+init\s+0/2\s+BLOCKED", out) is not None, repr(out))
        out = g.keys(b"run counter-client" + ENTER, 30)
        check("after init's restart a client reaches the new counter through the new name service",
              out is not None and "1 + 2 + ... + 10 = 55" in out and "exited with code 0" in out, repr(out))
    finally:
        g.kill()


def test_disk_restart():
    """The data-integrity test across a restart (user/system/disk-test.conf;
    docs/devices.md, "Restarts"): three clients write and read back
    checksummed sectors at once, one by message strings, one through a
    dataspace, one by batches of 8 entries through a dataspace; `kill blk` in the middle of their run; init restarts the
    block server, which takes its function back from the PCI server; the
    clients get an error (not a hang), find the new server by name, and
    every acknowledged write reads back intact."""
    g = Guest("system=system-disk")
    try:
        up = g.expect(PROMPT, 60)
        started = (up and g.expect(b"disktest a: round 1:", 120) and g.expect(b"disktest b: round 1:", 60)
                   and g.expect(b"disktest c: round 1:", 60))
        check("three disk clients of the description (strings, a dataspace, batches) write and read back their "
              "ranges at once", started,
              g.text()[-1500:])
        if not started:
            return
        m = g.send("kill blk")
        killed = g.expect(b"system: server blk was killed; restarted (1 of 3)", 30, m)
        reopened = g.expect(b"pci: 00:02.0 opened again by its driver: the previous session is released", 30, m)
        done = (g.expect(b"disktest a: done:", 240, m) and g.expect(b"disktest b: done:", 120, m)
                and g.expect(b"disktest c: done:", 120, m))
        # init reports each client's end after its last line: wait for
        # both reports (the machine may be slow), not only the last lines.
        ended = (g.expect(b"server disk-a exited with code 0", 60, m)
                 and g.expect(b"server disk-b exited with code 0", 60, m)
                 and g.expect(b"server disk-c exited with code 0", 60, m))
        t = g.out[m:].decode(errors="replace")
        both = all(re.search(rf"disktest {c}: done: \d+ rounds, \d+ writes acknowledged, every sector read back intact "
                             rf"\(\d+ reads\); [1-9]\d* errors retried, the server replaced [1-9]\d* times", t)
                   for c in "abc")
        check("the block server killed mid-run is restarted by init and gets its function back from the PCI server",
              killed and reopened, t[-2000:])
        check("across the restart the clients saw errors, found the new server by name, and every acknowledged "
              "write read back intact",
              done and both and ended and "WRONG DATA" not in t, t[-2500:])
        out = g.keys(b"ps" + ENTER)
        check("ps counts the block server's restart",
              out is not None and re.search(r"blk\s+server\s+drivers\s+1200\s+init\s+1/3\s+BLOCKED", out) is not None,
              repr(out))
        out = g.keys(b"disk" + ENTER, 30)
        rows = (out or "").replace("\r", "")
        # disk-b and disk-c attached a dataspace each and have ended: their
        # banks took the pages, and the server released the dead buffers.
        check("disk shows the restart and the three clients of the new instance with their ranges, and no "
              "buffer left of the ended clients' dataspaces",
              "disk: block server 'blk' (restarted 1 of 3 times)" in rows and ", 0 buffers attached" in rows
              and re.search(r"^\s+\d\s+disk-a\s+4096\s+2048\s+rw\s+\d+\s+0\s+0\s+0$", rows, re.M) is not None
              and re.search(r"^\s+\d\s+disk-b\s+8192\s+4096\s+rw\s+\d+\s+0\s+0\s+\d+$", rows, re.M) is not None
              and re.search(r"^\s+\d\s+disk-c\s+12288\s+4096\s+rw\s+\d+\s+0\s+0\s+\d+$", rows, re.M) is not None, repr(out))
        # ...and let them go when init told it each had ended (blk's
        # `notify`: its notification, then TAKE_GONE), not at the lazy reap
        # of this `disk` (which would find them too, but counts none "at
        # end"): one each, attached again after the restart.
        check("the block server let go of each ended client's buffer at init's notice (TAKE_GONE)",
              re.search(r"^\s+\d\s+disk-b\s+8192\s+4096\s+rw\s+\d+\s+0\s+0\s+[1-9]\d*$", rows, re.M) is not None
              and re.search(r"^\s+\d\s+disk-c\s+12288\s+4096\s+rw\s+\d+\s+0\s+0\s+[1-9]\d*$", rows, re.M) is not None,
              repr(out))
        out = g.keys(b"run disk-ro" + ENTER, 60)
        check("a client granted a read-only range cannot write (disktest refuses to run on it)",
              out is not None and "read-only range" in out and "exited with code 2" in out, repr(out))
    finally:
        g.kill()


def mem_figures(out):
    """(pool free frames, prime bank used, {instance name: used}) from `mem`."""
    t = (out or "").replace("\r", "").split("accounts (frames):")[0]
    pool = re.search(r"^memory pool: (\d+) free frames", t, re.M)
    prime = re.search(r"^\s+prime\s+\d+\s+(\d+)\s", t, re.M)
    inst = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\S+) \(instance\)\s+\d+\s+(\d+)\s", t, re.M)}
    if not pool or not prime:
        return None
    return int(pool.group(1)), int(prime.group(1)), inst


def vault_to_new_blk(g):
    """The vault opened its area at boot, so the block server holds its
    session (a frame of its bank); after a restart of the block server the
    vault asks for it again at its next disk request: a PUT makes one, so
    that the new instance has the clients the old one had."""
    out = g.keys(b"run vault-a 1" + ENTER, 60) or ""
    return "PUT secret: ok" in out


def test_driver_banks():
    """The block and network servers take every frame from their banks:
    killed, their banks are destroyed and the pool gets all of it back (a
    frame they had made from the pool would be lost to it: the pool plus
    the banks' use would drop)."""
    g = Guest()
    try:
        up = g.expect(PROMPT, 60) and g.expect(b"net: virtio-net", 60)
        time.sleep(2)
        before = mem_figures(g.keys(b"mem" + ENTER, 30))
        check("mem shows the pool, the prime bank and the drivers' instances", up and before is not None
              and "blk" in before[2] and "net" in before[2], repr(before) + g.text()[-1500:])
        if not before:
            return
        figures = [before]
        for name, ready in (("blk", b"blk: virtio-blk 00:02.0"), ("net", b"net: virtio-net 00:03.0")):
            m = g.send("kill " + name)
            again = g.expect(f"system: server {name} restarted (1 of 3)".encode(), 30, m) and g.expect(ready, 30, m)
            again = again and (name != "blk" or vault_to_new_blk(g))
            time.sleep(2)
            after = mem_figures(g.keys(b"mem" + ENTER, 30))
            ok = again and after is not None
            # Outside the banks nothing changed: every frame the killed server
            # held came back, and what the new one took is its bank's.
            check(f"kill {name}: every frame it held comes back (pool + banks' use unchanged), its new instance's bank "
                  "holds as much as the old one's",
                  ok and after[0] + after[1] == figures[-1][0] + figures[-1][1]
                  and after[2][name] == figures[-1][2][name],
                  f"before {figures[-1]!r}, after {after!r}; " + g.out[m:].decode(errors="replace")[-1500:])
            if not ok:
                return
            figures.append(after)
    finally:
        g.kill()


def echo_through(guest, nbytes=1 << 20, seed=0):
    """A TCP echo of nbytes through the stack at 10.0.2.15 (port 7, the
    forwarded host port from QEMU's command line): the same bytes back?"""
    import hashlib
    import socket
    netdev = next(a for a in guest.p.args if a.startswith("user,id=net0"))
    port = int(re.search(r"hostfwd=tcp:127\.0\.0\.1:(\d+)-:7\b", netdev).group(1))
    data = random.Random(seed).randbytes(nbytes)
    got = bytearray()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=60) as c:
                c.settimeout(60)
                got.clear()
                for i in range(0, nbytes, 16384):
                    c.sendall(data[i:i + 16384])
                    while len(got) < i:
                        got += c.recv(65536)
                # No half-close before every byte is back (test_net.echo says why).
                while len(got) < nbytes:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            if got:
                break
        except OSError:
            time.sleep(1)
    return hashlib.sha256(got).digest() == hashlib.sha256(data).digest()


def test_dataspace_restart():
    """The dataspace manager restarted while the system uses it
    (docs/dataspaces.md, "When the manager is restarted"): `kill dataspace`
    three times; after each, ps counts the restart, `run disk 256` (a
    dataspace of its own, attached to the block server) writes and reads
    back its range, the workhorse's /data keeps the file written before the
    first kill and takes new ones, a Linux program runs, and the stack at
    10.0.2.15 echoes 1 MiB.  After the second kill the block and network
    servers are killed too: the workhorse's /data dataspace and the stacks'
    rings, made by an old manager, are replaced by ones of the new.  mem
    after the third round shows every frame where it was after the first:
    nothing the old managers made stays behind."""
    g = Guest()
    try:
        up = g.expect(PROMPT, 60) and g.expect(b"net: virtio-net", 60)
        time.sleep(2)
        out = g.keys(b"linux sh -c 'echo kept-across > /data/dsr.txt && cat /data/dsr.txt'" + ENTER, 120) or ""
        out2 = g.keys(b"run disk 256" + ENTER, 120) or ""
        ready = up and "kept-across" in out and "64 KiB a request through a dataspace" in out2 \
            and "exited with code 0" in out2 and echo_through(g, seed=1)
        check("before the kill: /data, run disk through a dataspace and the TCP echo work", ready,
              out + out2 + g.text()[-1500:])
        if not ready:
            return
        figures = []
        for k in (1, 2, 3):
            m = g.send("kill dataspace")
            back = g.expect(f"system: server dataspace restarted ({k} of 3)".encode(), 30, m)
            # The second round kills the block and network servers too: their
            # clients' dataspaces were made by an older manager.
            extra = [("blk", b"blk: virtio-blk 00:02.0"), ("net", b"netstack 10.0.2.15: the network server is back")]
            extra = extra if k == 2 else []
            for name, ready in extra:
                time.sleep(1)
                m2 = g.send("kill " + name)
                back = back and g.expect(ready, 60, m2) and (name != "blk" or vault_to_new_blk(g))
            time.sleep(1)
            ps = g.keys(b"ps" + ENTER, 30) or ""
            check(f"kill dataspace ({k}): init restarts it and ps counts it",
                  back and re.search(rf"dataspace\s+server\s+drivers\s+600\s+init\s+{k}/3\s+BLOCKED", ps) is not None,
                  ps + g.out[m:].decode(errors="replace")[-1500:])
            disk = g.keys(b"run disk 256" + ENTER, 120) or ""
            check(f"after kill dataspace ({k}): run disk makes a dataspace of the new manager, the block server "
                  "attaches it, and every sector reads back intact",
                  "every sector read back intact" in disk and "exited with code 0" in disk, disk[-1500:])
            data = g.keys(f"linux sh -c 'cat /data/dsr.txt && echo round-{k} > /data/dsr{k}.txt && cat /data/dsr{k}.txt'"
                          .encode() + ENTER, 120) or ""
            killed = f"after kill dataspace ({k})" + "".join(f", kill {n}" for n, _ in extra)
            check(f"{killed}: the workhorse's /data reads the file written before and writes a new one",
                  "kept-across" in data and f"round-{k}" in data and "rror" not in data, data[-1500:])
            check(f"{killed}: the stack at 10.0.2.15 echoes 1 MiB (SHA-256)", echo_through(g, seed=k + 1), g.text()[-1500:])
            time.sleep(2)
            figures.append(mem_figures(g.keys(b"mem" + ENTER, 30)))
        # The first and third rounds do the same, and their managers end up
        # knowing the same (no live dataspace): with the old dataspaces'
        # frames left behind in their banks, the workhorse's instance would
        # hold 34 frames more (its /data dataspace), each stack's 35 (its ring).
        a, b = figures[0], figures[-1]
        check("three manager restarts leak no frame: mem after the third round shows the pool + the banks' use, "
              "the manager's, the drivers', the stacks' and the workhorse's instances as after the first",
              a is not None and b is not None and a[0] + a[1] == b[0] + b[1]
              and all(a[2].get(n) == b[2].get(n) for n in ("dataspace", "net-a", "net-b", "workhorse", "blk", "net")),
              f"after the first {a!r}, after the third {b!r}")
        t = g.text()
        check("the workhorse's /data and both stacks replaced the dataspaces the old manager had made",
              "workhorse: /data: the dataspace manager was restarted; a new dataspace for the disk" in t
              and "netstack 10.0.2.15: the dataspace manager was restarted; a new ring" in t
              and "netstack 10.0.2.16: the dataspace manager was restarted; a new ring" in t, t[-2000:])
    finally:
        g.kill()


def test_max_description():
    """The largest description (system=system-max, user/system/max-test.conf:
    keep-system's MAX_BANKS banks, MAX_SERVERS servers and MAX_ENTRIES
    entries) is built whole: every server runs under init, the last
    program finds the last server by name, and the last server killed is
    restarted (init's slots of the last entry)."""
    g = Guest("system=system-max")
    try:
        up = g.expect(PROMPT, 240)
        check("the largest description (64 banks, 32 servers, 64 entries) is built at boot",
              up and "system: system-max: 64 banks, 32 servers started, 32 programs to run" in g.text(), g.text()[-1500:])
        if not up:
            return
        out = g.keys(b"run counter-client" + ENTER, 60)
        check("in it the last program finds the last server by name",
              out is not None and "1 + 2 + ... + 10 = 55" in out and "exited with code 0" in out, repr(out))
        out = g.keys(b"ps" + ENTER, 30) or ""
        running = re.findall(r"^\s+\S+\s+server\s+b\d+\s+300\s+init\s+0/[01]\s+BLOCKED", out.replace("\r", ""), re.M)
        check("ps shows all 32 servers running under init", len(running) == 32, out[-3000:])
        m = g.send("kill counter")
        check("the last server killed is restarted by init",
              g.expect(b"system: server counter was killed; restarted (1 of 1)", 30, m), g.out[m:].decode(errors="replace"))
    finally:
        g.kill()


def test_bad_description():
    """A malformed system description is refused whole at boot, naming
    its line, and the shell still works without it."""
    g = Guest("system=system-bad")
    try:
        up = g.expect(PROMPT, 60)
        t = g.text()
        check("a malformed system description is refused at boot, naming the line",
              up and "system: system-bad: line 5: bank=nowhere: no bank 'nowhere' declared above" in t
              and "refused" in t, t[-800:])
        out = g.keys(b"run counter-client" + ENTER, 30)
        check("without the description, run counter-client finds no server",
              out is not None and "exited with code 2" in out, repr(out))
        ok = g.expect(b"", 1) and "servers started" not in g.text()
        check("nothing of the refused description was started", ok, g.text()[-400:])
        out = g.keys(b"date" + ENTER, 30)
        check("without the description, date says there is no wall clock server",
              out is not None and "no wall clock server" in out, repr(out))
    finally:
        g.kill()
    g = Guest("system=nosuch")
    try:
        up = g.expect(PROMPT, 60)
        check("a missing description file is reported", up and "system: nosuch: no file 'nosuch'" in g.text(),
              g.text()[-400:])
    finally:
        g.kill()


def test_kernel_fault():
    """A fault in the kernel (`selftest-kernel-fault`) is reported with
    registers and a symbolised backtrace, and stops the kernel."""
    g = Guest("selftest-kernel-fault")
    try:
        rc = g.wait_exit(60)
        t = g.text()
        check("a kernel fault is reported and stops the kernel",
              rc is not None and "KERNEL FAULT: page fault" in t and "kernel stopped" in t, t[-1500:])
        check("the report shows registers and the faulting address",
              "rax " in t and "r15 " in t and "cr2) 0x0000000000000010" in t, t[-1500:])
        check("the backtrace is symbolised", "backtrace:" in t and "kmain+0x" in t, t[-1500:])
    finally:
        g.kill()


def expect_refusal(name, image, message):
    g = Guest(image=image)
    try:
        rc = g.wait_exit(60)
        t = g.text()
        check(name, rc is not None and message in t, t[-600:])
    finally:
        g.kill()


def test_bad_images():
    """A missing or corrupt boot image is refused with a message."""
    expect_refusal("a missing boot image is refused with a message", None, "no boot image")
    with tempfile.NamedTemporaryFile(suffix=".img") as f:
        f.write(b"NOTKEEP!" + bytes(8192))
        f.flush()
        expect_refusal("a corrupt boot image is refused with a message", f.name,
                       "boot image refused: bad magic")


def test_no_iommu():
    """The machine without an IOMMU: the drivers run through the PCI
    server's software mediator (docs/pci.md, "Software DMA
    mediation")."""
    g = Guest(iommu=False)
    try:
        up = g.expect(PROMPT, 60)
        check("the machine without the IOMMU boots to the prompt and says DMA is not confined",
              up and "no IOMMU" in g.text(), g.text()[-800:])
        if not up:
            return
        m = g.send("devices")
        out = g.out[m:].decode(errors="replace") if g.expect(PROMPT, 30, m) else ""
        check("devices without the IOMMU says so and still lists the functions",
              "IOMMU: none" in out and "virtio block" in out, g.out[m:].decode(errors="replace"))
        # The disk without the IOMMU: the PCI server's mediator checks every
        # descriptor (docs/pci.md, "Software DMA mediation").
        check("without the IOMMU the boot-time block server drives the disk through the PCI server's mediator",
              "blk: virtio-blk 00:02.0: 131072 sectors, DMA through the PCI server's mediator (no IOMMU)" in g.text(),
              g.text()[-800:])
        check("without the IOMMU the boot-time network server drives the NIC through the PCI server's mediator",
              "DMA through the PCI server's mediator (no IOMMU), MSI-X" in g.text().split("net: virtio-net 00:03.0")[-1],
              g.text()[-800:])
        out = g.keys(b"run disk" + ENTER, 60)
        check("without the IOMMU run disk writes and reads back its range through the mediated block server",
              out is not None and "disktest a: done: 1 rounds, 256 writes acknowledged, every sector read back intact" in out
              and "exited with code 0" in out, (out or g.text())[-800:])
        g.send("halt")
        check("halt powers it off", g.wait_exit(20) == 0)
    finally:
        g.kill()


def monitor(path, command, timeout=10.0):
    """One command to QEMU's human monitor on the Unix socket at path: its output."""
    import socket
    deadline = time.monotonic() + timeout
    while True:
        try:
            c = socket.socket(socket.AF_UNIX)
            c.connect(str(path))
            break
        except OSError:
            if time.monotonic() > deadline:
                return ""
            time.sleep(0.2)
    with c:
        c.settimeout(timeout)
        out = b""
        def until_prompt():
            nonlocal out
            while not out.rstrip().endswith(b"(qemu)"):
                chunk = c.recv(65536)
                if not chunk:
                    break
                out += chunk
        until_prompt()
        out = b""
        c.sendall(command.encode() + b"\n")
        until_prompt()
    return out.decode(errors="replace")


def test_bars_above_4g():
    """A machine whose 64-bit BARs lie above 4 GiB, as large devices' do on
    real machines: a 1 GiB ivshmem memory BAR does not fit SeaBIOS's 32-bit
    window, so it places every 64-bit prefetchable BAR above 4 GiB, the
    virtio functions' included; the PCI server sizes them, the drivers map
    them through the kernel's DEVMEM, and the disk and the network work."""
    sock = qemu.BUILD / "bars-monitor.sock"
    sock.unlink(missing_ok=True)
    g = Guest(extra=("-object", "memory-backend-ram,size=1G,id=ivmem", "-device", "ivshmem-plain,memdev=ivmem",
                     "-monitor", f"unix:{sock},server=on,wait=off"))
    try:
        up = g.expect(PROMPT, 120)
        check("a machine with a 1 GiB ivshmem BAR boots to the prompt", up, g.text()[-800:])
        if not up:
            return
        pci = monitor(sock, "info pci")
        bars = {}
        for dev in re.split(r"Bus +0, device", pci)[1:]:
            ids = re.search(r"PCI device ([0-9a-f]{4}:[0-9a-f]{4})", dev)
            high = re.findall(r"64 bit prefetchable memory at (0x[0-9a-f]+)", dev)
            if ids and high:
                bars[ids.group(1)] = [int(a, 16) for a in high]
        check("QEMU placed the virtio functions' 64-bit BARs above 4 GiB",
              all(b and min(b) >= 1 << 32 for b in (bars.get("1af4:1042"), bars.get("1af4:1041"))), repr(bars))
        out = g.keys(b"run disk" + ENTER, 90)
        check("with its BAR above 4 GiB the disk writes and reads back a client's range",
              out is not None and "disktest a: done: 1 rounds, 256 writes acknowledged, every sector read back intact" in out,
              (out or g.text())[-800:])
        check("with its BAR above 4 GiB the NIC carries 1 MiB of TCP echo from the host", echo_through(g), g.text()[-800:])
        g.send("halt")
        check("halt powers it off", g.wait_exit(20) == 0)
    finally:
        g.kill()
        sock.unlink(missing_ok=True)


def test_trusted_path():
    """The console multiplexer (docs/trusted-core.md, "The trusted path"):
    vt lists the terminals; vt-hostile is refused everything; what is
    typed at keep> reaches only the shell; Ctrl-T switches, with the owner
    line only the multiplexer writes."""
    g = Guest()
    try:
        up = g.expect(PROMPT, 60)
        check("trusted path: the multiplexer prints vt1's owner line at boot",
              up and "\u258c[keep: vt1 shell]".encode() in g.out, g.text()[-800:])
        out = run_line(g, "vt") or ""
        rows = {tuple(l.split()[:3]) for l in out.split("\n") if l.strip()}
        check("vt lists the shell (with the screen), the workhorse's terminal and the servers' output-only ones",
              ("1", "interactive", "shell") in rows and ("2", "interactive", "workhorse") in rows
              and ("100", "output-only", "init") in rows and "yes" in out.split("\n")[1], out)
        check("terminals is vt", run_line(g, "terminals") == out, "")
        hostile = next((r[0] for r in rows if r[1:] == ("interactive", "vt-hostile")), "?")
        m = g.send("run vt-hostile 4")
        g.expect(b"listening for", 60, m)
        # Typed while the hostile program listens: the shell keeps it.
        g.send_keys(b"echo typed-at-keep\r")
        g.expect(b"\n" + PROMPT, 60, m)
        g.expect(b"typed-at-keep\r\n", 30, m)
        g.expect(b"\n" + PROMPT, 30, m + 10)
        out = g.out[m:].decode(errors="replace").replace("\r", "")
        line = lambda what: next((l for l in out.split("\n") if l.startswith(f"vt-hostile: {what}: ")), "")
        check("trusted path: a program cannot read the shell's terminal or be told of its input",
              line("read of the shell's terminal").endswith("NO_RIGHTS")
              and line("notification for the shell's input").endswith("NO_RIGHTS"), out)
        ctl = [line(f"{r} through the shell's terminal") for r in ("NEW", "VIEW", "SWITCH", "LIST")]
        check("trusted path: no terminal can make, view, switch or list terminals",
              all(c.endswith("NO_RIGHTS, through its own: NO_RIGHTS") for c in ctl)
              and line("unknown request").endswith("INVALID_METHOD"), "\n".join(ctl))
        check("trusted path: the owner line's mark is removed from a program's output, whole or split",
              "\n[keep: vt1 shell] forged whole" in out and "\n[keep: vt1 shell] forged split" in out
              and "\u258c[keep: vt1 shell] forged" not in out, out)
        check("trusted path: a flood of a hidden terminal is taken at once and not shown",
              line("flood of its own terminal").endswith("65536 bytes taken") and "FFFF" not in out, out)
        check("trusted path: what is typed at keep> while the program listens reaches only the shell",
              line("input it got").endswith(" 0 bytes") and "\ntyped-at-keep\n" in out, out)
        # Ctrl-T N: the hostile program's terminal (its kept output, the
        # oldest dropped), then Ctrl-T 1 back to the shell and its prompt.
        m = g.send_keys(b"\x14" + hostile.encode())
        ok = g.expect(b"flood-end", 30, m)
        seen = g.out[m:].decode(errors="replace")
        check("trusted path: Ctrl-T and vt-hostile's number show its owner line and its kept output, saying what was dropped",
              ok and f"\u258c[keep: vt{hostile} vt-hostile] (" in seen and "bytes of its output were dropped)" in seen
              and 16000 < seen.count("F") <= 16384, seen[:200])
        m = g.send_keys(b"\x141")
        ok = g.expect("\u258c[keep: vt1 shell]\r\n".encode() + PROMPT, 30, m)
        check("trusted path: Ctrl-T 1 gives the shell back the screen, its prompt shown again", ok, g.out[m:])
        m = g.send_keys(b"\x147")
        check("trusted path: Ctrl-T to a terminal that does not exist says so",
              g.expect("\u258c[keep: there is no vt7]".encode(), 30, m), g.out[m:])
        out = run_line(g, "echo still-here") or ""
        check("trusted path: the shell reads on after the switches", out.strip() == "still-here", out)
        m = g.send("linux echo from-linux")
        ok = g.expect(b"from-linux", 120, m) and g.expect(b"\n" + PROMPT, 60, m)
        seen = g.out[m:].decode(errors="replace")
        check("trusted path: linux gives the workhorse's terminal the screen and the shell takes it back",
              ok and seen.find("\u258c[keep: vt2 workhorse]") < seen.find("\nfrom-linux") < seen.find("\u258c[keep: vt1 shell]"), seen)
        # A Linux program writes the mark and Ctrl-T 1 on its terminal: the
        # mark is removed, and output never switches (only typed input can).
        m = g.send("linux printf '\\342\\226\\214[keep: vt1 shell] forged-by-linux\\024\\061\\n'")
        ok = g.expect(b"forged-by-linux", 120, m) and g.expect(b"\n" + PROMPT, 60, m)
        seen = g.out[m:].decode(errors="replace")
        check("trusted path: a Linux program cannot write the owner line's mark or switch terminals by its output",
              ok and "\n[keep: vt1 shell] forged-by-linux" in seen and seen.count("\u258c") == 2, seen)
    finally:
        g.kill()


def main():
    qemu.check_built()
    test_trusted_path()
    test_shell()
    test_make_run_halt()
    test_kernel_fault()
    test_bad_images()
    test_no_iommu()
    test_bars_above_4g()
    test_bad_description()
    test_max_description()
    test_supervision()
    test_driver_banks()
    test_disk_restart()
    test_dataspace_restart()
    failed = results.count(False)
    print(f"boot-test: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
