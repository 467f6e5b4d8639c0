#!/usr/bin/env python3
"""The one place that knows the QEMU command line.

    qemu.py run   [--accel auto|tcg|kvm]   interactive, serial on this terminal
    qemu.py debug [--accel ...]            waits for gdb on :1234
    qemu.py test  [--timeout S]            in-guest test suite, verdict by isa-debug-exit
                  [--coverage FILE]        ... under the kernel-coverage plugin (tools/kcov.py)
                  [--append WORDS]         ... with more kernel command-line words after autotest
                  [--kernel BIN]           ... with this kernel (the coverage build, make kernel-kcov)
    qemu.py bench [--timeout S]            benchmarks under -icount (tools/bench.py), writes build/bench/
    --no-iommu                             the same machine without the VT-d IOMMU (run, debug, test)
    --tpm-state DIR                        the TPM's state in DIR, kept across boots (run, debug, test)
    --no-tpm                               the same machine without the TPM (run, debug, test)

With KEEP_KCOV_DIR=DIR in the environment every QEMU started through
base_cmd (by this script and by every tools/test_*.py) runs under TCG with
the kernel-coverage plugin and writes a trace file of its own to DIR
(`make kcov-all`, docs/coverage.md); the suites' waits for the guest are
then KCOV_SLACK times longer.

Accelerator: KVM only where the host CPU shows vmx or svm and /dev/kvm
opens; on these machines /dev/kvm is a software nested hypervisor under
which a guest's syscall never reaches its kernel, so TCG is the default."""
import argparse
import atexit
import itertools
import os
import shutil
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build"
KERNEL = BUILD / "kernel.bin"
IMAGE = BUILD / "boot.img"
DISK = BUILD / "disk.img"
DEBUG_EXIT = ["-device", "isa-debug-exit,iobase=0xf4,iosize=0x04"]
# The guest's TCP port that `-netdev user` forwards a host port to
# (docs/devices.md, "The machine").
GUEST_TCP_PORT = 7
# The network's status service (docs/network.md, "The network"): port 8 of
# each of the description's two stacks, forwarded from host ports of its own.
GUEST_STATUS = ["10.0.2.15:8", "10.0.2.16:8"]
# The network benchmarks' port (TCP and UDP; tools/netpeer.py).
BENCH_PORT = 5001
# A Linux program in the workhorse listening on this port of the
# workhorse's own address (docs/workhorse.md, "Sockets") is reached from a
# host port of its own.
GUEST_LINUX = "10.0.2.17:8080"
# Every boot under the coverage plugin, each with a trace file of its own
# in this directory (docs/coverage.md).
KCOV_DIR = os.environ.get("KEEP_KCOV_DIR")
# The plugin and the TCG it forces slow the guest; waits for the guest's
# output are this many times longer under it (never an assertion).
KCOV_SLACK = 3 if KCOV_DIR else 1
_kcov_boots = itertools.count()


def free_host_port(taken=None):
    """A TCP port on the host that nothing listens on now (for hostfwd; several
    QEMUs may run at once on this machine, so no fixed port).  With `taken`
    (a set), one not in it, added to it: the kernel may hand the same free
    port out twice in a row, and QEMU refuses two rules on one port."""
    import socket
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if taken is None:
            return port
        if port not in taken:
            taken.add(port)
            return port


def device_args(iommu=True, persistent=False, host_port=None):
    """The I/O devices (docs/devices.md): the VT-d IOMMU (before the devices
    it translates for), a virtio-blk disk on build/disk.img and a virtio-net
    NIC on user networking with a host port forwarded to GUEST_TCP_PORT.
    Both are virtio 1.0 only (disable-legacy) with iommu_platform=on: without
    it QEMU lets virtio DMA bypass the IOMMU.  Tests and benchmarks write to
    a temporary overlay (snapshot=on), so runs never change the image and
    can run side by side; `run` keeps what the guest writes."""
    args = []
    if iommu:
        args += ["-device", "intel-iommu,intremap=on,caching-mode=on"]
    snap = "" if persistent else ",snapshot=on"
    taken = {host_port} if host_port else set()
    port = host_port or free_host_port(taken)
    args += ["-drive", f"file={DISK},if=none,id=disk0,format=raw{snap}",
             "-device", "virtio-blk-pci,drive=disk0,disable-legacy=on,iommu_platform=on",
             "-netdev", f"user,id=net0,hostfwd=tcp:127.0.0.1:{port}-:{GUEST_TCP_PORT}"
             + "".join(f",hostfwd=tcp:127.0.0.1:{free_host_port(taken)}-{g}" for g in GUEST_STATUS + [GUEST_LINUX])
             + "".join(f",hostfwd={p}:127.0.0.1:{free_host_port(taken)}-:{BENCH_PORT}" for p in ("tcp", "udp")),
             "-device", "virtio-net-pci,netdev=net0,disable-legacy=on,iommu_platform=on"]
    return args


# The TPM (docs/devices.md, "The TPM"): a software TPM 2.0 (swtpm) behind
# QEMU's TPM CRB interface at 0xfed40000.  Each QEMU gets a fresh TPM in a
# directory of its own under build/tpm/, removed when this process ends,
# unless a state directory is given (the same TPM across boots).
TPM_DIR = BUILD / "tpm"
_tpm_runs = itertools.count()
_tpm_procs = []


def _stop_tpms():
    for proc, dirs in _tpm_procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)


atexit.register(_stop_tpms)


def start_tpm(state=None):
    """Starts a swtpm for one QEMU and returns its QEMU arguments.  `state`:
    a directory whose TPM state is used and kept (made if missing); None: a
    fresh TPM in a new directory under build/tpm/, removed at exit.  swtpm
    ends when QEMU closes its control channel (--terminate), and at this
    process's exit at the latest."""
    if shutil.which("swtpm") is None:
        sys.exit("qemu.py: swtpm is missing (the TPM of the machine, docs/devices.md): "
                 "run tools/install-deps.sh (Debian's swtpm and swtpm-tools), or pass --no-tpm")
    fresh = None
    if state is None:
        state = fresh = TPM_DIR / f"run-{os.getpid()}-{next(_tpm_runs)}"
        shutil.rmtree(fresh, ignore_errors=True)
    state = Path(state).resolve()
    state.mkdir(parents=True, exist_ok=True)
    # A Unix socket's path is limited to 107 bytes: the socket lives in a
    # short directory of /tmp named after this run, the state where asked.
    sock_dir = Path(f"/tmp/keep-tpm-{os.getpid()}-{next(_tpm_runs)}")
    shutil.rmtree(sock_dir, ignore_errors=True)
    sock_dir.mkdir()
    sock = sock_dir / "ctrl"
    proc = subprocess.Popen(["swtpm", "socket", "--tpm2", "--tpmstate", f"dir={state}",
                             "--ctrl", f"type=unixio,path={sock}", "--terminate",
                             "--log", f"file={state / 'swtpm.log'}"],
                            stdin=subprocess.DEVNULL)
    _tpm_procs.append((proc, [sock_dir] + ([fresh] if fresh else [])))
    deadline = time.monotonic() + 10
    while not sock.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"qemu.py: swtpm did not start (status {proc.poll()}; {state / 'swtpm.log'})")
        time.sleep(0.01)
    return ["-chardev", f"socket,id=chrtpm,path={sock}",
            "-tpmdev", "emulator,id=tpm0,chardev=chrtpm",
            "-device", "tpm-crb,tpmdev=tpm0"]


def kvm_usable():
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    if not re.search(r"\b(vmx|svm)\b", flags):
        return False
    try:
        fd = os.open("/dev/kvm", os.O_RDWR)
        os.close(fd)
        return True
    except OSError:
        return False


def choose_accel(requested):
    if requested == "auto" and KCOV_DIR:
        return "tcg"
    if requested == "auto":
        return "kvm" if kvm_usable() else "tcg"
    return requested


def base_cmd(accel, append="", icount=False, kernel=KERNEL, initrd=IMAGE, devices=True, iommu=True,
             persistent=False, tpm=True, tpm_state=None, coverage=None, memory="512M"):
    """`tpm`: with the TPM (devices only); `tpm_state`: its state directory
    (start_tpm); `coverage`: a trace file for the coverage plugin (by
    default one of its own in KEEP_KCOV_DIR, if that is set)."""
    cmd = ["qemu-system-x86_64", "-machine", "q35", "-m", memory, "-display", "none",
           "-no-reboot", "-kernel", str(kernel), "-initrd", str(initrd)] + DEBUG_EXIT
    if devices:
        cmd += device_args(iommu, persistent)
        if tpm:
            cmd += start_tpm(tpm_state)
    if accel == "kvm":
        cmd += ["-accel", "kvm", "-cpu", "host"]
    else:
        cmd += ["-accel", "tcg", "-cpu", "max"]
    if icount:
        # True: instructions as TSC ticks; a string: those -icount options
        # (the I/O benchmarks' `shift=0,sleep=on`, tools/icount.py).
        cmd += ["-icount", icount if isinstance(icount, str) else "shift=0,sleep=off"]
    if append:
        cmd += ["-append", append]
    if coverage is None and KCOV_DIR:
        Path(KCOV_DIR).mkdir(parents=True, exist_ok=True)
        coverage = Path(KCOV_DIR).resolve() / f"{Path(sys.argv[0]).stem}-{os.getpid()}-{next(_kcov_boots)}.trace"
    if coverage:
        if accel != "tcg":
            sys.exit("qemu.py: the coverage plugin needs TCG (--accel tcg)")
        sys.path.insert(0, str(ROOT / "tools"))
        import kcov
        cmd += kcov.plugin_args(Path(coverage).resolve())
    return cmd


def stream(cmd, timeout, log, on_line):
    """Runs QEMU with the serial port on a pipe and calls on_line with each
    line as it comes; a guest that hangs prints nothing, so a timer kills it
    after `timeout` seconds.  Keeps the output in `log`; returns (lines, exit
    status)."""
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    out = []
    try:
        for raw in proc.stdout:
            line = raw.decode(errors="replace").rstrip("\r\n")
            out.append(line)
            on_line(line)
    finally:
        timer.cancel()
        proc.wait()
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("\n".join(out) + "\n")
    return out, proc.returncode


def check_built():
    for f in (KERNEL, IMAGE, DISK):
        if not f.exists():
            sys.exit(f"qemu.py: {f.relative_to(ROOT)} is missing; run make first")


FAULT_REPORT = re.compile(r"^keep: process '.*' \(pid \d+\) stopped: ")
TEST_RESULT = re.compile(r"^ktest: (\S+) .* \.\.\. (ok|FAILED)")


class FaultMarker:
    """Echoes the suite's output line by line.  The kernel reports every
    process that stops on an exception; the negative tests make children
    fault on purpose, so such a report is held until the test's result line:
    if the test passed, the fault was the one it expected and is shown as
    `expected by TEST: ...`; if it failed, or no test line follows, it is
    shown as it came."""

    def __init__(self):
        self.partial, self.held = "", []

    def feed(self, text):
        self.partial += text
        *lines, self.partial = self.partial.split("\n")
        for line in lines:
            self.line(line.rstrip("\r"))

    def line(self, line):
        if FAULT_REPORT.match(line):
            self.held.append(line)
            return
        m = TEST_RESULT.match(line)
        for h in self.held:
            print(f"  expected by {m.group(1)}: {h}" if m and m.group(2) == "ok" else h)
        self.held = []
        print(line)

    def flush(self):
        for h in self.held:
            print(h)
        if self.partial:
            print(self.partial, end="")
        self.held, self.partial = [], ""
        sys.stdout.flush()


def run_captured(cmd, timeout, log, marker=None):
    """Run QEMU with the serial port on a pipe; echo (through `marker`, if
    given) and keep the output."""
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
    out = bytearray()
    os.set_blocking(proc.stdout.fileno(), False)
    timed_out = False
    while True:
        chunk = proc.stdout.read(4096)
        if chunk:
            out += chunk
            if marker:
                marker.feed(chunk.decode(errors="replace"))
            else:
                sys.stdout.write(chunk.decode(errors="replace"))
            sys.stdout.flush()
        elif proc.poll() is not None:
            break
        else:
            time.sleep(0.02)
        if time.monotonic() - start > timeout:
            timed_out = True
            proc.kill()
            proc.wait()
            break
    if marker:
        marker.flush()
    log.write_bytes(bytes(out))
    return proc.returncode, out.decode(errors="replace"), timed_out, time.monotonic() - start


def cmd_test(args):
    check_built()
    append = "autotest" + (" " + args.append if args.append else "")
    accel = choose_accel(args.accel)
    kernel = Path(args.kernel).resolve() if args.kernel else KERNEL
    cmd = base_cmd(accel, append, kernel=kernel, iommu=args.iommu, tpm=args.tpm, tpm_state=args.tpm_state,
                   coverage=args.coverage) + ["-serial", "stdio"]
    if args.cpu:  # a later -cpu replaces base_cmd's
        cmd += ["-cpu", args.cpu]
    print("qemu.py: " + " ".join(cmd), flush=True)
    rc, out, timed_out, secs = run_captured(cmd, args.timeout * KCOV_SLACK, BUILD / "ktest.log", FaultMarker())
    m = re.findall(r"ktest: (\d+) passed, (\d+) failed", out)
    if timed_out:
        sys.exit(f"qemu.py: FAIL: the in-guest tests did not finish within {args.timeout * KCOV_SLACK:g} s")
    if not m:
        sys.exit(f"qemu.py: FAIL: no 'ktest: N passed, N failed' line (QEMU exit status {rc})")
    passed, failed = map(int, m[-1])
    # isa-debug-exit: status (code << 1) | 1; the root task writes 0 for success.
    if rc != 1 or failed:
        sys.exit(f"qemu.py: FAIL: {passed} passed, {failed} failed, QEMU exit status {rc}")
    print(f"qemu.py: in-guest tests passed ({passed} tests, {secs:.1f} s)")


def cmd_bench(args):
    # The benchmark harness (lookup variants, ratios, plots) is tools/bench.py;
    # it builds its QEMU command lines with base_cmd above.
    bench = str(ROOT / "tools" / "bench.py")
    os.execvp(sys.executable, [sys.executable, bench, "--timeout", str(args.timeout)])


def cmd_run(args):
    check_built()
    accel = choose_accel(args.accel)
    # The TPM keeps its state across runs, as the disk does.
    cmd = base_cmd(accel, iommu=args.iommu, persistent=True, tpm=args.tpm,
                   tpm_state=args.tpm_state or TPM_DIR / "state") + ["-serial", "mon:stdio"]
    print(f"qemu.py: booting Keep under {accel.upper()} (Ctrl-A X quits QEMU; 'halt' powers off)",
          flush=True)
    sys.exit(subprocess.call(cmd))


def cmd_debug(args):
    check_built()
    cmd = base_cmd(choose_accel(args.accel), iommu=args.iommu, persistent=True, tpm=args.tpm,
                   tpm_state=args.tpm_state or TPM_DIR / "state") + ["-serial", "mon:stdio", "-s", "-S"]
    elf = BUILD / "kernel.elf"
    user = BUILD / "user" / "x86_64-unknown-linux-gnu" / "release"
    print("qemu.py: QEMU waits for gdb on localhost:1234. In another terminal:")
    print(f"  gdb {elf} -ex 'target remote localhost:1234' "
          f"-ex 'add-symbol-file {user / 'root'}' -ex 'break kmain' -ex continue", flush=True)
    sys.exit(subprocess.call(cmd))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["run", "debug", "test", "bench"])
    ap.add_argument("--accel", default=os.environ.get("ACCEL", "auto"), choices=["auto", "tcg", "kvm"])
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--cpu", help="test: QEMU's CPU model instead of max (e.g. max,-smap)")
    ap.add_argument("--coverage", metavar="FILE",
                    help="test: record the kernel's executed instructions in FILE (tools/kcov.py)")
    ap.add_argument("--append", help="test: more kernel command-line words after autotest")
    ap.add_argument("--kernel", help="test: this kernel.bin instead of build/kernel.bin (the coverage build: make kernel-kcov)")
    ap.add_argument("--no-iommu", dest="iommu", action="store_false",
                    help="boot without the VT-d IOMMU (the kernel then confines no DMA)")
    ap.add_argument("--tpm-state", metavar="DIR",
                    help="keep the TPM's state in DIR across boots (default: a fresh TPM each boot)")
    ap.add_argument("--no-tpm", dest="tpm", action="store_false", help="boot without the TPM")
    args = ap.parse_args()
    {"run": cmd_run, "debug": cmd_debug, "test": cmd_test, "bench": cmd_bench}[args.mode](args)


if __name__ == "__main__":
    main()
