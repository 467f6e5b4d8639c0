# AF_INET from Python on 127.0.0.1 (ports chosen by the system, never
# printed): socketserver's TCP and UDP servers in a thread, a forked TCP
# client, http.server with urllib, asyncio streams, select and the errors
# Python turns into exceptions.
import asyncio
import hashlib
import http.server
import os
import select
import socket
import socketserver
import sys
import threading
import urllib.request


class Upper(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            self.wfile.write(line.upper())


class UdpUpper(socketserver.BaseRequestHandler):
    def handle(self):
        data, sock = self.request
        sock.sendto(data.upper(), self.client_address)


def serve(server):
    t = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    t.start()
    return t


# socketserver, TCP, lines through a file object
with socketserver.TCPServer(("127.0.0.1", 0), Upper) as srv:
    t = serve(srv)
    host, port = srv.server_address
    print("TCP server on", host)
    with socket.create_connection((host, port)) as c:
        f = c.makefile("rwb")
        for w in [b"alpha\n", b"beta\n", b"gamma\n"]:
            f.write(w)
            f.flush()
            print(f.readline())
        print("peer is the server:", c.getpeername() == (host, port))
        f.close()  # the descriptor closes with its last user
    srv.shutdown()
    t.join()

# socketserver, UDP
with socketserver.UDPServer(("127.0.0.1", 0), UdpUpper) as srv:
    t = serve(srv)
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.settimeout(5)
    for w in [b"one", b"two"]:
        u.sendto(w, srv.server_address)
        data, addr = u.recvfrom(100)
        print(data, addr == srv.server_address)
    u.close()
    srv.shutdown()
    t.join()

# a forked client sends 300,000 bytes; the digests must agree
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", 0))
ls.listen()
blob = bytes((i * 13 + i // 97) & 0xFF for i in range(300_000))
pid = os.fork()
if pid == 0:
    with socket.create_connection(ls.getsockname()) as c:
        c.sendall(blob)
        c.shutdown(socket.SHUT_WR)
        ok = c.recv(100) == hashlib.sha256(blob).hexdigest().encode()
    os._exit(0 if ok else 1)
conn, _ = ls.accept()
h = hashlib.sha256()
n = 0
while True:
    d = conn.recv(65536)
    if not d:
        break
    h.update(d)
    n += len(d)
conn.sendall(h.hexdigest().encode())
conn.close()
_, status = os.waitpid(pid, 0)
print("received", n, "bytes; child status", os.waitstatus_to_exitcode(status))

# select on a listening socket and a connection
c = socket.create_connection(ls.getsockname())
r, _, _ = select.select([ls], [], [], 5)
print("listener readable:", r == [ls])
a, _ = ls.accept()
r, w, _ = select.select([a], [c], [], 0)
print("nothing to read yet:", r == [], "client writable:", w == [c])
c.send(b"x")
r, _, _ = select.select([a], [], [], 5)
print("then readable:", r == [a], a.recv(10))
c.close()
a.close()
ls.close()

# http.server and urllib
class Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("you asked for " + self.path + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


with http.server.HTTPServer(("127.0.0.1", 0), Hello) as srv:
    t = serve(srv)
    url = "http://127.0.0.1:%d/keep?x=1" % srv.server_address[1]
    with urllib.request.urlopen(url, timeout=10) as r:
        print("HTTP", r.status, r.read().decode().strip())
    srv.shutdown()
    t.join()


# asyncio streams
async def main():
    async def handle(reader, writer):
        data = await reader.readline()
        writer.write(data[::-1].strip() + b"\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"stressed\n")
    print("asyncio:", (await reader.readline()).strip())
    writer.close()
    server.close()
    await server.wait_closed()


asyncio.run(main())

# errors
s = socket.socket()
s.bind(("127.0.0.1", 0))
try:
    socket.create_connection(s.getsockname(), timeout=5)
except ConnectionRefusedError as e:
    print("refused:", e.errno == 111)
s2 = socket.socket()
try:
    s2.bind(s.getsockname())
except OSError as e:
    print("in use:", e.errno, e.strerror)
try:
    s2.bind(("10.1.2.3", 0))
except OSError as e:
    print("not ours:", e.errno, e.strerror)
s.close()
s2.close()
sys.exit(3)
