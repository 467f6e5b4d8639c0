#!/usr/bin/env python3
"""Runs groups of make targets side by side, one `make` per group ("lane"),
each group's targets in order: `make test` runs its QEMU suites in two
lanes so that a 2-core machine keeps both cores busy (each QEMU under TCG
is one thread).  Every line a lane prints is shown at once with the lane's
name in front; at the end one line per lane says how it ended and how long
it took.  The exit status is 0 only if every lane passed.

    python3 tools/lanes.py [--make-arg ARG]... "NAME=TARGET TARGET..." "NAME=TARGET..." ...

Each ARG is given to every lane's make (`make test` gives SUITE_DEPS=, so
that no lane rebuilds the image another lane's QEMU is reading: it is
built once before the lanes start)."""

import os
import re
import subprocess
import sys
import threading
import time

lock = threading.Lock()


def say(line):
    with lock:
        sys.stdout.write(line)
        sys.stdout.flush()


def lane(name, targets, make_args, results):
    make = os.environ.get("MAKE", "make")
    start = time.monotonic()
    say("lanes: %s: make %s\n" % (name, " ".join(targets)))
    p = subprocess.Popen([make, "--no-print-directory"] + make_args + targets, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    for raw in p.stdout:
        say("%s| %s" % (name, raw.decode(errors="replace")))
    p.wait()
    results[name] = (p.returncode, time.monotonic() - start)


def main(argv):
    lanes, make_args = [], []
    while argv[:1] == ["--make-arg"] and len(argv) > 1:
        make_args.append(argv[1])
        argv = argv[2:]
    for arg in argv:
        name, _, targets = arg.partition("=")
        if not name or not targets:
            sys.exit('lanes.py: usage: "NAME=TARGET TARGET..." ...')
        lanes.append((name, [t for t in re.split(r"[,\s]+", targets) if t]))
    results = {}
    threads = [threading.Thread(target=lane, args=(n, t, make_args, results)) for n, t in lanes]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = True
    for name, targets in lanes:
        rc, secs = results[name]
        ok &= rc == 0
        say("lanes: %s (%s): %s in %d s\n" % (name, " ".join(targets), "passed" if rc == 0 else "FAILED (make exited %d)" % rc, secs))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
