# The file system on the disk (tools/test_persist.py; docs/workhorse.md,
# "The file system on the disk"): `make` makes files, directories and links
# under /data; `list` prints the tree under a directory with each file's
# SHA-256 and every entry's modification and change times; `loop` writes
# /data/loop 32 KiB at a time for ever, printing the file's size after each
# write returned; `more` writes /data/more (STRINGS_FILE) and syncs it.
# Files hold pattern(seed, size).
import hashlib
import os
import stat
import sys

FILES = {
    "/data/empty": (1, 0),
    "/data/one": (2, 1),
    "/data/sector": (3, 512),
    "/data/dir/page": (4, 4096),
    "/data/dir/odd": (5, 70001),
    "/data/dir/sub/big": (6, 1 << 20),
}


UTIME_NS = 1_234_567_890_123_456_789

# What `more` writes: more than one request's worth (a message string
# carries 8 sectors, a dataspace request 256), not a multiple of a sector.
MORE_FILE = ("/data/more", 9, 300_001)


def pattern(seed, n):
    out = bytearray()
    k = 0
    while len(out) < n:
        out += hashlib.sha256(f"{seed}:{k}".encode()).digest()
        k += 1
    return bytes(out[:n])


def make():
    os.makedirs("/data/dir/sub", exist_ok=True)
    for path, (seed, size) in FILES.items():
        with open(path, "wb") as f:
            f.write(pattern(seed, size))
    os.symlink("dir/odd", "/data/sym")
    os.link("/data/dir/page", "/data/hard")
    os.chmod("/data/one", 0o600)
    os.mkdir("/data/gone")
    os.rmdir("/data/gone")
    with open("/data/renamed-from", "w") as f:
        f.write("renamed")
    os.rename("/data/renamed-from", "/data/renamed")
    with open("/data/trunc", "wb") as f:
        f.write(b"x" * 10000)
    os.truncate("/data/trunc", 1234)
    # A time set by hand (utimensat), to the nanosecond.
    os.utime("/data/sector", ns=(1_000_000_000_123, UTIME_NS))
    try:
        os.rename("/data/one", "/tmp/one")
    except OSError as e:
        print("rename across the mount:", e.errno)
    os.sync()
    print("made")


def listing(top):
    for root, dirs, files in sorted(os.walk(top)):
        dirs.sort()
        for n in sorted(dirs + files):
            p = os.path.join(root, n)
            st = os.lstat(p)
            times = f"mtime {st.st_mtime_ns} ctime {st.st_ctime_ns}"
            if stat.S_ISLNK(st.st_mode):
                print(p, "link", os.readlink(p), times)
            elif stat.S_ISDIR(st.st_mode):
                print(p, "dir", oct(st.st_mode & 0o7777), times)
            else:
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()[:16]
                print(p, "file", oct(st.st_mode & 0o7777), st.st_nlink, st.st_size, digest, times)


def more():
    path, seed, size = MORE_FILE
    with open(path, "wb") as f:
        f.write(pattern(seed, size))
        os.fsync(f.fileno())
    print("wrote", path)


def loop():
    data = pattern(7, 4 << 20)
    fd = os.open("/data/loop", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    at = 0
    print("writing", flush=True)
    while True:
        if at + 32768 > len(data):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, 0)
            at = 0
            print("acked 0", flush=True)
        at += os.write(fd, data[at:at + 32768])
        print("acked", at, flush=True)


if __name__ == "__main__":
    {"make": make, "list": lambda: listing(sys.argv[2] if len(sys.argv) > 2 else "/data"), "loop": loop, "more": more}[sys.argv[1]]()
