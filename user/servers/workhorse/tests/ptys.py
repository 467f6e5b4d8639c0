# Python's pty and tty modules on pseudo-terminals: os.openpty, the
# slave's name, pty.fork (a child whose controlling terminal is the slave,
# os.isatty and os.ttyname of its descriptors, tty.setraw), pty.spawn's
# pieces (a child's output read at the master, its exit status).  Output
# read from the master is checked for markers, not compared whole.
import os
import pty
import select
import sys
import termios
import tty


def read_until(fd, marker):
    """The master's bytes until `marker` came (False after 20 s idle)."""
    got = b""
    while marker not in got:
        r, _, _ = select.select([fd], [], [], 20)
        if not r:
            return False
        try:
            b = os.read(fd, 1024)
        except OSError:
            return False
        if not b:
            return False
        got += b
    return True


m, s = os.openpty()
print("openpty: isatty", os.isatty(m), os.isatty(s))
print("slave name:", os.ttyname(s).startswith("/dev/pts/"))
os.write(m, b"line one\r")
print("slave reads:", os.read(s, 100))
print("echo at the master:", read_until(m, b"line one\r\n"))
attrs = termios.tcgetattr(s)
print("ECHO and ICANON:", bool(attrs[3] & termios.ECHO), bool(attrs[3] & termios.ICANON))
tty.setraw(s)
os.write(m, b"q")
print("raw read:", os.read(s, 10))
os.close(s)
os.close(m)

sys.stdout.flush()  # (else the child would write this process's buffer too)
pid, fd = pty.fork()
if pid == 0:
    # The child: its terminal is the slave.
    print("child: stdin is a tty", os.isatty(0), "session leader", os.getsid(0) == os.getpid())
    print("child: foreground", os.tcgetpgrp(0) == os.getpgrp())
    sys.stdout.flush()  # block-buffered when this process's output was a pipe
    line = sys.stdin.readline()
    print("child got", line.strip())
    sys.stdout.flush()
    os._exit(3)
print("child's first lines:", read_until(fd, b"child: foreground True"))
os.write(fd, b"hello child\r")
print("child's answer:", read_until(fd, b"child got hello child"))
_, status = os.waitpid(pid, 0)
print("child exit status:", os.waitstatus_to_exitcode(status))
