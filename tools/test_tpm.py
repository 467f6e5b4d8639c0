#!/usr/bin/env python3
"""The TPM and the measured boot from the host side (docs/trusted-core.md,
"The trust anchor"), each a separate boot under a swtpm (tools/qemu.py):
  - the measurement log `tpm` shows is the boot image's table, each file
    of it and the description, with the digests hashlib computes from the same
    files, and PCRs 8 and 9 are the log replayed on the host;
  - two boots give the same PCRs; a changed description (system-test)
    gives another PCR 9 (and the same PCR 8);
  - seal then unseal gives the secret back; after a PCR changes
    (`tpm extend`) unseal is refused with a clear error and the blob still
    unseals in the next boot; a blob of another TPM is refused; a blob
    with the changed description is refused;
  - the NV counter increments and keeps its value across a reboot with the
    same TPM state;
  - bad input (not hex, an empty blob) is refused with a message;
  - a program of the description with `tpm` (tpm-client) seals and
    unseals through the driver and is refused EXTEND; one without the
    grant has no capability;
  - without a TPM the system boots and `tpm` says there is none;
  - without swtpm installed, qemu.py says so.
Prints one line per test and a summary; exits 1 on any failure."""
import hashlib
import re
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import test_boot  # noqa: E402

PCR_PROGRAMS, PCR_DESCRIPTION = 8, 9
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(f"tpm-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + detail if detail else '')}", flush=True)


class Guest(test_boot.Guest):
    """test_boot's guest with the TPM's state in `state` (None: a fresh
    TPM), or no TPM; `disk`: a disk image written for real (no overlay)
    instead of build/disk.img under snapshot; `image`: another boot image."""

    def __init__(self, append="", state=None, tpm=True, disk=None, image=qemu.IMAGE):
        cmd = qemu.base_cmd("tcg", append, tpm=tpm, tpm_state=state, persistent=disk is not None,
                            initrd=image) + ["-serial", "stdio"]
        disk = disk if disk is not None else test_boot.base_disk()
        drive = cmd.index("-drive") + 1
        cmd[drive] = cmd[drive].replace(f"file={qemu.DISK},", f"file={disk},")
        assert str(disk) in cmd[drive]
        self.start = time.monotonic()
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        import os
        os.set_blocking(self.p.stdout.fileno(), False)
        self.out = bytearray()
        # As test_boot.Guest: the first prompt waits for the vault's start line.
        self.settle = "system=" not in append
        self.prompt_secs = None

    def cmd(self, line, timeout=120):
        out = self.keys(line.encode() + b"\r", timeout)
        return out or ""


def image_files(path):
    """The boot image's files in order (tools/mkimage.py's format)."""
    b = path.read_bytes()
    assert b[:8] == b"KEEPIMG1"
    (n,) = struct.unpack_from("<I", b, 8)
    files = []
    for i in range(n):
        raw = b[16 + 64 * i: 16 + 64 * i + 48]
        off, size = struct.unpack_from("<QQ", b, 16 + 64 * i + 48)
        files.append((raw.rstrip(b"\0").decode(), b[off:off + size]))
    return b, files


def expected_log(description="system"):
    """(pcr, hex digest, name) of a boot of build/boot.img, as the root
    task measures it."""
    whole, files = image_files(qemu.IMAGE)
    table = whole[:16 + 64 * len(files)]
    log = [(PCR_PROGRAMS, hashlib.sha256(table).hexdigest(), "boot-image")]
    log += [(PCR_PROGRAMS, hashlib.sha256(d).hexdigest(), n) for n, d in files]
    log += [(PCR_DESCRIPTION, hashlib.sha256(d).hexdigest(), n) for n, d in files if n == description]
    return log


def replay(log, pcr):
    v = bytes(32)
    for p, d, _ in log:
        if p == pcr:
            v = hashlib.sha256(v + bytes.fromhex(d)).digest()
    return v.hex()


def shown(out):
    """`tpm`'s PCRs, log and counter."""
    pcrs = {int(m.group(1)): m.group(2) for m in re.finditer(r"^PCR (\d+)  ([0-9a-f]{64})", out, re.M)}
    log = [(int(m.group(1)), m.group(2), m.group(3).strip())
           for m in re.finditer(r"^  (\d+)  ([0-9a-f]{64})  (.+)$", out, re.M)]
    m = re.search(r"^NV counter 0x[0-9a-f]+: (\d+)", out, re.M)
    return pcrs, log, int(m.group(1)) if m else None


def blob_lines(out):
    return re.findall(r"^blob ([0-9a-f]+)", out, re.M)


def put_blob(g, lines):
    out = g.cmd("tpm blob")
    for h in lines:
        out += g.cmd(f"tpm blob {h}")
    return out


def boot(append="", state=None, tpm=True):
    g = Guest(append, state, tpm)
    up = g.expect(test_boot.PROMPT, 240)
    check(f"boots to the prompt ({append or 'system'}, {'no TPM' if not tpm else 'TPM state ' + (state.name if state else 'fresh')})",
          up, g.text()[-600:])
    return g if up else None


def main():
    qemu.check_built()
    if shutil.which("swtpm") is None:
        sys.exit("tpm-test: swtpm is missing: run tools/install-deps.sh")
    # Without swtpm on the PATH, qemu.py says what is missing and how to
    # get it, and starts no QEMU.
    import os
    r = subprocess.run([sys.executable, str(qemu.ROOT / "tools" / "qemu.py"), "test", "--timeout", "5"],
                       env=dict(os.environ, PATH="/nonexistent"), capture_output=True, text=True, timeout=60)
    check("without swtpm, qemu.py says so and how to install it",
          r.returncode != 0 and "swtpm is missing" in r.stderr and "install-deps.sh" in r.stderr,
          r.stdout[-300:] + r.stderr[-300:])
    state_a = qemu.TPM_DIR / "test-a"
    shutil.rmtree(state_a, ignore_errors=True)
    want = expected_log()
    want_pcrs = {p: replay(want, p) for p in (PCR_PROGRAMS, PCR_DESCRIPTION)}
    blob = []
    first = {}
    counter = None

    # Boot 1, TPM state A (new).
    g = boot(state=state_a)
    if g:
        try:
            check("the driver found the TPM and the boot was measured",
                  "tpm: TPM 2.0 on the CRB at 0xfed40000, started" in g.text()
                  and f"measured boot: {len(want)} measurements in PCRs 8 and 9 (" in g.text(), g.text()[-1500:])
            out = g.cmd("tpm")
            pcrs, log, counter = shown(out)
            first = pcrs
            check("the log is the boot image's table, its files and the description, digests as hashlib's",
                  log == want, f"\n{log}\n{want}")
            check("PCRs 8 and 9 are the log replayed on the host", pcrs == want_pcrs, f"{pcrs} {want_pcrs}")
            check("the NV counter is shown", counter is not None, out)
            out = g.cmd("run tpm-client")
            check("a program with `tpm` in the description seals, unseals, reads the counter and may not extend",
                  "tpm-client: sealed and unsealed 17 bytes" in out and "tpm-client: EXTEND refused: denied" in out
                  and "tpm-client: INCREMENT of the vault's counter refused: denied" in out
                  and "tpm-client: INCREMENT of the checkpointer's counter refused: denied" in out
                  and f"tpm-client: NV counter {counter}" in out and "exited with code 0" in out, out)
            out = g.cmd("run tpm-stranger")
            check("a program without `tpm` has no capability to the TPM",
                  "tpm-client: no capability to the TPM" in out and "exited with code 2" in out, out)
            out = g.cmd("tpm increment")
            check("the NV counter increments", f"NV counter incremented: {counter + 1}" in out if counter is not None else False, out)
            out = g.cmd("tpm seal the sealed secret")
            blob = blob_lines(out)
            check("seal gives a blob", "sealed 17 bytes to PCRs 8 and 9" in out and blob, out)
            out = g.cmd("tpm unseal")
            check("unseal gives the secret back", "tpm: unsealed: the sealed secret" in out, out)
            out = g.cmd("tpm random")
            check("random gives 16 bytes", re.search(r"tpm: random [0-9a-f]{32}\b", out), out)
            out = g.cmd("tpm blob 0g")
            check("a blob that is not hex is refused", "want hexadecimal digits" in out, out)
            out = g.cmd("tpm blob") + g.cmd("tpm unseal")
            check("an empty blob is refused", "unseal refused: not a sealed blob of this TPM" in out, out)
            out = put_blob(g, blob[:1]) + g.cmd("tpm unseal")
            check("a cut blob is refused", "unseal refused: not a sealed blob of this TPM" in out, out)
            out = g.cmd("tpm bogus")
            check("an unknown word is refused with the usage", "tpm: usage: tpm [" in out, out)
            out = g.cmd("tpm extend something else")
            out += put_blob(g, blob) + g.cmd("tpm unseal")
            check("after a PCR changes, unseal is refused, naming the cause",
                  "unseal refused: the PCRs are not those of the sealing" in out, out)
            pcrs, log, _ = shown(g.cmd("tpm"))
            check("the extension is in the log and in PCR 9",
                  log[-1][2] == "shell: something else" and pcrs.get(9) == replay(log, 9) != want_pcrs[9], f"{log[-1:]} {pcrs}")
        finally:
            g.kill()

    # Boot 2, the same TPM state.
    g = boot(state=state_a)
    if g:
        try:
            pcrs, log, c = shown(g.cmd("tpm"))
            check("a second boot gives the same PCRs", pcrs == first and pcrs == want_pcrs, f"{pcrs} {first}")
            check("the NV counter keeps its value across the reboot",
                  counter is not None and c == counter + 1, f"{c} after {counter}")
            out = put_blob(g, blob) + g.cmd("tpm unseal")
            check("the blob unseals after a reboot with the same TPM and boot",
                  "tpm: unsealed: the sealed secret" in out, out)
        finally:
            g.kill()

    # Boot 3, the same TPM state and another description.
    g = boot("system=system-test", state=state_a)
    if g:
        try:
            other = expected_log("system-test")
            pcrs, log, _ = shown(g.cmd("tpm"))
            check("a changed description gives another PCR 9 (PCR 8 the same), as replayed on the host",
                  log == other and pcrs.get(9) == replay(other, 9) != want_pcrs[9] and pcrs.get(8) == want_pcrs[8],
                  f"{pcrs}")
            out = put_blob(g, blob) + g.cmd("tpm unseal")
            check("with a changed description, unseal is refused",
                  "unseal refused: the PCRs are not those of the sealing" in out, out)
        finally:
            g.kill()

    # Boot 4, a fresh TPM.
    g = boot()
    if g:
        try:
            out = put_blob(g, blob) + g.cmd("tpm unseal")
            check("a blob of another TPM is refused", "unseal refused: not a sealed blob of this TPM" in out, out)
        finally:
            g.kill()

    # Boot 5, no TPM.
    g = boot(tpm=False)
    if g:
        try:
            check("without a TPM the driver says so", "no TPM" in g.text(), g.text()[-1500:])
            out = g.cmd("tpm")
            check("without a TPM, tpm says there is none", "tpm: PCR 8: no TPM" in out, out)
            out = g.cmd("ps")
            check("without a TPM the system still runs", "workhorse" in out, out)
        finally:
            g.kill()
    shutil.rmtree(state_a, ignore_errors=True)
    failed = results.count(False)
    print(f"tpm-test: {len(results) - failed} passed, {failed} failed")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
