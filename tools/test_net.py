#!/usr/bin/env python3
"""Whole-system test of the network (docs/network.md, "The network").

Boots Keep with its virtio-net NIC on QEMU's user network; the system
description (user/system/system.conf) starts the network at boot: the
network server (`net`) and two smoltcp stacks in processes of their own
(`net-a` 10.0.2.15, `net-b` 10.0.2.16), each registered with the address
its `net=` grant gives it.  The test talks to them from the host through
the ports `-netdev user` forwards (tools/qemu.py):

- the status service of each stack (port 8): the stack's ping of the
  gateway was answered (ICMP both ways through the network server), ARP
  frames went both ways;
- TCP echo (10.0.2.15:7): two connections at once, each sending a few MiB
  of a pseudo-random stream while reading the echo back; the SHA-256 of
  what came back must equal that of what was sent, byte count included;
- the status lines: the echoed bytes counted, no frame that was for the
  other stack (`foreign 0`), and 10.0.2.16 saw only its own few frames;
- restarts: `kill net` at the shell in the middle of a transfer (init
  restarts the network server, the stacks find it by name again and go on:
  the transfer completes with the same bytes, or fails, but is never
  wrong) and the next transfer is correct; then `kill net-a` (the stack
  itself) likewise, and `kill net-b` while 10.0.2.15 carries a transfer:
  init tells the network server that the stack is gone before its bank
  goes (docs/space-banks.md, "Clients that end"), so the server lets go
  of the stack's frame ring and is not restarted (`ps`), and `mem` shows
  the network's bank and its instances as before (the ring came back);
- the workhorse's own stack (docs/workhorse.md, "Sockets"): a Linux
  program (user/servers/workhorse/tests/tcppeer.c) connects from 10.0.2.17 to a
  server this test runs on the host and sends it 1 MiB, and the host
  connects to the program listening in Keep (the port forwarded to
  10.0.2.17:8080) and sends it 1 MiB; each side's checksum (FNV-1a) of
  what the other received must be what was sent.

`--no-iommu`: the same on the machine without the IOMMU, where the network
server drives the NIC through the PCI server's mediator.

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


def echo(port, nbytes, seed, out, progress=None, pace=0.0):
    """Sends nbytes of a seeded stream and reads the echo back at once;
    out gets (sent digest, received digest, bytes received, error);
    progress[0], if given, follows the bytes received; pace: seconds
    between chunks sent (leaves the guest idle time for its shell)."""
    rng = random.Random(seed)
    sent, got = hashlib.sha256(), hashlib.sha256()
    received = 0
    try:
        s = connect(port)

        def writer():
            left = nbytes
            try:
                while left:
                    chunk = rng.randbytes(min(CHUNK, left))
                    sent.update(chunk)
                    s.sendall(chunk)
                    left -= len(chunk)
                    if pace:
                        time.sleep(pace)
            except OSError:
                pass  # the reader sees the same error

        w = threading.Thread(target=writer)
        w.start()
        # Read until every byte came back, and only then close: a host side
        # that half-closed first would make the stack close right behind
        # its last bytes, and QEMU's user network (libslirp) can lose bytes
        # it already acknowledged when the guest's FIN comes while the host
        # socket is backed up (seen under host load: every byte
        # and the FIN acknowledged in a capture, the host never got the
        # last 324 bytes nor the end).
        while received < nbytes:
            chunk = s.recv(65536)
            if not chunk:
                break
            got.update(chunk)
            received += len(chunk)
            if progress is not None:
                progress[0] = received
        w.join()
        s.close()
        # The connection ended before every byte came back: QEMU's user
        # network ends the host's side of a connection the guest reset with
        # a FIN or with a reset, as it happens, so both are this error.
        err = None if received == nbytes else ConnectionError(f"closed after {received} of {nbytes} bytes")
        out.append((sent.hexdigest(), got.hexdigest(), received, err))
    except OSError as e:
        out.append((sent.hexdigest(), got.hexdigest(), received, e))


class NetGuest(test_boot.Guest):
    def __init__(self, iommu=True):
        super().__init__(iommu=iommu)
        self.cmd = self.p.args


def prefix_digest(seed, nbytes, length):
    """SHA-256 of the first `length` bytes of echo()'s stream."""
    rng = random.Random(seed)
    h = hashlib.sha256()
    left, need = nbytes, length
    while need > 0:
        chunk = rng.randbytes(min(CHUNK, left))
        left -= len(chunk)
        h.update(chunk[:need])
        need -= min(need, len(chunk))
    return h.hexdigest()


def echo_ok(port, nbytes, seed):
    """One echo connection: (same bytes back, detail)."""
    out = []
    echo(port, nbytes, seed, out)
    ok = bool(out) and out[0][3] is None and out[0][0] == out[0][1] and out[0][2] == nbytes
    return ok, repr(out[0]) if out else "no result"


def status_until(port, needle, timeout=60):
    """The first status line that contains needle (or the last one)."""
    deadline = time.monotonic() + timeout
    line = ""
    while time.monotonic() < deadline:
        line = status_line(port)
        if needle in line:
            break
        time.sleep(1)
    return line


def kill_mid_transfer(g, echo_port, status_port, server, back, seed):
    """Starts an 8 MiB echo, paced at about 800 KB/s (at full speed the
    stacks keep the CPU busy and the shell would read the command only
    after the transfer), types `kill SERVER` at the shell once 256 KiB came
    back, waits for `back` on the console, then checks that the
    interrupted transfer was not wrong and that the next one is right."""
    n = 8 << 20
    out, progress = [], [0]
    t = threading.Thread(target=echo, args=(echo_port, n, seed, out, progress, 0.02))
    t.start()
    deadline = time.monotonic() + 120
    while progress[0] < (256 << 10) and t.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    mark = len(g.out)
    g.send(f"kill {server}")
    killed = g.expect(f"system: server {server} was killed; restart 1 of 3".encode(), 60, mark)
    at = progress[0]
    check(f"kill {server} in the middle of a transfer ({at} of {n} bytes back)", killed and at < n,
          g.out[mark:].decode(errors="replace")[-800:])
    restarted = g.expect(f"system: server {server} restarted (1 of 3)".encode(), 60, mark)
    check(f"kill {server}: init restarts it", restarted, g.out[mark:].decode(errors="replace")[-800:])
    came_back = g.expect(back.encode(), 90, mark)
    check(f"after kill {server}: {back}", came_back, g.out[mark:].decode(errors="replace")[-800:])
    t.join(300)
    r = out[0] if out else None
    if r and r[3] is None and r[2] == n:
        check(f"the transfer through the killed {server} came back whole and right (SHA-256)", r[0] == r[1], repr(r))
        how = "completed"
    else:
        # A connection the new stack does not know is reset: an error, and
        # what came back before it must be a prefix of what was sent.
        check(f"the transfer through the killed {server} ended with an error, not wrong data",
              r is not None and r[3] is not None and r[1] == prefix_digest(seed, n, r[2]), repr(r))
        how = f"failed after {r[2] if r else 0} bytes ({r[3] if r else 'no result'})"
    print(f"test_net: the transfer while {server} was killed ({at} bytes back then): {how}")
    ok, detail = echo_ok(echo_port, 1 << 20, seed + 1)
    check(f"after {server} was restarted, the next transfer (1 MiB) is right (SHA-256)", ok, detail)
    return status_line(status_port)


def network_figures(g):
    """mem's figures ({instance: used}, the network bank's used, pool free +
    prime used) and ps's table, once the console is quiet."""
    time.sleep(2)
    out = (g.keys(b"mem\r", 30) or "").replace("\r", "")
    figs = test_boot.mem_figures(out)
    bank = re.search(r"^\s+network\s+\d+\s+(\d+)\s", out, re.M)
    if not figs or not bank:
        return None
    return figs[2], int(bank.group(1)), figs[0] + figs[1], out


def net_unharmed(g, before, killed, slack):
    """After `kill KILLED` (a stack): the network server was not restarted
    (ps: restarts 1/3, from the one `kill net`), no notice went unanswered,
    and mem shows the pool + prime bank's use and each instance of the
    network's bank as they were (the killed stack's ring came back with
    its bank, its new instance has what the old one had), but for the
    server's own heap, which may grow by `slack` pages the first time
    (frames for the stack queued as messages while it had no ring).
    Returns the figures after."""
    out = g.keys(b"ps\r", 30) or ""
    check(f"kill {killed}: the network server goes on, not restarted (ps: 1/3 from kill net, running)",
          re.search(r"\bnet\s+server\s+network\s+\d+\s+init\s+1/3\s+(BLOCKED|RUNNABLE)", out) is not None
          and "did not answer the notice" not in g.text() and "did not take the notice" not in g.text()
          and "server net faulted" not in g.text(), out[-1200:])
    after = network_figures(g)
    grew = after[0].get("net", 0) - before[0].get("net", 0) if before and after else None
    same = before is not None and after is not None and after[2] == before[2] and all(
        after[0].get(k) == before[0].get(k) for k in ("net-a", "net-b")) and grew is not None and 0 <= grew <= slack \
        and after[1] == before[1] + grew
    check(f"kill {killed}: mem shows every frame back: pool + prime, the stacks' instances and the network bank as before"
          + (f" (the server's heap {slack} pages at most more)" if slack else ""),
          same, f"before {before[:3] if before else None}, after {after[:3] if after else None}\n" + (after[3] if after else ""))
    print(f"test_net: kill {killed}: the network bank used {before[1] if before else '?'} -> {after[1] if after else '?'} frames, "
          f"the server's instance {grew:+} " if grew is not None else "")
    return after


def main():
    iommu = "--no-iommu" not in sys.argv[1:]
    g = NetGuest(iommu)
    try:
        up = g.expect(test_boot.PROMPT, 120)
        check("boots to the prompt", up)
        if not up:
            return 1
        through = "the IOMMU" if iommu else "the PCI server's mediator (no IOMMU)"
        check(f"the description started the network server before the prompt, DMA through {through}",
              f"net: virtio-net 00:03.0: MAC 52:54:00:12:34:56, DMA through {through}" in g.text().split("keep> ")[0],
              g.text()[-1500:])
        echo_port, status_ports = forwarded_ports(g)
        # The first status connection also waits until the stacks listen;
        # their ping of the gateway may wait for ARP, and is repeated.
        before = status_until(status_ports[0], "replied")
        print("test_net: " + before.strip())
        check("status service of 10.0.2.15 answers", "netstack 10.0.2.15:" in before, repr(before))
        m = re.search(r"arp in (\d+) out (\d+); icmp in (\d+) out (\d+); ping 10\.0\.2\.2: replied", before)
        check("10.0.2.15: ARP both ways, its ICMP echo to the gateway answered",
              m is not None and all(int(x) >= 1 for x in m.groups()), repr(before))
        other = status_until(status_ports[1], "replied")
        check("10.0.2.16: ARP both ways, its ICMP echo to the gateway answered",
              re.search(r"arp in [1-9]\d* out [1-9]\d*; icmp in [1-9]\d* out [1-9]\d*; ping 10\.0\.2\.2: replied", other)
              is not None, repr(other))
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
        # The other stack saw only its own status connections and ping: a
        # few dozen frames, none of the echo traffic and none for another
        # address.
        check("status of 10.0.2.16: only its own frames",
              m is not None and m.group(2) == "0" and m.group(3) == "0" and int(m.group(1)) < 100,
              repr(other))
        workhorse_tcp(g)
        # The network server killed in the middle of a transfer.
        line = kill_mid_transfer(g, echo_port, status_ports[0], "net",
                                 "netstack 10.0.2.15: the network server is back", 10)
        print("test_net: " + line.strip())
        check("10.0.2.15 found the new network server once, no foreign frames",
              re.search(r"foreign 0 .*server found again 1 times", line) is not None, repr(line))
        other = status_until(status_ports[1], "server found again 1 times", 30)
        check("10.0.2.16 found the new network server too", "server found again 1 times" in other, repr(other))
        # The stack itself killed in the middle of a transfer: init tells
        # the network server first (notify), which lets go of the stack's
        # ring before the stack's bank takes its pages: the server goes on
        # (no restart), and the ring's frames come back with the bank.
        before = network_figures(g)
        line = kill_mid_transfer(g, echo_port, status_ports[0], "net-a", "system: server net-a restarted", 20)
        print("test_net: " + line.strip())
        check("the restarted 10.0.2.15 is a new instance with its registration (server found again 0 times)",
              re.search(r"foreign 0 .*server found again 0 times", line) is not None, repr(line))
        before = net_unharmed(g, before, "net-a", 2)
        # The other stack killed while 10.0.2.15 carries a transfer.
        out = []
        t = threading.Thread(target=echo, args=(echo_port, 2 << 20, 30, out, None, 0.01))
        t.start()
        time.sleep(1)
        m = g.send("kill net-b")
        back = g.expect(b"system: server net-b restarted (1 of 3)", 60, m)
        t.join(300)
        check("kill net-b during a transfer through 10.0.2.15: net-b is restarted and the transfer is right (SHA-256)",
              back and bool(out) and out[0][3] is None and out[0][0] == out[0][1], repr(out) + g.out[m:].decode(errors="replace")[-800:])
        other = status_until(status_ports[1], "replied", 60)
        check("the restarted 10.0.2.16 serves again (status line, its ping answered)",
              "netstack 10.0.2.16:" in other and "replied" in other, repr(other))
        net_unharmed(g, before, "net-b", 0)
        out = g.keys(b"net\r", 30)
        print(out or "")
        check("net shows the restart and the stacks' grants",
              out is not None and "network server 'net' (restarted 1 of 3 times)" in out
              and "net=10.0.2.15" in out and "net=10.0.2.16" in out and "1/3" in out, out or g.text()[-800:])
    finally:
        g.kill()
    failed = results_failed()
    print(f"test_net: {len(test_boot.results) - failed} passed, {failed} failed")
    return 1 if failed else 0


FNV_START = 0xcbf29ce484222325


def fnv(h, data):
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def peer_stream(n, seed):
    """tcppeer.c's bytes: byte i is (i * 131 + (i >> 8) * 7 + seed) & 0xff."""
    return bytes((i * 131 + (i >> 8) * 7 + seed) & 0xFF for i in range(n))


def linux_port(guest):
    """The host port QEMU forwards to the workhorse's 10.0.2.17:8080."""
    netdev = next(a for a in guest.cmd if a.startswith("user,id=net0"))
    return int(re.search(r"hostfwd=tcp:127\.0\.0\.1:(\d+)-10\.0\.2\.17:8080", netdev).group(1))


def workhorse_tcp(g):
    """A Linux program reaches a server on the host, and the host reaches a
    Linux program listening in Keep, through the workhorse's own stack."""
    n = 1 << 20
    # Keep to the host: QEMU's 10.0.2.2 is the host's 127.0.0.1.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    srv.settimeout(300)
    got = []

    def serve():
        try:
            c, _ = srv.accept()
            c.settimeout(300)
            h, total = FNV_START, 0
            while True:
                d = c.recv(65536)
                if not d:
                    break
                h, total = fnv(h, d), total + len(d)
            c.sendall(f"{total} {h:016x}\n".encode())
            c.close()
            got.append((total, h))
        except OSError as e:
            got.append(e)

    t = threading.Thread(target=serve)
    t.start()
    want = fnv(FNV_START, peer_stream(n, 5))
    line = f"linux /tests/tcppeer connect 10.0.2.2 {srv.getsockname()[1]} {n} 5"
    m = g.send(line)
    ended = g.expect(b"\n" + test_boot.PROMPT, 600, m)
    t.join(60)
    srv.close()
    out = g.out[m:].decode(errors="replace")
    print("test_net: " + (out.strip().splitlines() or [""])[-2 if ended else -1])
    check("a Linux program connects from the workhorse to the host and sends 1 MiB: the host got every byte",
          got == [(n, want)], f"host got {got!r}, want {(n, want)!r}; keep: {out[-600:]!r}")
    check("... and the program read the host's checksum back (exit status 0)",
          ended and f"the peer: {n} {want:016x}" in out and "linux: exit status" not in out, out[-600:])
    # The host to Keep: the program listens on 10.0.2.17:8080.
    m = g.send("linux /tests/tcppeer serve 8080")
    listening = g.expect(b"listening on port 8080", 120, m)
    check("a Linux program listens on 10.0.2.17:8080", listening, g.text()[-600:])
    answer = b""
    if listening:
        data = peer_stream(n, 9)
        try:
            with socket.create_connection(("127.0.0.1", linux_port(g)), timeout=300) as c:
                c.sendall(data)
                c.shutdown(socket.SHUT_WR)
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    answer += d
        except OSError as e:
            answer = repr(e).encode()
    want = f"{n} {fnv(FNV_START, peer_stream(n, 9)):016x}\n".encode()
    ended = g.expect(b"\n" + test_boot.PROMPT, 120, m)
    out = g.out[m:].decode(errors="replace")
    print("test_net: " + " ".join(x for x in out.replace("\r", "").splitlines() if "from" in x))
    check("the host connects to it through the forwarded port and sends 1 MiB: its checksum comes back",
          answer == want, f"answer {answer!r}, want {want!r}")
    check("... the program saw the connection from the host's side (10.0.2.2) and ended",
          ended and "tcppeer: from 10.0.2.2: " + want.decode() in out.replace("\r", ""), out[-600:])


def results_failed():
    return sum(1 for r in test_boot.results if not r)


if __name__ == "__main__":
    sys.exit(main())
