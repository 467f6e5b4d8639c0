#!/usr/bin/env python3
"""The workhorse's figures: boots Keep under QEMU's -icount shift=0 (one
TSC tick per instruction, docs/performance.md) and runs
user/workhorse/tests/sysbench.c through the workhorse; prints its
"NAME instructions" lines.  Not part of make test or make bench yet."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import qemu  # noqa: E402
from test_boot import Guest, PROMPT  # noqa: E402


class IcountGuest(Guest):
    def __init__(self):
        orig = qemu.base_cmd
        qemu.base_cmd = lambda accel, append="", **kw: orig(accel, append, icount=True, **kw)
        try:
            super().__init__()
        finally:
            qemu.base_cmd = orig


def main():
    g = IcountGuest()
    if not g.expect(PROMPT, 120):
        print("workhorse_bench: no prompt")
        return 1
    g.send("linux echo warm")
    g.expect(b"warm\r\n", 120)
    g.expect(PROMPT, 60, len(g.out) - 8)
    m = g.send("linux /tests/sysbench 2000")
    ok = g.expect(b"wh.proc.fork_exec_wait", 600, m) and g.expect(b"\n", 30, len(g.out) - 1)
    g.expect(PROMPT, 60, m + 20)
    g.p.kill()
    out = g.out[m:].decode(errors="replace").replace("\r", "")
    if not ok:
        print(out[-3000:])
    for line in out.splitlines():
        if line.startswith("wh."):
            print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
