#!/usr/bin/env python3
"""The trusted mail reader end to end (docs/trusted-core.md, "The trusted
mail reader"): a boot of the default system with a new TPM state on a copy
of build/disk.img written for real, and a mail server on the host
(Python's http.server on 127.0.0.1, which the guest reaches as 10.0.2.2)
holding mailboxes sealed to the reader's public key (tools/mail_sender.py):
  - Ctrl-T and its terminal's number, Enter: the reader (a server of the
    description, idle until then) makes its
    key pair and shows its public key, which it also writes to mail.pub in
    the workhorse; the test reads it there, and the user trusts the
    server's public key on the reader's terminal;
  - the workhorse fetches each mailbox with busybox wget into the reader's
    directory of /data; the reader checks and takes it: good messages
    listed and shown (and marked read), no plaintext in the workhorse's
    files or on the disk image;
  - a message changed by the workhorse (python3 as root) is reported as
    tampered and not shown, the others are; an old mailbox put back is
    reported as replayed and changes nothing; a mailbox sealed with
    another key is reported as forged; the reader keeps running;
  - compose and send: the reader seals a message to the sender (its
    outgoing key, a sequence number kept in the vault) into the outbox of
    its directory, which holds no plaintext; the workhorse posts it with
    busybox wget and the host's server opens it; an outbox changed by the
    workhorse and an old one posted again are refused by the server;
  - a second boot with the same TPM state and disk: the same key, the
    trusted sender, the messages with their read flags and the note are
    back, the old mailbox is still refused, and send goes on with the
    next sequence number.
Prints one line per test and a summary; exits 1 on any failure."""
import http.server
import os
import re
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import mail_sender as mailbox  # noqa: E402
import qemu  # noqa: E402
import test_boot  # noqa: E402
from test_tpm import Guest  # noqa: E402

PLAIN = b"MAIL-PLAINTEXT"
PROMPT = b"\nmail> "
results = []


def check(name, cond, detail=""):
    results.append(bool(cond))
    print(f"mail-test: {name} ... {'ok' if cond else 'FAILED' + (': ' + str(detail)[-1500:] if detail else '')}",
          flush=True)
    return cond


class Server:
    """The host's mail server: path -> bytes, on a port of 127.0.0.1."""

    def __init__(self):
        self.files = {}
        files = self.files
        # What the reader sends: the outgoing key (set once the reader's
        # public key is known), the highest sequence number taken, and
        # the (sequence number, text) of each message taken.
        self.out_key, self.taken, self.seq = None, [], 0
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = files.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Length", str(len(body or b"")))
                self.end_headers()
                self.wfile.write(body or b"")

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    try:
                        sealed = bytes.fromhex(body.decode().strip())  # the outbox is hex
                    except (UnicodeDecodeError, ValueError):
                        raise ValueError("not a message of this format")
                    seq, text = mailbox.open_outgoing(srv.out_key, sealed)
                    if seq <= srv.seq:
                        raise ValueError(f"an old message ({seq}; taken up to {srv.seq})")
                    srv.seq = seq
                    srv.taken.append((seq, text))
                    answer = f"accepted {seq}"
                except ValueError as e:
                    answer = f"refused: {e}"
                reply = answer.encode() + b"\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *a):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()


def text(mid, subject):
    return f"Subject: {subject}\nFrom: the host's server\n\n{PLAIN.decode()} {mid}: the body of {subject}.\n".encode()


MESSAGES = {1: "welcome", 2: "the plan", 3: "minutes", 4: "late news"}


class Reader:
    """The guest and the reader's terminal."""

    def __init__(self, g, vt):
        self.g, self.vt = g, vt

    def to_reader(self):
        m = self.g.send_keys(b"\x14" + self.vt.encode())
        ok = self.g.expect(f"\u258c[keep: vt{self.vt} mail]".encode(), 30, m) and self.g.expect(b"mail> ", 60, m)
        return ok, self.g.out[m:].decode(errors="replace")

    def to_shell(self):
        m = self.g.send_keys(b"\x141")
        return self.g.expect("\u258c[keep: vt1 shell]\r\n".encode() + test_boot.PROMPT, 30, m)

    def cmd(self, line, timeout=120):
        m = self.g.send(line)
        if not self.g.expect(PROMPT, timeout, m):
            return self.g.out[m:].decode(errors="replace") + " [no mail> prompt]"
        return self.g.out[m:].decode(errors="replace").replace("\r", "")


def linux(g, script, timeout=180):
    return g.cmd(f"linux sh -c '{script}'", timeout)


def wget(g, port, path):
    out = linux(g, f"cd $(dirname /data/trusted/*/mail.pub) && busybox wget -q -O inbox "
                   f"http://10.0.2.2:{port}{path} && echo fetched-ok")
    return "fetched-ok" in out, out


def post(g, port, path="outbox"):
    """The workhorse posts a file of the reader's directory to the host's
    server with busybox wget; the server's answer."""
    return linux(g, f"cd $(dirname /data/trusted/*/mail.pub) && busybox wget -q -O - --post-file {path} "
                    f"http://10.0.2.2:{port}/outbox")


def start_reader(g, what):
    out = g.cmd("vt", 60) or ""
    vt = next((l.split()[0] for l in out.split("\n") if l.split()[1:3] == ["interactive", "mail"]), None)
    check(f"vt lists the reader's own interactive terminal ({what})", vt, out)
    if vt is None:
        return None, ""
    r = Reader(g, vt)
    m = g.send_keys(b"\x14" + vt.encode())
    ok = g.expect(f"\u258c[keep: vt{vt} mail]".encode(), 30, m) and g.expect(b"Enter opens it", 60, m)
    g.send(""); ok = ok and g.expect(PROMPT, 120, m)
    seen = g.out[m:].decode(errors="replace")
    check(f"Ctrl-T {vt}, Enter: the reader on its own terminal opens its keys and state ({what})", ok, seen)
    return r, seen


def main():
    qemu.check_built()
    if shutil.which("swtpm") is None:
        sys.exit("mail-test: swtpm is missing: run tools/install-deps.sh")
    mailbox.self_test()
    tmp = Path(tempfile.mkdtemp(prefix="keep-mail-"))
    disk = tmp / "disk.img"
    shutil.copyfile(qemu.DISK, disk)
    test_boot.blank_vault_area(disk)
    state = qemu.TPM_DIR / "test-mail"
    shutil.rmtree(state, ignore_errors=True)
    srv = Server()
    start = time.monotonic()
    g = None
    try:
        g = Guest("", state, disk=disk)
        if not check("boots (a new TPM state)", g.expect(test_boot.PROMPT, 240), g.text()[-1500:]):
            return
        linux(g, "rm -rf /data/trusted")
        r, seen = start_reader(g, "first boot")
        if r is None:
            return
        m = re.search(r"mail: public key ([0-9a-f]{64})", seen)
        check("the reader makes a key pair (the private key in the vault) and shows its public key",
              m and "a new key pair; the private key is in the vault" in seen, seen)
        if not m:
            return
        reader_pub = bytes.fromhex(m.group(1))
        check("the reader has no trusted sender yet", "no trusted sender yet" in seen, seen)
        out = r.cmd("fetch")
        check("fetch without a trusted sender says so", "no trusted sender yet" in out, out)
        sender = os.urandom(32)
        sender_pub = mailbox.public_key(sender)
        out = r.cmd("trust 1234")
        check("trust with a malformed key is refused", "64 hex digits" in out, out)
        out = r.cmd("trust " + sender_pub.hex())
        check("the user trusts the server's public key on the reader's terminal",
              f"trusting sender {sender_pub.hex()}" in out, out)
        out = r.cmd("fetch")
        check("fetch before the workhorse fetched anything: no mailbox", "AVAILABILITY: the workhorse has no mailbox" in out, out)
        check("back to the shell (Ctrl-T 1)", r.to_shell())
        out = linux(g, "cat /data/trusted/*/mail.pub")
        check("the public key exported to mail.pub through the workhorse", reader_pub.hex() in out, out)

        key = mailbox.sender_key(sender, reader_pub)
        srv.out_key = mailbox.outgoing_key(sender, reader_pub)
        box = lambda seq, ids: mailbox.make_mailbox(key, seq, [(i, text(i, MESSAGES[i])) for i in ids])
        srv.files["/mailbox"] = box(1, [1, 2])
        ok, out = wget(g, srv.port, "/mailbox")
        check("the workhorse fetches mailbox 1 from the host with busybox wget", ok, out)
        r.to_reader()
        out = r.cmd("fetch")
        check("the reader takes mailbox 1: 2 new messages", "mailbox sequence 1: 2 new, 0 already kept, 0 refused" in out, out)
        out = r.cmd("list")
        check("list: both, unread, with their subjects", "2 messages, 2 unread (mailbox sequence 1)" in out
              and re.search(r"^\s+1 \[new\] welcome$", out, re.M) and re.search(r"^\s+2 \[new\] the plan$", out, re.M), out)
        out = r.cmd("show 1")
        check("show 1: the decrypted message", "----- message 1 -----" in out and "MAIL-PLAINTEXT 1: the body of welcome." in out, out)
        out = r.cmd("show 9")
        check("show of no such message says so", "no message 9" in out, out)
        out = r.cmd("frobnicate")
        check("an unknown command says so", "no such command" in out, out)

        r.to_shell()
        out = linux(g, "cd $(dirname /data/trusted/*/mail.pub) && cp inbox /tmp/old-inbox && ls && "
                       "cat * | grep -c MAIL-PLAINTEXT")
        check("the workhorse holds the inbox and the trusted files, and no plaintext (grep as root)",
              "inbox" in out and "state.d" in out and re.search(r"^0\s*$", out, re.M), out)
        srv.files["/mailbox"] = box(2, [1, 2, 3])
        ok, out = wget(g, srv.port, "/mailbox")
        check("the workhorse fetches mailbox 2", ok, out)
        r.to_reader()
        out = r.cmd("fetch")
        check("the reader takes mailbox 2: 1 new, 2 already kept", "mailbox sequence 2: 1 new, 2 already kept" in out, out)

        # A message changed by the workhorse.
        r.to_shell()
        good3 = box(3, [1, 2, 3, 4])
        srv.files["/mailbox"] = good3
        ok, out = wget(g, srv.port, "/mailbox")
        flip = ("import glob;f=open(glob.glob('/data/trusted/*/inbox')[0],'r+b');f.seek(-20,2);b=f.read(1);"
                "f.seek(-20,2);f.write(bytes([b[0]^1]));print('hostile: flipped')")
        out2 = g.cmd(f'linux python3 -c "{flip}"', 180)
        check("the workhorse fetches mailbox 3 and, as root, changes a byte of its last message",
              ok and "hostile: flipped" in out2, out + out2)
        r.to_reader()
        out = r.cmd("fetch")
        check("the tampered message is reported and not taken; the mailbox's others are",
              "mail: message 4: TAMPERED" in out and "mailbox sequence 3: 0 new, 3 already kept, 1 refused" in out, out)
        out = r.cmd("show 4")
        out2 = r.cmd("list")
        check("... and never shown", "no message 4" in out and "late news" not in out2 and PLAIN.decode() + " 4" not in out,
              out + out2)

        # An old mailbox put back.
        r.to_shell()
        out = linux(g, "cd $(dirname /data/trusted/*/mail.pub) && cp /tmp/old-inbox inbox && echo put-back")
        check("as root: mailbox 1 put back", "put-back" in out, out)
        r.to_reader()
        before = r.cmd("list")
        out = r.cmd("fetch")
        check("the replayed old mailbox is reported and changes nothing",
              "REPLAYED: an old mailbox (sequence 1; the reader has taken sequence 3)" in out
              and r.cmd("list") == before, out)

        # A mailbox sealed by someone else to the reader's public key.
        r.to_shell()
        other = mailbox.sender_key(os.urandom(32), reader_pub)
        srv.files["/forged"] = mailbox.make_mailbox(other, 9, [(5, text(5, "forged offer"))])
        ok, out = wget(g, srv.port, "/forged")
        r.to_reader()
        out = r.cmd("fetch")
        check("a mailbox sealed with another key is reported as forged and not shown",
              ok and "FORGED" in out and "forged offer" not in r.cmd("list"), out)

        # The good mailbox 3 again brings message 4.
        r.to_shell()
        ok, out = wget(g, srv.port, "/mailbox")
        r.to_reader()
        out = r.cmd("fetch")
        check("the whole mailbox 3 fetched again: message 4 taken", "mailbox sequence 3: 1 new, 3 already kept, 0 refused" in out, out)
        out = r.cmd("show 2")
        check("show 2", "MAIL-PLAINTEXT 2: the body of the plan." in out, out)
        out = r.cmd("note call the plumber")
        check("a note kept", "mail: note kept" in out, out)

        # Compose and send: sealed on the trusted side, carried by the workhorse.
        out = r.cmd("send")
        check("send without a text says so", "send takes the message's text" in out, out)
        reply1 = f"{PLAIN.decode()} reply: the plan suits me"
        out = r.cmd("send " + reply1)
        check("send: message 1 sealed to the sender in the workhorse's outbox",
              "mail: send: message 1 sealed to the sender in the workhorse's outbox" in out, out)
        r.to_shell()
        out = linux(g, "cd $(dirname /data/trusted/*/mail.pub) && cp outbox /tmp/out1 && grep -c -e MAIL-PLAINTEXT -e suits outbox")
        check("the outbox holds no plaintext (grep as root)", re.search(r"^0\s*$", out, re.M), out)
        out = post(g, srv.port)
        check("the workhorse posts the outbox with busybox wget; the host's server opens it: the text sent",
              "accepted 1" in out and srv.taken == [(1, reply1.encode())], (out, srv.taken))
        flip = ("import glob;f=open(glob.glob('/data/trusted/*/outbox')[0],'r+b');f.seek(80);b=f.read(1);"
                "f.seek(80);f.write(b'1' if b==b'0' else b'0');print('hostile: flipped')")
        out = g.cmd(f'linux python3 -c "{flip}"', 180) + post(g, srv.port)
        check("an outbox changed by the workhorse (python3 as root) is refused by the server",
              "hostile: flipped" in out and "refused: it does not authenticate" in out and len(srv.taken) == 1, out)
        out = post(g, srv.port, "/tmp/out1")
        check("message 1 posted again is refused as an old one",
              "refused: an old message (1; taken up to 1)" in out and len(srv.taken) == 1, out)
        r.to_reader()
        out = r.cmd("send second thoughts")
        r.to_shell()
        out += post(g, srv.port)
        check("send: message 2 taken after it", "message 2 sealed" in out and "accepted 2" in out
              and srv.taken[-1] == (2, b"second thoughts"), (out, srv.taken))
        r.to_reader()
        out = r.cmd("list")
        check("list: 1 and 2 read, 3 and 4 new", "4 messages, 2 unread (mailbox sequence 3)" in out
              and re.search(r"^\s+1\s+welcome$", out, re.M) and re.search(r"^\s+2\s+the plan$", out, re.M)
              and re.search(r"^\s+3 \[new\] minutes$", out, re.M) and re.search(r"^\s+4 \[new\] late news$", out, re.M), out)
        r.to_shell()
        out = linux(g, "cat /data/trusted/*/* | grep -c -e MAIL-PLAINTEXT -e plumber")
        check("still no plaintext in the workhorse's files", re.search(r"^0\s*$", out, re.M), out)
        g.cmd("halt", 60)
        g.kill()
        whole = disk.read_bytes()
        check("the disk image holds no plaintext of the mail or the note", PLAIN not in whole and b"plumber" not in whole)

        g = Guest("", state, disk=disk)
        if not check("boots again (the same TPM state and disk)", g.expect(test_boot.PROMPT, 240), g.text()[-1500:]):
            return
        r, seen = start_reader(g, "second boot")
        if r is None:
            return
        check("after a reboot: the same public key and the trusted sender, from the vault",
              f"public key {reader_pub.hex()}" in seen and f"trusted sender {sender_pub.hex()}" in seen
              and "new key pair" not in seen, seen)
        check("after a reboot: the messages and read flags kept", "4 messages kept, 2 unread, mailbox sequence 3" in seen, seen)
        out = r.cmd("list")
        check("... list as before", re.search(r"^\s+2\s+the plan$", out, re.M) and re.search(r"^\s+3 \[new\] minutes$", out, re.M), out)
        out = r.cmd("note")
        check("after a reboot: the note kept", "mail: note: call the plumber" in out, out)
        r.to_shell()
        srv.files["/old"] = box(2, [1, 2, 3])
        ok2, out2 = wget(g, srv.port, "/old")
        r.to_reader()
        out = r.cmd("fetch")
        check("after a reboot: an old mailbox is still refused as replayed",
              ok2 and "REPLAYED: an old mailbox (sequence 2; the reader has taken sequence 3)" in out, out + out2)
        out = r.cmd("show 3")
        check("... and the reader reads on", "MAIL-PLAINTEXT 3: the body of minutes." in out, out)
        out = r.cmd("send after the reboot")
        r.to_shell()
        out += post(g, srv.port)
        check("after a reboot: send goes on with message 3 (its number kept in the vault)",
              "message 3 sealed" in out and "accepted 3" in out and srv.taken[-1] == (3, b"after the reboot"), (out, srv.taken))
        g.kill()
    finally:
        if g is not None:
            try:
                g.kill()
            except Exception:
                pass
        srv.close()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(state, ignore_errors=True)
        ok = sum(results)
        print(f"mail-test: {ok}/{len(results)} passed ({time.monotonic() - start:.0f} s)")
    sys.exit(0 if results and all(results) else 1)


if __name__ == "__main__":
    main()
