#!/usr/bin/env python3
"""docs-check, history markers: the documents and the code's comments say
what exists and why, not how the work went.  Refused, with file:line:

  * a numbered work period: "session 19", "phase 2", "wave", "milestone 3";
  * an issue or pull request by number: "issue 17", "issues 17 and 18",
    "#17", "PR 4";
  * a branch by name: "branch net-ring", "on the branch", "this branch's",
    "before merging";
  * the history of a change: "before this change", "after the fix",
    "used to be", "which used to", "was tried", "tried and dropped".

Scanned: docs/*.md, README.md, user/README.md, and every tracked source
file under kernel/, user/, tools/, sfi/, abi/ and the Makefiles (whole lines,
so comments and strings alike).  A protocol's phases ("the receive phase")
and words like "now" or "no longer" that can describe behaviour are not
refused.  `--self-test` checks the rules on made-up lines.  Exit 1 on any hit.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RULES = [
    (r"\b(sessions?|waves?|sprints?|milestones?)\s+\d+(?!\d|[:.]\d)", "a numbered work period"),
    (r"\bphases?\s+(\d+|one|two|three|I|II)\b", "a numbered work period (a protocol's phase has a name, not a number)"),
    (r"\bwaves?\b", "a work period (\"wave\")"),
    (r"\b(issues?|tickets?|PRs?|pull requests?)\s+#?\d+", "an issue or pull request by number"),
    (r"\bissues\s+\d+(\s*(,|and|or)\s*\d+)+", "issues by number"),
    (r"(?<![\w\"'`&/])#\d+\b(?![\w\"'`])", "an issue or pull request by number (\"#N\")"),
    (r"\bbranch(es)?\s+`?[a-z][a-z0-9]*(-[a-z0-9]+)+`?", "a branch by name"),
    (r"\b(on|from|of|in) (the|this|that) branch\b|\b(this|the|that) branch's\b", "a branch of the work"),
    (r"\b(before|after|since|until) (merging|the merge)\b", "the history of a merge"),
    (r"\b(before|after|since|until) (this|that|the) (change|commit|fix|patch|rewrite)\b", "the history of a change"),
    (r"\bused to be\b|\b(it|which|that|this|they|we|there|who) used to\b", "what used to be"),
    (r"\b(was|were|been|we) tried\b|\btried and (dropped|abandoned|reverted)\b|\bwhat was tried\b", "what was tried"),
    (r"\b(not logged then|logged then)\b", "the history of the log"),
]
COMPILED = [(re.compile(p, re.IGNORECASE if "PR" not in p else 0), why) for p, why in RULES]
# The issue/PR rule is case-sensitive for "PR" only; give it its own flags.
COMPILED[3] = (re.compile(r"\b(?:[Ii]ssues?|[Tt]ickets?|PRs?|[Pp]ull [Rr]equests?)\s+#?\d+"), RULES[3][1])

SOURCE_DIRS = ("kernel/", "user/", "tools/", "sfi/", "abi/")
SOURCE_EXT = (".c", ".h", ".S", ".s", ".rs", ".py", ".toml", ".sh", ".ld", ".js", ".txt", ".mk")
# The checker itself quotes the markers it refuses.
SKIP = ("user/Cargo.lock", "tools/check_history.py")


def hits(line):
    """The rules a line breaks, as (column, matched text, why)."""
    out = []
    for rx, why in COMPILED:
        m = rx.search(line)
        if m and all(m.start() + 1 != c for c, _, _ in out):
            out.append((m.start() + 1, m.group(0), why))
    return out


def files():
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split("\n")
    out = []
    for f in tracked:
        if not f or f in SKIP or not os.path.exists(os.path.join(ROOT, f)):
            continue
        base = os.path.basename(f)
        if (f.startswith("docs/") and f.endswith(".md") and "/" not in f[5:]) or f in ("README.md", "user/README.md"):
            out.append(f)
        elif base in ("Makefile", "GNUmakefile") or (f.startswith(SOURCE_DIRS) and f.endswith(SOURCE_EXT)):
            out.append(f)
    return out


def self_test():
    marked = [
        "Session 19 made the ring faster.",
        "as asked by issue 17, the server retries",
        "issues 17 and 18 measure I/O",
        "fixed in #17 by moving the lock",
        "/* phase 2: inside Keep */",
        "measured on the branch net-ring",
        "the figure before this change was 353",
        "it used to copy every frame",
        "a second ring was tried and dropped",
        "the second wave of drivers",
    ]
    clean = [
        "The receive phase ends when a message arrives.",
        "the send phase and the receive phase of a call",
        "the second name is \"NAME #2\"",
        "#define KEEP_TAG_SEND_NONBLOCK 0x4000000ULL",
        "a register used to hold the sandbox base",
        "the fast path takes the alone-or-not branch",
        "a process that no longer exists gets NOT_FOUND",
        "see docs/devices.md#the-network",
        "the PCI server's session 00:03.0 for the NIC",
    ]
    bad = [l for l in marked if not hits(l)] + [l for l in clean if hits(l)]
    for l in bad:
        print("check_history self-test: wrong verdict on: %r -> %r" % (l, hits(l)))
    print("check_history self-test: %d marked and %d clean lines, %d wrong" % (len(marked), len(clean), len(bad)))
    return not bad


def main():
    if "--self-test" in sys.argv[1:]:
        sys.exit(0 if self_test() else 1)
    n = 0
    fs = files()
    for f in fs:
        try:
            text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        except UnicodeDecodeError:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            for col, what, why in hits(line):
                print("docs-check: %s:%d:%d: history marker %r (%s); say what exists and why" % (f, i, col, what, why))
                n += 1
    print("docs-check: %d files scanned for history markers, %d found" % (len(fs), n))
    sys.exit(1 if n else 0)


if __name__ == "__main__":
    main()
