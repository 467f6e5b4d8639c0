# Python's signal.alarm, signal.pause and signal.setitimer (SIGALRM from
# the workhorse's ITIMER_REAL), and time.time as the wall clock.  Run on
# the host and on Keep by tools/test_linux.py; the output must be the same.
import signal
import time

got = []
signal.signal(signal.SIGALRM, lambda sig, frame: got.append(sig))
start = time.monotonic()
print("alarm(1) with none set:", signal.alarm(1))
signal.pause()
print("pause returned after the handler ran:", got == [signal.SIGALRM], time.monotonic() - start >= 0.9)
print("alarm(0) with none left:", signal.alarm(0))
print("setitimer(ITIMER_REAL, 0.05, 0.05):", signal.setitimer(signal.ITIMER_REAL, 0.05, 0.05))
while len(got) < 5:
    signal.pause()
value, interval = signal.setitimer(signal.ITIMER_REAL, 0)
print("signals in all:", len(got), "interval", interval, "armed", value > 0)
print("getitimer after disarming:", signal.getitimer(signal.ITIMER_REAL))
# A sleep that a signal interrupts goes on after the handler (PEP 475).
signal.setitimer(signal.ITIMER_REAL, 0.05)
start = time.monotonic()
time.sleep(0.3)
print("time.sleep(0.3) through a signal:", len(got), time.monotonic() - start >= 0.29)
# The wall clock: after 2020, and with the monotonic clock's pace.
t0, m0 = time.time(), time.monotonic()
time.sleep(0.1)
t1, m1 = time.time(), time.monotonic()
print("time.time after 2020:", t0 > 1577836800, "advancing with monotonic:", abs((t1 - t0) - (m1 - m0)) < 0.02)
