//! Timers: alarm and setitimer/getitimer (ITIMER_REAL: SIGALRM to the
//! process), and timerfd (a descriptor that becomes readable when its
//! timer expires; poll and epoll see it).  Deadlines are on the timer's
//! clock (ns from boot); a real-time one given as an absolute time is
//! taken to that clock when set (the wall clock never jumps: wallclock.rs).
//!
//! The server's receive has a time-out only when something waits for a
//! time: the earliest interval timer, and the earliest deadline a waiting
//! call (a sleep, a timerfd read or poll) noted with [`wake_at`] while
//! `retry` last tried it.  So a SIGALRM reaches a process that runs, waits
//! in a call or sleeps within a millisecond or so of its time.

use core::sync::atomic::{AtomicU64, Ordering};

use super::object::{Object, new_obj, with_obj};
use super::*;
use crate::linux::signal::SIGALRM;

const ITIMER_REAL: u64 = 0;
const NS_PER_SEC: u64 = 1_000_000_000;
/// The longest time-out the receive is given: the kernel refuses one over
/// a day (INVALID_ARG, at once), and a timer further away is looked at
/// again a minute later.
const MAX_TIMEOUT_MS: u64 = 60_000;

/// The earliest deadline a waiting call noted (0: none); `retry` clears
/// it before trying the waiting calls again, which note theirs anew.
static WAKE_AT: AtomicU64 = AtomicU64::new(0);

/// A waiting call wants the server awake at `deadline` (timer clock, ns).
pub(crate) fn wake_at(deadline: u64) {
    let _ = WAKE_AT.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |w| {
        (w == 0 || deadline < w).then_some(deadline.max(1))
    });
}

/// Forgets the noted deadlines (`retry` is about to try every waiting call).
pub(crate) fn clear_wakes() {
    WAKE_AT.store(0, Ordering::Relaxed);
}

impl Server {
    /// Sends SIGALRM for every interval timer that expired and rearms the
    /// periodic ones; then the receive's time-out in ms (`base`, 0 for
    /// none) shortened to the next deadline, interval timer or noted.
    /// Inlined into the server's loop: with no timer and nothing noted it
    /// is two tests, not a call (getppid 649 to 643 instructions).
    #[inline(always)]
    pub fn timers_timeout(&mut self, base: u64) -> u64 {
        let noted = WAKE_AT.load(Ordering::Relaxed);
        if self.itimers.is_empty() && noted == 0 {
            return base;
        }
        self.timers_due(base, noted)
    }

    #[inline(never)]
    fn timers_due(&mut self, base: u64, noted: u64) -> u64 {
        let now = now_ns();
        let due: Vec<i32> = self.itimers.iter().filter(|(_, t)| t.0 <= now).map(|(p, _)| *p).collect();
        for tgid in due {
            let (deadline, interval) = self.itimers[&tgid];
            if interval == 0 {
                self.itimers.remove(&tgid);
            } else {
                // Expiries missed meanwhile are one signal (it is pending once).
                let next = deadline.saturating_add(interval.saturating_mul(1 + (now - deadline) / interval));
                self.itimers.insert(tgid, (next, interval));
            }
            self.post_process(tgid, SIGALRM);
        }
        let next = self.itimers.values().map(|t| t.0).chain((noted != 0).then_some(noted)).min();
        match next {
            None => base,
            Some(d) => {
                let ms = d.saturating_sub(now).div_ceil(1_000_000).clamp(1, MAX_TIMEOUT_MS);
                if base == 0 { ms } else { base.min(ms) }
            }
        }
    }
}

/// An interval timer's value and interval as a struct itimerval
/// (it_interval first, then it_value; timevals).
fn write_itimerval(s: &mut Server, pid: i32, va: u64, value: u64, interval: u64) -> Result<(), i64> {
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].iter().enumerate() {
        b[i * 16..i * 16 + 8].copy_from_slice(&(ns / NS_PER_SEC).to_le_bytes());
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&(ns % NS_PER_SEC / 1000).to_le_bytes());
    }
    s.proc(pid).mm.write(va, &b)
}

fn read_timeval(s: &mut Server, pid: i32, va: u64) -> Result<u64, i64> {
    let mm = &mut s.proc(pid).mm;
    let (sec, usec) = (mm.read_u64(va)?, mm.read_u64(va + 8)?);
    if (sec as i64) < 0 || usec >= 1_000_000 {
        return Err(EINVAL);
    }
    Ok(sec.saturating_mul(NS_PER_SEC).saturating_add(usec * 1000))
}

/// The process's ITIMER_REAL now: (time left, interval); an armed timer
/// shows at least a microsecond left (0 would mean disarmed).
fn itimer_real(s: &Server, tgid: i32) -> (u64, u64) {
    match s.itimers.get(&tgid) {
        None => (0, 0),
        Some(&(deadline, interval)) => (deadline.saturating_sub(now_ns()).max(1000), interval),
    }
}

/// Arms (value 0: disarms) the process's ITIMER_REAL; returns the old one.
fn set_itimer_real(s: &mut Server, tgid: i32, value: u64, interval: u64) -> (u64, u64) {
    let old = itimer_real(s, tgid);
    if value == 0 {
        s.itimers.remove(&tgid);
    } else {
        s.itimers.insert(tgid, (now_ns().saturating_add(value), interval));
    }
    old
}

/// getitimer(which, curr): ITIMER_REAL; ITIMER_VIRTUAL and ITIMER_PROF
/// need CPU-time accounting, which the server has not: EINVAL.
pub fn getitimer(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] != ITIMER_REAL {
        return Out::Ret(-EINVAL);
    }
    let tgid = s.proc(pid).tgid;
    let (value, interval) = itimer_real(s, tgid);
    ret(write_itimerval(s, pid, c.args[1], value, interval).map(|_| 0))
}

/// setitimer(which, new, old): new NULL disarms, as Linux.
pub fn setitimer(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (which, new, old) = (c.args[0], c.args[1], c.args[2]);
    if which != ITIMER_REAL {
        return Out::Ret(-EINVAL);
    }
    let r = (|| {
        let (interval, value) = if new == 0 { (0, 0) } else { (read_timeval(s, pid, new)?, read_timeval(s, pid, new + 16)?) };
        if old != 0 {
            mem::check_range(old, 32)?;
        }
        let tgid = s.proc(pid).tgid;
        let (ov, oi) = set_itimer_real(s, tgid, value, interval);
        if old != 0 {
            write_itimerval(s, pid, old, ov, oi)?;
        }
        Ok(0)
    })();
    ret(r)
}

/// alarm(seconds): ITIMER_REAL once; the old one's seconds left, rounded
/// to the nearest (at least 1 while one is armed), as Linux.
pub fn alarm(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let secs = c.args[0] & 0xffff_ffff;
    let tgid = s.proc(pid).tgid;
    let (left, _) = set_itimer_real(s, tgid, secs * NS_PER_SEC, 0);
    let mut r = left / NS_PER_SEC;
    let usec = left % NS_PER_SEC / 1000;
    if usec >= 500_000 || (r == 0 && usec != 0) {
        r += 1;
    }
    Out::Ret(r as i64)
}

// ---- timerfd -----------------------------------------------------------

const TFD_TIMER_ABSTIME: u64 = 1;
const TFD_TIMER_CANCEL_ON_SET: u64 = 2;

/// A timerfd: its next expiry not yet counted (timer clock ns, 0 when
/// disarmed), its interval, the expiries counted and not yet read, and
/// all ever counted (the edge-triggered epoll's generation).
pub struct TimerFd {
    clock: u64,
    deadline: u64,
    interval: u64,
    ticks: u64,
    total: u64,
}

impl TimerFd {
    /// Expiries since the last count, at `now`.
    fn pending(&self, now: u64) -> u64 {
        match (self.deadline, self.interval) {
            (0, _) => 0,
            (d, _) if now < d => 0,
            (_, 0) => 1,
            (d, i) => 1 + (now - d) / i,
        }
    }

    /// Counts the expiries up to `now` and moves the deadline on.
    fn advance(&mut self, now: u64) {
        let n = self.pending(now);
        if n == 0 {
            return;
        }
        self.ticks += n;
        self.total += n;
        self.deadline = if self.interval == 0 { 0 } else { self.deadline.saturating_add(n.saturating_mul(self.interval)) };
    }

    /// (time left, interval) as timerfd_gettime says them.
    fn get(&mut self) -> (u64, u64) {
        let now = now_ns();
        self.advance(now);
        let left = if self.deadline == 0 { 0 } else { self.deadline.saturating_sub(now).max(1) };
        (left, self.interval)
    }
}

impl Object for TimerFd {
    /// The expiries since the last read as 8 bytes; waits for one.
    fn read(&mut self, _: &mut Server, _: i32, max: usize) -> Result<Vec<u8>, i64> {
        if max < 8 {
            return Err(EINVAL);
        }
        self.advance(now_ns());
        if self.ticks == 0 {
            if self.deadline != 0 {
                wake_at(self.deadline);
            }
            return Err(WOULD_BLOCK);
        }
        Ok(core::mem::take(&mut self.ticks).to_le_bytes().to_vec())
    }
    fn ready(&self) -> u16 {
        if self.ticks > 0 || self.pending(now_ns()) > 0 {
            return super::io::POLLIN;
        }
        if self.deadline != 0 {
            wake_at(self.deadline);
        }
        0
    }
    fn generation(&self) -> u64 {
        self.total + self.pending(now_ns())
    }
    fn stat(&self) -> (u32, u64) {
        (0o600, 0)
    }
    fn name(&self) -> String {
        String::from("anon_inode:[timerfd]")
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

/// timerfd_create(clockid, flags): REALTIME, MONOTONIC, BOOTTIME and their
/// ALARM forms; TFD_NONBLOCK, TFD_CLOEXEC.
pub fn timerfd_create(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (clock, flags) = (c.args[0], c.args[1]);
    if !matches!(clock, 0 | 1 | 7 | 8 | 9) || flags & !((O_NONBLOCK | O_CLOEXEC) as u64) != 0 {
        return Out::Ret(-EINVAL);
    }
    let obj = new_obj(TimerFd { clock, deadline: 0, interval: 0, ticks: 0, total: 0 });
    let d = Description::new(Kind::Object(obj), O_RDWR | (flags as u32 & O_NONBLOCK));
    ret(s.proc(pid).install(Fd { desc: d, cloexec: flags & O_CLOEXEC as u64 != 0 }, 0))
}

/// An itimerspec (it_interval, then it_value).
fn write_itimerspec(s: &mut Server, pid: i32, va: u64, value: u64, interval: u64) -> Result<(), i64> {
    super::misc::write_timespec(s, pid, va, interval)?;
    super::misc::write_timespec(s, pid, va + 16, value)
}

/// timerfd_settime(fd, flags, new, old): a new setting (value 0
/// disarms) with the count of unread expiries reset; TFD_TIMER_ABSTIME
/// takes the value as a time on the descriptor's clock.
/// TFD_TIMER_CANCEL_ON_SET is accepted and never cancels (nobody may set
/// the clock).
pub fn timerfd_settime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, flags, new) = (c.args[0], c.args[1], c.args[2]);
    let old = s.arg(pid, c, 3);
    let r = (|| {
        if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
            return Err(EINVAL);
        }
        let interval = super::misc::read_timespec(s, pid, new)?;
        let value = super::misc::read_timespec(s, pid, new + 16)?;
        if old != 0 {
            mem::check_range(old, 32)?;
        }
        let before = with_obj(s, pid, fd, EINVAL, |_, t: &mut TimerFd, _| {
            let realtime = super::misc::is_realtime(t.clock) == Ok(true);
            let before = t.get();
            t.deadline = match value {
                0 => 0,
                v if flags & TFD_TIMER_ABSTIME == 0 => now_ns().saturating_add(v),
                v if realtime => crate::wallclock::mono_at(v),
                v => v,
            }
            .max((value != 0) as u64);
            t.interval = if value == 0 { 0 } else { interval };
            t.ticks = 0;
            Ok(before)
        })?;
        if old != 0 {
            write_itimerspec(s, pid, old, before.0, before.1)?;
        }
        Ok(0)
    })();
    ret(r)
}

/// timerfd_gettime(fd, curr): the time left to the next expiry (0:
/// disarmed) and the interval.
pub fn timerfd_gettime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fd, curr) = (c.args[0], c.args[1]);
    let r = with_obj(s, pid, fd, EINVAL, |_, t: &mut TimerFd, _| Ok(t.get()))
        .and_then(|(value, interval)| write_itimerspec(s, pid, curr, value, interval).map(|_| 0));
    ret(r)
}
