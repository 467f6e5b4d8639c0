# A fork of python3 with a 64 MiB bytearray (Keep only: it counts the
# workhorse's free frames in /proc/meminfo, which on the host every other
# program changes; tools/test_linux.py checks what it prints).  With
# copy-on-write the fork takes only what the child writes (python's
# reference counts touch some of its heap), not the 64 MiB.
import os


def free_kb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemFree:"):
                return int(line.split()[1])


big = bytearray(b"\x01") * (64 << 20)
r, w = os.pipe()
before = free_kb()
pid = os.fork()
if pid == 0:
    os.write(w, str(free_kb()).encode())
    os._exit(0)
os.waitpid(pid, 0)
child = int(os.read(r, 64))
print(f"python: a fork with {len(big) >> 20} MiB of heap took {(before - child) // 1024} MiB")
