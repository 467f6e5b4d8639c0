#!/usr/bin/python3
"""Debian's python3 on Keep and on the host (tools/test_linux.py runs both,
with busybox's applets as the external commands, and compares the
output): files and directories, pipes and fork, subprocesses, signals,
threads, sockets and asyncio, and a few standard library modules (some
in C: lib-dynload).  Usage: python.py DIR (a writable directory)."""
import collections
import hashlib
import json
import select
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib

base = sys.argv[1] if len(sys.argv) > 1 else "/tmp"
work = os.path.join(base, "python-test")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)

# Files and directories.
with open("a.txt", "w") as f:
    for i in range(1000):
        f.write(f"line {i}\n")
with open("a.txt", "rb") as f:
    data = f.read()
    f.seek(-9, os.SEEK_END)
    print("files:", len(data), f.read().strip(), f.tell())
os.mkdir("d")
for n in ["z", "b", "m"]:
    open(os.path.join("d", n), "w").close()
print("listdir:", sorted(os.listdir("d")), os.path.isdir("d"), os.path.exists("nosuch"))
shutil.copy("a.txt", "d/copy")
os.rename("d/copy", "d/renamed")
print("stat:", os.stat("d/renamed").st_size, oct(os.stat("d").st_mode & 0o170000))
with tempfile.NamedTemporaryFile("w+", dir=work) as t:
    t.write("temporary")
    t.flush()
    t.seek(0)
    print("tempfile:", t.read())
shutil.rmtree("d")
print("after rmtree:", sorted(os.listdir(".")))
try:
    open("nosuch/file")
except FileNotFoundError as e:
    print("error:", type(e).__name__, e.errno)

# A pipe between fork's parent and child.
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.write(w, b"from the child " * 1000)
    os._exit(5)
os.close(w)
got = b""
while chunk := os.read(r, 4096):
    got += chunk
_, status = os.waitpid(pid, 0)
print("fork+pipe:", len(got), os.WIFEXITED(status), os.WEXITSTATUS(status))

# Subprocesses.
print("run:", subprocess.run(["sh", "-c", "echo $((6 * 7))"], capture_output=True, text=True).stdout.strip())
p = subprocess.Popen(["tr", "a-z", "A-Z"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
out, _ = p.communicate(b"shout " * 3000)
print("communicate:", len(out), out[:12], p.returncode)
print("returncode:", subprocess.run("exit 3", shell=True).returncode)
print("check_output:", subprocess.check_output("seq 3 | sort -r | tr '\\n' ,", shell=True))
try:
    subprocess.check_call(["false"])
except subprocess.CalledProcessError as e:
    print("CalledProcessError:", e.returncode)
try:
    subprocess.run(["sleep", "5"], timeout=0.3)
except subprocess.TimeoutExpired as e:
    print("TimeoutExpired:", e.cmd)
fd = os.open("a.txt", os.O_RDONLY)
os.closerange(fd, fd + 1)
try:
    os.fstat(fd)
except OSError as e:
    print("closerange:", e.errno)
pipeline = subprocess.Popen(["seq", "1", "50"], stdout=subprocess.PIPE)
grep = subprocess.Popen(["grep", "5"], stdin=pipeline.stdout, stdout=subprocess.PIPE)
pipeline.stdout.close()
print("pipeline:", grep.communicate()[0].split(), pipeline.wait(), grep.returncode)

# Time: sleep (clock_nanosleep until a time on CLOCK_MONOTONIC).
t0 = time.monotonic()
time.sleep(0.05)
print("slept:", time.monotonic() - t0 >= 0.05)

# Signals.
got_signals = []
signal.signal(signal.SIGUSR1, lambda sig, frame: got_signals.append(sig))
os.kill(os.getpid(), signal.SIGUSR1)
print("handler:", got_signals)
sleeper = subprocess.Popen(["sleep", "30"])
sleeper.terminate()
print("terminated:", sleeper.wait())
sleeper = subprocess.Popen(["sleep", "30"])
os.kill(sleeper.pid, signal.SIGKILL)
print("killed:", sleeper.wait())
old = signal.signal(signal.SIGINT, signal.SIG_IGN)
os.kill(os.getpid(), signal.SIGINT)
signal.signal(signal.SIGINT, old)
print("ignored SIGINT")
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR2])
os.kill(os.getpid(), signal.SIGUSR2)
print("pending:", signal.SIGUSR2 in signal.sigpending())
signal.signal(signal.SIGUSR2, lambda sig, frame: got_signals.append(sig))
signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGUSR2])
print("after unblock:", got_signals)
r, w = os.pipe()
print("select:", select.select([r], [w], [], 0)[:2] == ([], [w]), end=" ")
os.write(w, b"x")
print(select.select([r], [], [], 5)[0] == [r])
try:
    raise KeyboardInterrupt
except KeyboardInterrupt:
    print("KeyboardInterrupt caught")

# Threads, sockets and asyncio (clone with the thread flags, futex,
# AF_UNIX, epoll, FIONBIO).
import asyncio
import queue
import socket
import threading
from concurrent.futures import ThreadPoolExecutor

q = queue.Queue()
lock = threading.Lock()
total = [0]


def worker(i):
    for _ in range(200):
        with lock:
            total[0] += i
    q.put(i * i)


ts = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print("threads:", sorted(q.queue), total[0])
with ThreadPoolExecutor(3) as ex:
    print("pool:", list(ex.map(abs, [-1, -2, -3])))
a, b = socket.socketpair()
a.sendall(b"over a socket")
print("socketpair:", b.recv(64))
a.close()
print("closed peer:", b.recv(64))


async def echo_pair():
    async def handle(reader, writer):
        writer.write((await reader.readline()).upper())
        await writer.drain()
        writer.close()

    path = os.path.join(work, "asyncio.sock")
    server = await asyncio.start_unix_server(handle, path)
    reader, writer = await asyncio.open_unix_connection(path)
    writer.write(b"hello asyncio\n")
    line = await reader.readline()
    writer.close()
    server.close()
    await server.wait_closed()
    slept = await asyncio.wait_for(asyncio.sleep(0.05, result="slept"), 5)
    return line, slept


print("asyncio:", asyncio.run(echo_pair()))

# The standard library, some of it in C (lib-dynload).
print("json:", json.dumps({"b": [1, 2.5, None], "a": "é"}, sort_keys=True))
print("re:", re.findall(r"(\w)(\d+)", "a1 b22 c333"))
print("sha256:", hashlib.sha256(b"keep").hexdigest()[:16], "md5:", hashlib.md5(b"keep").hexdigest()[:8])
print("zlib:", zlib.crc32(b"keep"), len(zlib.compress(data)) < len(data) // 4)
print("struct:", struct.pack("<IHd", 1, 2, 0.5).hex())
print("counter:", collections.Counter("mississippi").most_common(2))
print("float:", sum(x * 0.1 for x in range(100)), 2**100, 10 / 4, 7 // 2)
sys.stdout.flush()
sys.exit(4)
