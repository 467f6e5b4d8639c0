#!/usr/bin/env python3
"""Count the lines of kernel/ (code lines: not blank, not comment-only),
per folder, for docs/kernel-size.md.  Generated files are listed apart."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GENERATED = {"kernel/include/keep/abi.h"}


def code_lines(text):
    n, in_block = 0, False
    for line in text.splitlines():
        s = line.strip()
        if in_block:
            if "*/" in s:
                in_block = False
                s = s.split("*/", 1)[1].strip()
            else:
                continue
        if s.startswith("/*") and "*/" not in s:
            in_block = True
            continue
        if not s or s.startswith("//") or re.fullmatch(r"/\*.*\*/", s):
            continue
        n += 1
    return n


def main():
    per_dir, total, total_raw = {}, 0, 0
    for p in sorted((ROOT / "kernel").rglob("*")):
        if p.suffix not in (".c", ".h", ".S", ".ld") or "test" in p.parts:
            continue
        rel = str(p.relative_to(ROOT))
        if rel in GENERATED:
            continue
        text = p.read_text()
        c = code_lines(text)
        d = str(p.parent.relative_to(ROOT))
        per_dir[d] = per_dir.get(d, 0) + c
        total += c
        total_raw += len(text.splitlines())
    print("| folder | code lines |")
    print("|---|---:|")
    for d, c in per_dir.items():
        print(f"| `{d}/` | {c} |")
    print(f"| **kernel/ total** | **{total}** ({total_raw} with comments and blank lines) |")


if __name__ == "__main__":
    main()
