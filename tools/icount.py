#!/usr/bin/env python3
"""The host side of the instruction-counting plugin (tools/icount-plugin;
docs/performance.md, "I/O paths"), shared by tools/bench.py (Keep) and
tools/linuxbench.py (the Linux guest).

The plugin prints `icount-plugin: region N instructions I irqs Q` at each
end marker; the guest prints `bench-io: NAME per=P [rdtsc=T] [irqs=Q]` (or
`bench-io: NAME failed: WHY`) after it.  Both reach QEMU's output in the
order they happened, so the k-th region belongs to the k-th `bench-io`
line.  A guest may add `irqs=Q`, its own count of timer interrupts in the
region, which then replaces the plugin's.  Each region is one run: NAME's figure is I / P (instructions per MiB
or per round trip), NAME.timer_irqs is Q / P."""
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "tools" / "icount-plugin"
PLUGIN = ROOT / "build" / "icount-plugin" / "libicount.so"
REGION_RE = re.compile(r"icount-plugin: region (\d+) instructions (\d+) irqs (\d+)")
IO_RE = re.compile(r"bench-io: (\S+) (?:per=(\d+)(?: rdtsc=(\d+))?(?: irqs=(\d+))?|failed: (.*))")
# QEMU under -icount with sleep=on: waiting is not counted as instructions
# by anybody, and the plugin counts what is executed.
ICOUNT_IO = "shift=0,sleep=on"


def build():
    """Builds the plugin (gcc, no QEMU headers: plugin-api.h declares what
    it uses); returns its path."""
    srcs = list(SRC.glob("*.[ch]"))
    if not PLUGIN.exists() or PLUGIN.stat().st_mtime < max(p.stat().st_mtime for p in srcs):
        PLUGIN.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-o", str(PLUGIN),
                        str(SRC / "icount.c")], check=True)
    return PLUGIN


def args(irqs, profile=None):
    """QEMU's -plugin option: count executions of the addresses `irqs` (the
    timer-interrupt entry) as interrupts; with `profile` (a path), also
    write each region's per-instruction counts to PROFILE.N."""
    return ["-plugin", f"file={build()}" + "".join(f",irq={a:#x}" for a in irqs)
            + (f",profile={profile}" if profile else "")]


def symbol(nm_lines, name):
    for line in nm_lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == name:
            return int(parts[0], 16)
    return None


class Regions:
    """Collects the plugin's regions and the guest's `bench-io` lines."""

    def __init__(self, label, log=print):
        self.label, self.log = label, log
        self.regions, self.lines = [], []

    def feed(self, line):
        m = REGION_RE.search(line)
        if m:
            self.regions.append((int(m.group(2)), int(m.group(3))))
            return True
        m = IO_RE.search(line)
        if m:
            name, per, rdtsc, irqs, why = m.groups()
            self.lines.append((name, int(per) if per else None, int(rdtsc) if rdtsc else None,
                               int(irqs) if irqs else None, why))
            if why:
                self.log(f"[{self.label}] {name} not measured: {why}")
            return True
        return False

    def samples(self):
        """name -> [(instructions per op, irqs per op, rdtsc or None, instructions)]."""
        if len(self.regions) != len(self.lines):
            sys.exit(f"icount: [{self.label}] {len(self.regions)} plugin regions but "
                     f"{len(self.lines)} bench-io lines: is the plugin loaded, are markers paired?")
        out = {}
        for (insns, irqs), (name, per, rdtsc, guest_irqs, why) in zip(self.regions, self.lines):
            # A guest that counts its timer interrupts itself (the Linux
            # guest: /proc/interrupts) says so in the line.
            if guest_irqs is not None:
                irqs = guest_irqs
            if why is None:
                out.setdefault(name, []).append((insns / per, irqs / per, rdtsc, insns))
        return out


def figure(values, unit):
    ints = all(float(v).is_integer() for v in values) or unit.startswith("instructions")
    conv = (lambda v: int(round(v))) if ints else (lambda v: round(v, 3))
    return {"median": conv(statistics.median_low(values)), "min": conv(min(values)),
            "max": conv(max(values)), "unit": unit, "runs": len(values)}


def results(regions, unit_of):
    """The figures of every region name: NAME (instructions per op) and
    NAME.timer_irqs; for a region with rdtsc (icount.check) also
    NAME.plugin, NAME.rdtsc and NAME.diff_ppm."""
    res = {}
    for name, s in regions.samples().items():
        unit = unit_of(name)
        if s[0][2] is not None:
            res[f"{name}.plugin"] = figure([x[3] for x in s], "instructions")
            res[f"{name}.rdtsc"] = figure([x[2] for x in s], "instructions")
            res[f"{name}.diff_ppm"] = figure([(x[3] - x[2]) / x[2] * 1e6 for x in s], "ppm")
            continue
        res[name] = figure([x[0] for x in s], f"instructions/{unit}")
        res[f"{name}.timer_irqs"] = figure([x[1] for x in s], f"irqs/{unit}")
    return res


def unit_of(name):
    """What one operation of a benchmark is."""
    if name.startswith(("blk.", "linux.blk.", "net.tcp.", "linux.net.tcp.", "vault.read.", "vault.write.", "wh.data.")):
        return "MiB"
    if "roundtrip" in name:
        return "roundtrip"
    if name.startswith(("busybox.", "linux.busybox.", "wh.python.", "linux.python.")):
        return "run"
    return "op"
