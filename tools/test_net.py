#!/usr/bin/env python3
"""Whole-system test of the network (docs/devices.md, "The network").

Boots Keep with its virtio-net NIC on QEMU's user network, starts the
network at the shell (`run netd &`: the PCI server, the network server and
two smoltcp stacks in processes of their own), then talks to it from the
host through the ports `-netdev user` forwards (tools/qemu.py):

- TCP echo (10.0.2.15:7): two connections at once, each sending a few MiB
  of a pseudo-random stream while reading the echo back; the SHA-256 of
  what came back must equal that of what was sent, byte count included;
- the status service of each stack (port 8): one line of counters, the
  echoed bytes counted, and no frame that was for the other stack
  (`foreign 0`).

Exit status 0 when every check passed."""

import hashlib
import random
import re
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_boot  # noqa: E402

check = test_boot.check
ECHO_BYTES = [3 << 20, 1 << 20]   # two connections at once: 4 MiB in all
CHUNK = 16 << 10


def forwarded_ports(guest):
    """(echo port, [status ports]) from the QEMU command line's hostfwd rules."""
    netdev = next(a for a in guest.cmd if a.startswith("user,id=net0"))
    rules = re.findall(r"hostfwd=tcp:127\.0\.0\.1:(\d+)-([\d.]*):(\d+)", netdev)
    echo = next(int(h) for h, _, g in rules if g == "7")
    status = [int(h) for h, _, g in rules if g == "8"]
    return echo, status


def connect(port, timeout=60.0):
    """A connection to a forwarded port.  QEMU accepts on the host side at
    once and only then connects to the guest; a guest that is not
    listening yet closes it, so wait until a connection stays open."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.settimeout(timeout)
    return s


def status_line(port):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with connect(port) as s:
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            if data:
                return data.decode(errors="replace")
        except OSError:
            pass
        time.sleep(0.5)
    return ""


def echo(port, nbytes, seed, out):
    """Sends nbytes of a seeded stream and reads the echo back at once;
    out gets (sent digest, received digest, bytes received, error)."""
    rng = random.Random(seed)
    sent, got = hashlib.sha256(), hashlib.sha256()
    received = 0
    try:
        s = connect(port)

        def writer():
            left = nbytes
            while left:
                chunk = rng.randbytes(min(CHUNK, left))
                sent.update(chunk)
                s.sendall(chunk)
                left -= len(chunk)
            s.shutdown(socket.SHUT_WR)

        w = threading.Thread(target=writer)
        w.start()
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            got.update(chunk)
            received += len(chunk)
        w.join()
        s.close()
        out.append((sent.hexdigest(), got.hexdigest(), received, None))
    except OSError as e:
        out.append((sent.hexdigest(), got.hexdigest(), received, e))


class NetGuest(test_boot.Guest):
    def __init__(self):
        super().__init__()
        self.cmd = self.p.args


def main():
    g = NetGuest()
    try:
        check("boots to the prompt", g.expect(test_boot.PROMPT, 120))
        g.send("run netd &")
        ready = g.expect(b"netd: ready", 120)
        check("netd starts the network server and two stacks", ready, g.text()[-600:])
        if not ready:
            return 1
        echo_port, status_ports = forwarded_ports(g)
        # The first status connection also waits until the stacks listen.
        before = status_line(status_ports[0])
        check("status service answers", "netstack 10.0.2.15:" in before, repr(before))
        t0 = time.monotonic()
        results, threads = [], []
        for i, n in enumerate(ECHO_BYTES):
            out = []
            results.append(out)
            threads.append(threading.Thread(target=echo, args=(echo_port, n, i, out)))
        for t in threads:
            t.start()
        for t in threads:
            t.join(600)
        dt = time.monotonic() - t0
        for n, out in zip(ECHO_BYTES, results):
            ok = bool(out) and out[0][3] is None and out[0][0] == out[0][1] and out[0][2] == n
            detail = repr(out[0]) if out else "no result"
            check(f"TCP echo of {n >> 20} MiB: same bytes back (SHA-256)", ok, detail)
        total = sum(ECHO_BYTES)
        print(f"test_net: {total >> 20} MiB echoed on two connections in {dt:.1f} s "
              f"({2 * total / dt / 1e6:.2f} MB/s both ways, QEMU TCG)")
        after = status_line(status_ports[0])
        print("test_net: " + after.strip())
        m = re.search(r"foreign (\d+).*echoed (\d+) bytes", after)
        check("status of 10.0.2.15 counts the echoed bytes, no foreign frames",
              m is not None and m.group(1) == "0" and int(m.group(2)) >= total, repr(after))
        other = status_line(status_ports[1])
        print("test_net: " + other.strip())
        m = re.search(r"frames in (\d+) .*foreign (\d+).*echoed (\d+) bytes", other)
        # The other stack saw only its own status connections: a few dozen
        # frames, none of the echo traffic and none for another address.
        check("status of 10.0.2.16: only its own frames",
              m is not None and m.group(2) == "0" and m.group(3) == "0" and int(m.group(1)) < 100,
              repr(other))
    finally:
        g.kill()
    failed = results_failed()
    print(f"test_net: {len(test_boot.results) - failed} passed, {failed} failed")
    return 1 if failed else 0


def results_failed():
    return sum(1 for r in test_boot.results if not r)


if __name__ == "__main__":
    sys.exit(main())
