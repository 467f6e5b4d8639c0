# Python's mmap module on a file (shared by default): find, slices,
# readline, write, flush (msync), the file and the mapping seeing each
# other's changes, resize (ftruncate and mremap), move, ACCESS_READ and
# ACCESS_COPY, a forked child's stores, anonymous shared memory across
# fork.  Usage: shmap.py DIR (run on the host and on Keep, for /tmp and
# /data; the output must be the same).
import hashlib
import mmap
import os
import sys

d = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
p = os.path.join(d, "mmap-py.file")
with open(p, "wb") as f:
    f.write(b"hello, mapped world\n" * 300)

with open(p, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    print("size", len(m), m.size())
    print("find", m.find(b"world"), m.rfind(b"hello"), m.find(b"absent"))
    m[0:5] = b"HELLO"
    print("readline", m.readline())
    m.seek(4096)
    m.write(b"page two")
    m.flush()
    with open(p, "rb") as g:
        print("another open reads the stores", g.read(5), g.read()[4096 - 5:4096 + 3])
    f.seek(10)
    f.write(b"WRITE")
    f.flush()
    print("the mapping sees write()", m[10:15])
    m.resize(10000)
    print("resized", len(m), os.path.getsize(p), m[9990:10000])
    m[9990:10000] = b"0123456789"
    m.move(0, 4096, 8)
    print("moved", m[:8])
    m.close()
    f.seek(9990)
    print("the file after close", f.read())

with open(p, "rb") as f:
    r = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        r[0:1] = b"x"
    except TypeError as e:
        print("read-only:", e)
    c = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    c[0:4] = b"COPY"
    print("copy", c[:4], "shared", r[:4], "file", f.read(4))
    r.close()
    c.close()

with open(p, "r+b") as f:
    m = mmap.mmap(f.fileno(), 0)
    pid = os.fork()
    if pid == 0:
        m[100:105] = b"CHILD"
        os._exit(0)
    os.waitpid(pid, 0)
    print("the parent sees the child's stores", m[100:105], "and so does the file", os.pread(f.fileno(), 5, 100))
    m.close()

a = mmap.mmap(-1, 8192)
pid = os.fork()
if pid == 0:
    a[4096:4101] = b"anon!"
    os._exit(0)
os.waitpid(pid, 0)
print("anonymous shared memory", a[4096:4101])

with open(p, "rb") as f:
    data = f.read()
print("the file", len(data), hashlib.sha256(data).hexdigest())
os.unlink(p)
