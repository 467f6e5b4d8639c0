#!/usr/bin/env python3
"""Figures quoted in the documents are figures of the results page.

`make bench` writes docs/results.md (tools/bench.py), stating the commit
and the machine it measured.  Every other document that quotes a benchmark
by name in a table row, `| \`NAME\` | FIGURE | ...`, must quote the page's
median for it; a row that quotes another figure (an old run, a copied
typo) fails `make docs-check` with the page's value beside it.  Rows whose
second cell is not a figure (descriptions, pairs of names) are not
figures and are left alone; so are names the page does not have.

    check_figures.py            check docs/*.md and README.md
    check_figures.py --self-test
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "results.md"
ROW = re.compile(r"^\|\s*`([a-z][a-z0-9_.]*)`\s*\|\s*([^|]*?)\s*\|")
FIGURE = re.compile(r"^(-?[0-9][0-9,]*(?:\.[0-9]+)?)(?:\s*(?:\(.*\)|%|x|instructions.*|[a-zA-Z/ ]*))?$")


def page_figures(text):
    """name -> median (as text) from the results page's main table."""
    out = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(1) not in out:
            out[m.group(1)] = m.group(2)
    return out


def number(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def agrees(quoted, measured):
    """The quoted figure is the measured one, written with commas or
    with fewer decimals (rounded)."""
    q, v = number(quoted), number(measured)
    if q is None or v is None:
        return False
    decimals = len(quoted.split(".")[1]) if "." in quoted else 0
    return round(v, decimals) == q


def check(docs, figures):
    """(path, line number, name, quoted, measured) for every row that disagrees."""
    bad = []
    for path, text in docs:
        for no, line in enumerate(text.splitlines(), 1):
            m = ROW.match(line)
            if not m or m.group(1) not in figures:
                continue
            f = FIGURE.match(m.group(2))
            if not f:
                continue
            if not agrees(f.group(1), figures[m.group(1)]):
                bad.append((path, no, m.group(1), f.group(1), figures[m.group(1)]))
    return bad


def self_test():
    page = "| `a.b` | 367 | 360 | 370 | instructions | 21 |\n| `r.x` | 1.148 | 1 | 2 | ratio | 3 |\n"
    figs = page_figures(page)
    assert figs == {"a.b": "367", "r.x": "1.148"}, figs
    ok = [("d.md", "| `a.b` | 367 |\n| `a.b` | 367 (ratio 1.0) |\n| `r.x` | 1.15 |\n"
                   "| `a.b` | what it measures |\n| `unknown.name` | 5 |\n")]
    assert check(ok, figs) == [], check(ok, figs)
    wrong = [("d.md", "| `a.b` | 366 |\n| `r.x` | 1.2 |\n| `a.b` | 3,670 |\n")]
    got = [(n, q) for _, _, n, q, _ in check(wrong, figs)]
    assert got == [("a.b", "366"), ("r.x", "1.2"), ("a.b", "3,670")], got
    assert agrees("1,457,734", "1457734") and not agrees("1,457,735", "1457734")
    print("check_figures.py: self-test passed")


def main():
    if "--self-test" in sys.argv[1:]:
        self_test()
        return 0
    if not PAGE.exists():
        print("check_figures.py: docs/results.md is missing (make bench writes it)")
        return 1
    figures = page_figures(PAGE.read_text())
    paths = [p for p in sorted((ROOT / "docs").glob("*.md")) if p != PAGE] + [ROOT / "README.md"]
    bad = check([(p.relative_to(ROOT), p.read_text()) for p in paths], figures)
    for path, no, name, quoted, measured in bad:
        print(f"{path}:{no}: `{name}` quoted as {quoted}, the results page has {measured}")
    if bad:
        print(f"check_figures.py: {len(bad)} figures differ from docs/results.md "
              "(quote the page, or run make bench)")
        return 1
    print(f"check_figures.py: the figures quoted in {len(paths)} documents agree with docs/results.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
