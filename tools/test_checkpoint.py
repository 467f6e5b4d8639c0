#!/usr/bin/env python3
"""Whole-pool persistence across power cuts (docs/persistence.md), on a
copy of build/disk.img that persists between boots (QEMU without
snapshot=on), booted with system=system-checkpoint
(user/system/checkpoint-test.conf: the persistent workloads `tally`, two
processes passing a token by IPC and checking that their counts agree,
and `wraps`, a ring of wrappers made, revoked and checked,
and the checkpointer capturing the persistent pool every 20 ms, each
checkpoint's lines on the console):

  - first boot: an empty area (the checkpointer says so and opens the
    pool; the root task builds tally from it); the shell's `checkpoint`
    commits one, `persist` shows it, both roots and the pool; on an area
    too small `checkpoint small-area` is refused as a full area and
    `persist small-area` says why; a checkpointer that is not in the
    description is named as such;
  - power cuts: QEMU killed (SIGKILL of the PID this test started) at a
    random moment of the periodic checkpoints (each cut's seed printed);
    the next boot resumes a checkpoint no older than the last one the
    console reported committed and no newer than the last one begun, with
    tally's and wraps' processes, and tally goes on from that checkpoint's round:
    after the last round it printed before that checkpoint began, and no
    later than the last round it printed before the cut (its counts never
    disagree: no mix of two checkpoints, no lost page, no reply twice);
  - a flipped bit in the newest root (on the host, between boots): the
    next boot falls back to the other root and says why; it resumes that
    root's checkpoint only when the TPM's checkpoint counter was not yet
    raised past it (the cut came between the newest root's write and its
    increment), and otherwise refuses it as a rollback;
  - a rolled-back area (the disk of before two more checkpoints put back):
    refused as a ROLLBACK with both counters, the pool started afresh;
  - the seal's key is kept sealed by the TPM (every boot but one has the
    same swtpm state): a boot on another TPM cannot unseal it, says so and
    starts afresh;
  - `fresh` on the kernel command line (`boot fresh`): the pool starts
    empty and tally starts again from round 0.

Usage: test_checkpoint.py [--cuts N] [--seed S] [--keep-disk]"""
import argparse
import random
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
import test_tpm  # noqa: E402
from test_boot import PROMPT  # noqa: E402

# The checkpointer's area (user/system/checkpoint-test.conf, system.conf).
AREA_SECTOR = 98304
AREA_BLOCKS = 2048
APPEND = "system=system-checkpoint"
# The persistent processes: tally's two and wraps' two.
PROCESSES = 4
# tally's arg: a line every EVERY rounds.
EVERY = 2000
AREA_LINE = f"checkpointer: area of {AREA_BLOCKS} blocks: "
RESUMED = re.compile(rf"{AREA_LINE}resumed checkpoint (\d+) of .*?: (\d+) processes, (\d+) records, epoch (\d+), "
                     r"restored in \d+ TSC ticks, running at TSC \d+(; fell back from root (\w): (.*))?$", re.M)
# The programs' lines may follow the shell's prompt on its line, so they are
# found anywhere in a line, not only at its start.
ROUND = re.compile(r"tally: round (\d+) ok")
BEGINS = re.compile(r"checkpointer: checkpoint (\d+) begins")

failures = []


def check(name, cond, detail=""):
    print(f"checkpoint-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-3000:] if detail else '')}",
          flush=True)
    if not cond:
        failures.append(name)
    return cond


# The machine's TPM: one swtpm state for every boot (the key is sealed to it).
TPM_STATE = None


def boot(disk, append=APPEND, tpm_state=None):
    g = test_tpm.Guest(append, state=tpm_state or TPM_STATE, disk=disk)
    if not g.expect(PROMPT, 120) or not g.expect(AREA_LINE.encode(), 60):
        g.kill()
        raise SystemExit(f"checkpoint-test: no prompt or no checkpointer: {g.text()[-2000:]}")
    g.expect(b"\n", 5, g.text().rfind(AREA_LINE))
    # tally's and wraps' first lines after the start or the restore.
    g.wait_for(re.compile(rb"tally: round \d+ ok"), 60)
    g.wait_for(re.compile(rb"wraps: round \d+ ok"), 60)
    return g


def wraps_held(text):
    """wraps went on in this boot's text and never found a capability
    that broke its rule (a live wrapper refused, a revoked one answering)."""
    return re.search(r"wraps: round \d+ ok", text) is not None and "wraps: MISMATCH" not in text


def clean(text):
    return text.replace("\r", "")


def progress(text):
    """The last checkpoint the console said committed, and the last begun."""
    done = [int(x) for x in re.findall(r"checkpointer: checkpoint (\d+) committed \(", text)]
    done += [int(x) for x in re.findall(r"checkpoint (\d+) committed by 'checkpointer'", text)]
    begun = [int(x) for x in BEGINS.findall(text)]
    return max(done, default=0), max(begun + done, default=0)


def rounds_at_begin(text, start_round):
    """For each checkpoint begun in this boot's text: the last round tally
    printed before it began (its state at BEGIN is at least that round);
    start_round before tally's first line.  And the last round printed."""
    at = {}
    last = start_round
    for m in re.finditer(f"{ROUND.pattern}|{BEGINS.pattern}", text):
        if m.group(1):
            last = int(m.group(1))
        else:
            at[int(m.group(2))] = last
    return at, last


def first_round(text):
    """tally's first round printed in this boot, and whether it said it resumed."""
    m = ROUND.search(text)
    return (int(m.group(1)) if m else None), "tally: resumed at round" in text


# The checkpointer's and tally's own lines, which the console interleaves
# with the shell's output wherever they fall (even inside one of its lines).
OWN_LINE = re.compile(r"(checkpointer: checkpoint \d+ (begins|committed \(\d+ pages written; \d+ of \d+ records sealed again\))|tally: round \d+ ok|wraps: round \d+ ok)\n")


def shell(g, cmd):
    """The shell's answer to cmd, without the checkpointer's and tally's own lines."""
    return OWN_LINE.sub("", clean(g.keys(cmd.encode() + b"\r", 60) or ""))


def first_boot(disk):
    g = boot(disk)
    text = clean(g.text())
    check("an empty area: the checkpointer starts afresh and says so",
          f"{AREA_LINE}no checkpoint in the area; starting afresh" in text, text[-2000:])
    check("the seal's key is kept sealed by the TPM, not in the clear",
          "kept in the clear" not in text, text[-2000:])
    check("a fresh pool: the root task builds tally from it, which starts at round 0",
          "persist: 'tally' started from the persistent pool" in text
          and "tally: started (name service live)" in text and first_round(text) == (EVERY, False), text[-2000:])
    check("the capability workload wraps starts from the pool and keeps its rule",
          "persist: 'wraps' started from the persistent pool" in text and wraps_held(text), text[-2000:])
    out = shell(g, "checkpoint")
    m = re.search(r"checkpoint (\d+) committed by 'checkpointer': (\d+) pages written, (\d+) blocks", out)
    check("the shell's checkpoint commits one", m is not None, out)
    out = shell(g, "persist")
    check("persist shows the last checkpoint, the area, both roots, the key's keeping and the pool",
          re.search(r"last checkpoint: \d+ of \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC, \d+ pages, \d+ KiB on the disk, \d+ pages written by it", out)
          and f"area: {AREA_BLOCKS} blocks of 4 KiB" in out
          and re.search(r"root A: checkpoint \d+; root B: (checkpoint \d+|empty)", out)
          and "at start: no checkpoint in the area; starting afresh" in out
          and "seal's key: sealed by the TPM to this boot's measurements" in out
          and re.search(r"freshness: the TPM's checkpoint counter is \d+\n", out)
          and re.search(r"persistent pool: (open|captured), \d+ of 8192 frames in use, epoch \d+", out)
          and re.search(r"last capture: \d+ records \(\d+ sealed again, \d+ unchanged since the last checkpoint\), "
                        r"pause \d+ TSC ticks", out), out)
    # Dirty tracking: a checkpoint after the first reads again only what
    # changed since it, the rest (the programs' unchanged pages) taken as
    # the last checkpoint has it.
    cap = re.search(r"epoch (\d+)\n.*last capture: (\d+) records \((\d+) sealed again, (\d+) unchanged", out)
    check("persist: a checkpoint after the first seals again only what changed (most records unchanged)",
          cap and int(cap[1]) >= 2 and int(cap[4]) > int(cap[3]) and int(cap[3]) + int(cap[4]) == int(cap[2]), out)
    out = shell(g, "checkpoint small-area")
    check("on an area too small, checkpoint is refused as a full area",
          re.search(r"checkpoint: 'small-area': the checkpoint area is full: \d+ blocks needed, 48 free; the previous checkpoint is kept", out), out)
    out = shell(g, "persist small-area")
    check("persist on it shows no checkpoint and the refusal",
          "last checkpoint: none" in out and "1 failed (last: the checkpoint area is full" in out, out)
    out = shell(g, "checkpoint nosuch")
    check("a checkpointer not in the description is named as such",
          "checkpoint: the system description has no checkpointer named 'nosuch'" in out, out)
    out = shell(g, "help persist")
    check("help persist describes it", "persist [server]" in out and "fell back" in out, out)
    return g


def flip_newest_root(disk, text):
    """Flips a bit in the middle of the root the last `persist` named newest;
    returns (its letter, the other's sequence)."""
    m = re.findall(r"root A: checkpoint (\d+); root B: checkpoint (\d+)", text)
    a, b = (int(x) for x in m[-1])
    slot, other = (0, b) if a > b else (1, a)
    with open(disk, "r+b") as f:
        at = AREA_SECTOR * 512 + slot * 4096 + 100
        f.seek(at)
        byte = f.read(1)[0]
        f.seek(at)
        f.write(bytes([byte ^ 0x10]))
    return "AB"[slot], other


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cuts", type=int, default=20)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep-disk", action="store_true")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int(time.time())
    print(f"checkpoint-test: {args.cuts} power cuts from seed {seed}")
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="persist-checkpoint-"))
    global TPM_STATE
    TPM_STATE = tmp / "tpm"
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    try:
        g = first_boot(disk)
        resumed_ok = 0
        fell_back = 0
        begun_at = {}   # checkpoint -> the last round tally printed before it began
        start_round = 0
        said_any = False
        for i in range(args.cuts):
            cut_seed = rng.randrange(1 << 32)
            delay = random.Random(cut_seed).uniform(0.0, 2.5)
            time.sleep(delay)
            g.kill()
            g.wait_exit(5)
            g.expect(b"\0", 10)  # everything it wrote before the cut, to the end of the pipe
            before = clean(bytes(g.out).decode(errors="replace"))
            acked, begun = progress(before)
            at, last = rounds_at_begin(before, start_round)
            begun_at.update(at)
            g = boot(disk)
            text = clean(g.text())
            m = RESUMED.search(text)
            seq = int(m.group(1)) if m else -1
            first, said = first_round(text)
            low = begun_at.get(seq, -1) + EVERY
            said_any = said_any or said
            good = (m is not None and acked <= seq <= begun and int(m.group(2)) == PROCESSES
                    and first is not None and low <= first <= last + EVERY and "MISMATCH" not in text
                    and wraps_held(text))
            if m and m.group(5):
                fell_back += 1
            resumed_ok += good
            check(f"cut {i + 1} (seed {cut_seed}, {delay:.3f} s): resumed checkpoint {seq} (committed before the cut "
                  f"{acked}, begun {begun}), tally at round {first} (at least {low}, at most {last + EVERY})"
                  f"{', fell back: ' + m.group(7) if m and m.group(5) else ''}",
                  good, "\n".join(l for l in text.splitlines()[-60:] if not l.startswith(("  0000", "boot image:"))))
            start_round = (first or EVERY) - EVERY
        check("tally noticed a restore (its capability to the name service went stale)", said_any or args.cuts == 0)
        # Dirty tracking across a restore: the first checkpoint after it
        # reads again only what changed since the checkpoint restored.
        g.wait_for(re.compile(rb"checkpointer: checkpoint \d+ committed"), 60)
        after = re.search(r"checkpointer: checkpoint \d+ committed \(\d+ pages written; (\d+) of (\d+) records sealed again\)",
                          clean(g.text()))
        check("the first checkpoint after a restore seals again only what changed since the checkpoint restored",
              args.cuts == 0 or (after is not None and RESUMED.search(clean(g.text())) is not None
                                 and int(after.group(1)) < int(after.group(2)) // 2), clean(g.text())[-1500:])
        print(f"checkpoint-test: {resumed_ok} of {args.cuts} cuts resumed the last committed checkpoint "
              f"({fell_back} of them fell back from a root cut in its write)")
        # A flipped bit in the newest root: the next boot falls back.
        out = shell(g, "persist")
        g.kill()
        g.wait_exit(5)
        letter, other = flip_newest_root(disk, out)
        g = boot(disk)
        text = clean(g.text())
        m = RESUMED.search(text)
        # The other root is resumed if the counter had not yet gone past it
        # (the kill came between the newest root's write and its
        # increment); otherwise it is older than the last committed: a
        # rollback, refused.  Which of the two depends on where the kill
        # landed; either way the boot says it fell back and why.
        refused = re.search(rf"{AREA_LINE}checkpoint {other} could not be restored \(ROLLBACK: it carries counter (\d+) "
                            r"and the TPM's checkpoint counter is (\d+): .*\); fell back from root "
                            rf"{letter}: .*root checksum wrong.*; starting afresh", text)
        check(f"a bit flipped in root {letter}: the boot falls back to checkpoint {other}, says why, and resumes it "
              "only if it is not older than the last committed",
              "MISMATCH" not in text and (
                  (m is not None and int(m.group(1)) == other and m.group(6) == letter
                   and "root checksum wrong" in (m.group(7) or ""))
                  or (m is None and refused is not None and int(refused.group(1)) + 1 == int(refused.group(2))
                      and first_round(text) == (EVERY, False))), text[-1500:])
        print(f"checkpoint-test: the fall-back was {'refused as a rollback' if m is None else 'resumed'}")
        # A rolled-back area: the disk of now, put back after two more
        # checkpoints have raised the TPM's counter past all it holds.
        g.kill()
        g.wait_exit(5)
        old = tmp / "old-disk.img"
        shutil.copyfile(disk, old)
        g = boot(disk)
        for _ in range(2):
            out = shell(g, "checkpoint")
            check("a checkpoint after the copy commits", "committed by 'checkpointer'" in out, out)
        out = shell(g, "persist")
        tpm_now = re.search(r"freshness: the TPM's checkpoint counter is (\d+)", out)
        g.kill()
        g.wait_exit(5)
        shutil.copyfile(old, disk)
        g = boot(disk)
        text = clean(g.text())
        r = re.search(rf"{AREA_LINE}checkpoint \d+ could not be restored \(ROLLBACK: it carries counter (\d+) "
                      r"and the TPM's checkpoint counter is (\d+): an older checkpoint than the last committed, put back\)"
                      r".*; starting afresh", text)
        check("an older area put back is refused as a rollback, with both counters, and the pool starts afresh",
              r is not None and tpm_now is not None and int(r.group(2)) >= int(tpm_now.group(1))
              and int(r.group(1)) < int(tpm_now.group(1)) and RESUMED.search(text) is None
              and first_round(text) == (EVERY, False), text[-1500:])
        # Another TPM: the sealed key does not unseal, so nothing is restored.
        g.kill()
        g.wait_exit(5)
        g = boot(disk, tpm_state=tmp / "other-tpm")
        text = clean(g.text())
        check("on another TPM the newest checkpoint's key does not unseal: the boot says so and starts afresh",
              re.search(rf"{AREA_LINE}checkpoint \d+ could not be restored \(the seal's key does not unseal "
                        r"on this boot: .*\); starting afresh", text) is not None
              and first_round(text) == (EVERY, False), text[-1500:])
        # boot fresh: the pool starts empty, whatever the area holds.
        g.kill()
        g.wait_exit(5)
        g = boot(disk, APPEND + " fresh")
        text = clean(g.text())
        check("boot fresh: the pool starts empty and tally from round 0, the area kept",
              "persist: boot fresh: the persistent pool starts empty" in text
              and f"{AREA_LINE}the persistent pool is open already" in text
              and first_round(text) == (EVERY, False), text[-1500:])
        g.send("halt")
        if g.wait_exit(60) is None:
            g.kill()
    finally:
        if args.keep_disk:
            print(f"checkpoint-test: disk kept in {disk}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"checkpoint-test: {'all passed' if not failures else f'{len(failures)} failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
