"""The Python workloads of `make bench` (docs/performance.md, "The
workhorse"), run by pybench.sh the same on Keep and on the Linux guest.
Each checks what it computed and exits 1 if it is not what Python gives
everywhere.  Not a conformance test.
    pybench.py compute        the interpreter's own work (no files; memory its
                              only system calls after startup)
    pybench.py files DIR      a few standard modules imported, files written,
                              listed, read, renamed and removed under DIR"""
import sys


def compute():
    # A sieve, a dictionary of counts, sorting, string building and
    # splitting, recursive calls: integers and objects only.
    n = 100000
    flags = bytearray([1]) * n
    flags[0] = flags[1] = 0
    for i in range(2, int(n ** 0.5) + 1):
        if flags[i]:
            flags[i * i::i] = bytes(len(range(i * i, n, i)))
    primes = [i for i in range(n) if flags[i]]
    counts = {}
    for p in primes:
        k = p % 97
        counts[k] = counts.get(k, 0) + 1
    keys = sorted((i * 7919) % 10007 for i in range(50000))
    words = " ".join(str(i * i) for i in range(10000)).split()
    text = "".join(w[::-1] for w in words)

    def fib(k):
        return k if k < 2 else fib(k - 1) + fib(k - 2)

    got = (len(primes), sum(counts.values()), keys[25000], len(text), fib(20))
    return got == (9592, 9592, 5003, 75374, 6765), got


def files(base):
    import json
    import os
    import shutil
    import zlib
    from pathlib import Path

    d = Path(base)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for i in range(50):
        (d / f"f{i:02}.json").write_text(json.dumps({"i": i, "items": list(range(i)), "name": f"file {i}"}))
    total = 0
    for p in sorted(d.iterdir()):
        total += sum(json.loads(p.read_text())["items"]) + p.stat().st_size
    blob = zlib.compress(b"".join(p.read_bytes() for p in sorted(d.glob("*.json"))))
    os.rename(d / "f00.json", d / "renamed.json")
    names = sorted(os.listdir(d))
    shutil.rmtree(d)
    got = (total, len(names), names[-1], len(zlib.decompress(blob)), d.exists())
    return got == (25987, 50, "renamed.json", 6387, False), got


def main():
    if sys.argv[1:] == ["compute"]:
        ok, got = compute()
    elif len(sys.argv) == 3 and sys.argv[1] == "files":
        ok, got = files(sys.argv[2])
    else:
        sys.exit(__doc__)
    print(got)
    sys.exit(0 if ok else 1)


main()
