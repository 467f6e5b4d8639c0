#!/usr/bin/env python3
"""docs-check: every relative link in the repository's Markdown files
resolves to a file inside the repository, and no document points outside it
(a clone has no `../shared`).  Prints each broken link; exit 1 if any."""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    files = subprocess.run(["git", "ls-files", "*.md"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    bad = []
    for f in files:
        text = open(os.path.join(ROOT, f), encoding="utf-8").read()
        for n, line in enumerate(text.splitlines(), 1):
            for m in re.finditer(r"\]\(([^)\s]+)\)", line):
                target = m.group(1)
                if re.match(r"^(https?:|mailto:|#)", target):
                    continue
                path = os.path.normpath(os.path.join(os.path.dirname(f), target.split("#")[0]))
                if path.startswith("..") or not os.path.exists(os.path.join(ROOT, path)):
                    bad.append("%s:%d: link to %s does not resolve inside the repository" % (f, n, target))
            if "../shared" in line:
                bad.append("%s:%d: points to ../shared, which a clone does not have" % (f, n))
    for b in bad:
        print("docs-check: " + b)
    print("docs-check: %d Markdown files, %d broken links" % (len(files), len(bad)))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
