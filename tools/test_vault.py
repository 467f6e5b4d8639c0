#!/usr/bin/env python3
"""The vault's secure storage from the host side (docs/trusted-core.md,
"Secure storage"): boots of system=system-vault on a copy of
build/disk.img written for real and a TPM state kept between boots
(tools/test_tpm.py's guest):
  - the first boot makes the store; a client's protocol checks pass, its
    secret is PUT, another client asking for that key is refused, a
    program without the grant has no vault, and `vault` shows the state
    and the keys per client without the secret;
  - the next boot with the same TPM gives the secret back;
  - a PCR changed at run time (`tpm extend`) and the vault restarted, a
    changed description (system-vault-other), a changed boot image (one
    byte of a file this boot does not read), another TPM: the key is
    not unsealed, every request is refused with the reason, and the
    vault's area of the disk is unchanged; the right boot again: the
    secret is back;
  - the area copied before an update and put back after: ROLLBACK, the
    area kept as it was; the newest area back: the newest secret.
Prints one line per test and a summary; exits 1 on any failure."""
import re
import shutil
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import test_boot  # noqa: E402
from test_tpm import Guest, image_files  # noqa: E402

# The vault's area (user/system/vault-test.conf).
AREA = (120832 * 512, 256 * 512)
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(f"vault-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-1500:] if detail else '')}", flush=True)
    return cond


def area(disk):
    with open(disk, "rb") as f:
        f.seek(AREA[0])
        return f.read(AREA[1])


def put_area(disk, data):
    with open(disk, "r+b") as f:
        f.seek(AREA[0])
        f.write(data)


def changed_image(path):
    """build/boot.img with one byte of a comment of the boot test's malformed
    description (system-bad, which this boot does not read) changed: another
    PCR 8, the same system."""
    whole, files = image_files(qemu.IMAGE)
    data = bytearray(whole)
    names = [n for n, _ in files]
    if "system-bad" not in names:
        raise SystemExit("vault-test: no system-bad in the boot image")
    (off,) = struct.unpack_from("<Q", whole, 16 + 64 * names.index("system-bad") + 48)
    assert data[off:off + 2] == b"# "
    data[off + 2] ^= 0x20  # "A malformed" -> "a malformed"
    path.write_bytes(bytes(data))


def boot(disk, state, what, system="system-vault", image=qemu.IMAGE):
    g = Guest(f"system={system}", state, disk=disk, image=image)
    up = g.expect(test_boot.PROMPT, 240) and wait_vault(g)
    check(f"boots ({what})", up, g.text()[-1500:])
    return g if up else None


START = re.compile(r"vault: (open|SEALED ELSEWHERE|ROLLBACK|DAMAGED|NO TPM|I/O ERROR)[^\r\n]*")


def wait_vault(g, timeout=60):
    """Waits for the whole line of the vault's start."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = START.search(g.text())
        if m and m.end() < len(g.text()):
            return True
        g.expect(b"\n", 1, len(g.out))
    return False


def vault_line(g):
    """The vault's line at its start (it may follow the prompt on its row)."""
    m = START.search(g.text())
    return m.group(0) if m else ""


def run(g, line):
    return g.cmd(line, 120)


def main():
    qemu.check_built()
    if shutil.which("swtpm") is None:
        sys.exit("vault-test: swtpm is missing: run tools/install-deps.sh")
    tmp = Path(tempfile.mkdtemp(prefix="keep-vault-"))
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    # A new disk's area, whatever `make run` left in build/disk.img's.
    assert AREA == (test_boot.VAULT_AREA[0] * 512, test_boot.VAULT_AREA[1] * 512)
    test_boot.blank_vault_area(disk)
    state = qemu.TPM_DIR / "test-vault"
    shutil.rmtree(state, ignore_errors=True)
    try:
        g = boot(disk, state, "a new TPM state, a new disk")
        if g is None:
            return
        check("the first boot makes the store", "vault: open:" in vault_line(g) and "made a new store" in vault_line(g),
              vault_line(g))
        out = run(g, "run vault-a")
        check("a client's protocol checks", "vault-client: protocol checks ... ok" in out, out)
        out = run(g, "run vault-a 1")
        check("PUT of a secret", "PUT secret: ok" in out, out)
        out = run(g, "run vault-b 3")
        check("another client asking for that key: refused", "another client's key: refused" in out, out)
        out = run(g, "run vault-stranger 2")
        check("a program without the grant has no vault", "no vault (not granted" in out, out)
        out = run(g, "vault")
        check("`vault` shows the state, the counters and the keys per client",
              "state: unsealed" in out and "vault-a: 1 key, 22 bytes" in out and "TPM counter" in out, out)
        check("... and no secret, no key's name", "kept by the vault" not in out and "secret" not in out, out)
        g.kill()
        old = area(disk)
        check("the disk holds no secret in the clear", b"kept by the vault" not in old and b"secret" not in old)

        g = boot(disk, state, "the same TPM state")
        if g is None:
            return
        out = run(g, "run vault-a 2")
        check("the secret is back at the next boot", "GET secret: 'kept by the vault: one'" in out, out)
        out = run(g, "run vault-a 4")
        check("a new value", "PUT secret: ok" in out, out)
        newest = area(disk)
        out = run(g, "tpm extend vault-test")
        out = g.cmd("kill vault") or ""
        restarted = g.expect(b"vault: SEALED ELSEWHERE", 60)
        check("a PCR changed, the vault restarted: sealed elsewhere", restarted, g.text()[-800:])
        out = run(g, "run vault-a 2")
        check("... and a GET refused with the reason", "refused: sealed elsewhere" in out, out)
        out = run(g, "vault")
        check("... which `vault` shows", "SEALED ELSEWHERE" in out and "changed boot image or description" in out, out)
        g.kill()
        check("... the area unchanged", area(disk) == newest)

        g = boot(disk, state, "a changed description", system="system-vault-other")
        if g is None:
            return
        check("a changed description: the key is not unsealed",
              "vault: SEALED ELSEWHERE" in vault_line(g) and "changed boot image or description" in vault_line(g), vault_line(g))
        out = run(g, "run vault-a 2")
        check("... every request refused", "refused: sealed elsewhere" in out, out)
        g.kill()
        check("... the area unchanged", area(disk) == newest)

        other = tmp / "boot-other.img"
        changed_image(other)
        g = boot(disk, state, "a changed boot image", image=other)
        if g is None:
            return
        check("a changed boot image: the key is not unsealed",
              "vault: SEALED ELSEWHERE" in vault_line(g) and "changed boot image or description" in vault_line(g), vault_line(g))
        out = run(g, "run vault-a 2")
        check("... every request refused", "refused: sealed elsewhere" in out, out)
        g.kill()
        check("... the area unchanged", area(disk) == newest)

        g = boot(disk, None, "a fresh TPM")
        if g is None:
            return
        check("another TPM: the key is not unsealed", "another TPM" in vault_line(g), vault_line(g))
        g.kill()
        check("... the area unchanged", area(disk) == newest)

        put_area(disk, old)
        g = boot(disk, state, "the area before the update put back")
        if g is None:
            return
        check("an old copy put back: ROLLBACK", "vault: ROLLBACK" in vault_line(g), vault_line(g))
        out = run(g, "run vault-a 2")
        check("... the old secret not served", "refused: rollback" in out, out)
        g.kill()
        check("... the area kept as it was", area(disk) == old)

        put_area(disk, newest)
        g = boot(disk, state, "the newest area, the right boot")
        if g is None:
            return
        out = run(g, "run vault-a 2")
        check("nothing lost: the newest secret is back", "GET secret: 'kept by the vault: two'" in out, out)
        g.kill()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        failed = results.count(False)
        print(f"vault-test: {len(results) - failed} passed, {failed} failed", flush=True)
        if failed or not results:
            sys.exit(1)


if __name__ == "__main__":
    main()
