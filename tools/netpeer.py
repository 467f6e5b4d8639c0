#!/usr/bin/env python3
"""The host's side of the network benchmarks (docs/performance.md, "I/O
paths"), shared by tools/bench.py (Keep) and tools/linuxbench.py (the Linux
guest).

The guest leads with console lines (user/servers/netstack/src/bench.rs,
tools/linuxbench/linuxio.c); the peer follows them through QEMU's
`hostfwd` of qemu.BENCH_PORT (TCP and UDP):

  bench-net: peer tcp.recv BYTES    connect, wait for `go`, send BYTES, shut
                                    the sending side, read to the end, close
  bench-net: peer tcp.send BYTES    connect, wait for `go`, read to the end,
                                    check BYTES of the pattern, close
  bench-net: go                     (the guest accepted; its region starts)
  bench-net: peer udp.roundtrip N   send N + 1 datagrams, each after the
                                    echo of the previous one came back

Each exchange runs in a thread of its own, so that the guest's output goes
on being read.  What went wrong is printed; the guest reports the region as
failed then (its own count of bytes or datagrams)."""
import re
import socket
import threading
import time

PEER_RE = re.compile(r"bench-net: peer (tcp\.recv|tcp\.send|udp\.roundtrip) (\d+)")
DATAGRAM = 32
TIMEOUT = 120.0


def pattern(n):
    """What the guest's `net.tcp.send` sends: byte i is i % 251."""
    block = bytes(i % 251 for i in range(251 * 64))
    return (block * (n // len(block) + 1))[:n]


def forwarded(cmd, proto, guest_port):
    """The host port QEMU's command line forwards to `guest_port`."""
    for a in cmd:
        m = re.search(rf"hostfwd={proto}:127\.0\.0\.1:(\d+)-[\d.]*:{guest_port}(?:,|$)", a)
        if m:
            return int(m.group(1))
    return None


class Peer:
    def __init__(self, cmd, guest_port, log):
        self.tcp = forwarded(cmd, "tcp", guest_port)
        self.udp = forwarded(cmd, "udp", guest_port)
        self.log = log
        self.go = threading.Semaphore(0)
        self.threads = []

    def feed(self, line):
        """Acts on a guest line; True if it was one of the peer's."""
        if "bench-net: go" in line:
            self.go.release()
            return True
        m = PEER_RE.search(line)
        if not m:
            return False
        op, n = m.group(1), int(m.group(2))
        t = threading.Thread(target=self.run, args=(op, n), daemon=True)
        t.start()
        self.threads.append(t)
        return True

    def run(self, op, n):
        try:
            if op == "udp.roundtrip":
                self.udp_roundtrip(n)
            else:
                self.tcp_transfer(op, n)
        except (OSError, ValueError) as e:
            self.log(f"netpeer: {op}: {e}")

    def connect(self):
        if self.tcp is None:
            raise ValueError("no hostfwd to the benchmark port on QEMU's command line")
        s = socket.create_connection(("127.0.0.1", self.tcp), timeout=TIMEOUT)
        s.settimeout(TIMEOUT)
        return s

    def tcp_transfer(self, op, n):
        with self.connect() as s:
            if not self.go.acquire(timeout=TIMEOUT):
                raise ValueError("the guest never said go")
            if op == "tcp.recv":
                data = pattern(n)
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
                return
            got = bytearray()
            while True:
                b = s.recv(1 << 20)
                if not b:
                    break
                got += b
            if bytes(got) != pattern(n):
                raise ValueError(f"received {len(got)} bytes, not the {n} bytes of the pattern")

    def udp_roundtrip(self, n):
        if self.udp is None:
            raise ValueError("no UDP hostfwd to the benchmark port on QEMU's command line")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.settimeout(TIMEOUT)
            for k in range(n + 1):
                d = k.to_bytes(4, "little") * (DATAGRAM // 4)
                s.sendto(d, ("127.0.0.1", self.udp))
                back = s.recv(2048)
                if back != d:
                    raise ValueError(f"datagram {k} came back as something else")

    def wait(self, timeout=10.0):
        end = time.monotonic() + timeout
        for t in self.threads:
            t.join(max(0.0, end - time.monotonic()))
