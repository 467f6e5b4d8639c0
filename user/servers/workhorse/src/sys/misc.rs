//! Time, identity, limits, randomness.

use super::*;

pub(crate) fn now_ns() -> u64 {
    TIMER.now_ms().unwrap_or(0) * 1_000_000
}

/// The time of day: the wall clock's reading at start plus the timer's
/// advance (wallclock.rs).
pub(crate) fn realtime_ns() -> u64 {
    crate::wallclock::realtime_at(now_ns())
}

pub(crate) const CLOCK_REALTIME: u64 = 0;
pub(crate) const CLOCK_REALTIME_ALARM: u64 = 8;
const CLOCK_TAI: u64 = 11;

/// Whether `clock` tells the time of day (else it counts from boot);
/// EINVAL for no clock (10 is unused; CPU-time clocks of other processes,
/// negative ids, are not answered).  CLOCK_TAI is CLOCK_REALTIME, as on a
/// Linux whose TAI offset nobody set.
pub(crate) fn is_realtime(clock: u64) -> Result<bool, i64> {
    match clock {
        CLOCK_REALTIME | 5 | CLOCK_REALTIME_ALARM | CLOCK_TAI => Ok(true),
        0..=9 => Ok(false),
        _ => Err(EINVAL),
    }
}

/// `clock`'s reading in ns.
pub(crate) fn clock_ns(clock: u64) -> Result<u64, i64> {
    Ok(if is_realtime(clock)? { realtime_ns() } else { now_ns() })
}

/// Writes a timespec.
pub(crate) fn write_timespec(s: &mut Server, pid: i32, va: u64, ns: u64) -> Result<(), i64> {
    let mm = &mut s.proc(pid).mm;
    mm.write_u64(va, ns / 1_000_000_000)?;
    mm.write_u64(va + 8, ns % 1_000_000_000)
}

/// Reads a timespec as ns; EINVAL for a negative one or tv_nsec past a
/// second.
pub(crate) fn read_timespec(s: &mut Server, pid: i32, va: u64) -> Result<u64, i64> {
    let mm = &mut s.proc(pid).mm;
    let (sec, nsec) = (mm.read_u64(va)?, mm.read_u64(va + 8)?);
    if nsec >= 1_000_000_000 || (sec as i64) < 0 {
        return Err(EINVAL);
    }
    Ok(sec.saturating_mul(1_000_000_000).saturating_add(nsec))
}

pub fn clock_gettime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ns = cpu_clock(s, pid, c.args[0]).unwrap_or_else(|| clock_ns(c.args[0]));
    ret(ns.and_then(|ns| write_timespec(s, pid, c.args[1], ns)).map(|_| 0))
}

/// The CPU time of process `tgid` in ns (cpu.rs): its threads' and that
/// of those that ended.
pub(crate) fn process_cpu(s: &Server, tgid: i32) -> u64 {
    let live: u64 = s.procs.range(tgid..).map(|(_, p)| p).filter(|p| p.tgid == tgid).map(|p| p.cpu_ns()).sum();
    // (Threads' ids come after their leader's: the range starts there,
    // but a thread of another process may come between.)
    live + s.procs.get(&tgid).map_or(0, |l| l.cpu_done)
}

/// A CPU-time clock's reading, or None for a clock that is not one:
/// CLOCK_PROCESS_CPUTIME_ID, CLOCK_THREAD_CPUTIME_ID, and those that
/// clock_getcpuclockid and pthread_getcpuclockid make (negative: the pid's
/// complement << 3, 4 for a thread's, and the kind 0-2, which are the same
/// clock here: all CPU time is user time).  EINVAL, as Linux, for kind 3,
/// no such process, or a thread clock of another process's thread.
pub(crate) fn cpu_clock(s: &Server, pid: i32, clock: u64) -> Option<Result<u64, i64>> {
    const CLOCK_PROCESS_CPUTIME_ID: i32 = 2;
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let me = &s.procs[&pid];
    let (target, thread) = match clock as i32 {
        CLOCK_PROCESS_CPUTIME_ID => (me.tgid, false),
        CLOCK_THREAD_CPUTIME_ID => (pid, true),
        id if id < 0 => {
            if id & 3 == 3 {
                return Some(Err(EINVAL));
            }
            let (upid, thread) = (!(id >> 3), id & 4 != 0);
            match upid {
                0 if thread => (pid, true),
                0 => (me.tgid, false),
                _ => (upid, thread),
            }
        }
        _ => return None,
    };
    Some(match s.procs.get(&target) {
        Some(t) if thread && t.tgid == me.tgid => Ok(t.cpu_ns()),
        Some(t) if !thread && t.pid == t.tgid => Ok(process_cpu(s, target)),
        _ => Err(EINVAL),
    })
}

/// A struct rusage with `user_ns` of user time (the rest zero: no system
/// time apart, no page or context-switch counts).
pub(crate) fn rusage(user_ns: u64) -> [u8; 144] {
    let mut b = [0u8; 144];
    b[..8].copy_from_slice(&(user_ns / 1_000_000_000).to_le_bytes());
    b[8..16].copy_from_slice(&(user_ns % 1_000_000_000 / 1000).to_le_bytes());
    b
}

/// times(buf): the process's and its waited-for children's CPU time in
/// clock ticks (100 a second, AT_CLKTCK), all of it user time; returns the
/// ticks since boot.
pub fn times(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const NS_PER_TICK: u64 = 10_000_000;
    let tgid = s.proc(pid).tgid;
    let user = process_cpu(s, tgid);
    let children = s.procs.get(&tgid).map_or(0, |l| l.cpu_children);
    if c.args[0] != 0 {
        let mut b = [0u8; 32];
        b[..8].copy_from_slice(&(user / NS_PER_TICK).to_le_bytes());
        b[16..24].copy_from_slice(&(children / NS_PER_TICK).to_le_bytes());
        if let Err(e) = s.proc(pid).mm.write(c.args[0], &b) {
            return Out::Ret(-e);
        }
    }
    Out::Ret((now_ns() / NS_PER_TICK) as i64)
}

/// clock_settime, settimeofday: the wall clock is the machine's, and no
/// Linux program may set it.
pub fn set_clock(_: &mut Server, _: i32, _: &mut Call) -> Out {
    Out::Ret(-EPERM)
}

/// clock_settime: EPERM for the wall clock (set_clock); the clocks that
/// count from boot and the CPU-time clocks cannot be set at all (EINVAL,
/// as Linux).
pub fn clock_settime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    match is_realtime(c.args[0]) {
        Ok(true) if c.args[0] == CLOCK_REALTIME => set_clock(s, pid, c),
        _ => Out::Ret(-EINVAL),
    }
}

pub fn gettimeofday(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ns = realtime_ns();
    let mm = &mut s.proc(pid).mm;
    if c.args[0] == 0 {
        return Out::Ret(0);
    }
    ret(mm
        .write_u64(c.args[0], ns / 1_000_000_000)
        .and_then(|_| mm.write_u64(c.args[0] + 8, ns % 1_000_000_000 / 1000))
        .map(|_| 0))
}

pub fn time(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let t = realtime_ns() / 1_000_000_000;
    if c.args[0] != 0
        && let Err(e) = s.proc(pid).mm.write_u64(c.args[0], t)
    {
        return Out::Ret(-e);
    }
    Out::Ret(t as i64)
}

/// Sleeps until the deadline kept in the call (args[5] once started, on
/// the timer's clock): `ts` from now, or (`absolute`) the time `ts` on
/// `clock` (a real-time one's deadline is taken to the timer's clock when
/// the sleep starts, as the wall clock never jumps).
pub(crate) fn sleep(s: &mut Server, pid: i32, c: &mut Call, ts: u64, absolute: Option<u64>) -> Out {
    if c.args[5] == 0 {
        let t = match read_timespec(s, pid, ts) {
            Ok(t) => t,
            Err(e) => return Out::Ret(-e),
        };
        c.args[5] = match absolute {
            Some(clock) if is_realtime(clock) == Ok(true) => crate::wallclock::mono_at(t),
            Some(_) => t,
            None => now_ns().saturating_add(t),
        }
        .max(1);
        c.have_all = true;
    }
    // Strictly after: the clock counts whole milliseconds, so a reading
    // equal to the deadline may be up to a millisecond short of it (and a
    // program comparing the clock's readings as floats sees less than
    // it asked for).
    if now_ns() > c.args[5] {
        return Out::Ret(0);
    }
    // Awake a millisecond after the deadline (strictly after, above): a
    // one-shot time-out of the server's receive, not a poll.
    super::timers::wake_at(c.args[5].saturating_add(1));
    Out::Block
}

/// A sleep interrupted by a signal's handler: the time it had left goes
/// to `rem` (nanosleep's second argument, a relative clock_nanosleep's
/// fourth), as Linux writes it.
pub(crate) fn sleep_interrupted(s: &mut Server, pid: i32, call: &Call) {
    let rem = match call.nr {
        35 => call.args[1],
        230 if call.args[1] & TIMER_ABSTIME == 0 => call.args[3],
        _ => return,
    };
    if rem != 0 && call.args[5] != 0 && s.procs.contains_key(&pid) {
        let left = call.args[5].saturating_sub(now_ns());
        let _ = write_timespec(s, pid, rem, left);
    }
}

pub fn nanosleep(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ts = c.args[0];
    sleep(s, pid, c, ts, None)
}

const TIMER_ABSTIME: u64 = 1;

pub fn clock_nanosleep(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[5] == 0 {
        // clock_nanosleep answers its errors as its result, not in errno.
        if let Err(e) = is_realtime(c.args[0]) {
            return Out::Ret(-e);
        }
        // A thread's CPU clock is no clock to sleep on (Linux: EINVAL).
        if c.args[0] == 3 || c.args[1] & !TIMER_ABSTIME != 0 {
            return Out::Ret(-EINVAL);
        }
        // rem, for a signal that interrupts it.
        let _ = s.arg(pid, c, 3);
        c.args[5] = 0;
    }
    let ts = c.args[2];
    let absolute = (c.args[1] & TIMER_ABSTIME != 0).then_some(c.args[0]);
    sleep(s, pid, c, ts, absolute)
}

pub fn clock_getres(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    // The CPU-time clocks count nanoseconds (the kernel's, from the TSC),
    // the others milliseconds (the timer's now_ms).
    let res = match cpu_clock(s, pid, c.args[0]) {
        Some(r) => r.map(|_| 1),
        None => is_realtime(c.args[0]).map(|_| 1_000_000),
    };
    let res = match res {
        Ok(r) => r,
        Err(e) => return Out::Ret(-e),
    };
    let mm = &mut s.proc(pid).mm;
    if c.args[1] == 0 {
        return Out::Ret(0);
    }
    ret(mm.write_u64(c.args[1], 0).and_then(|_| mm.write_u64(c.args[1] + 8, res)).map(|_| 0))
}

/// getrusage: the CPU time of the process (RUSAGE_SELF), of the children
/// it waited for (RUSAGE_CHILDREN) or of the thread (RUSAGE_THREAD), as
/// user time; the other fields zero.
pub fn getrusage(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let tgid = s.proc(pid).tgid;
    let ns = match c.args[0] as i32 {
        0 => process_cpu(s, tgid),
        -1 => s.procs.get(&tgid).map_or(0, |l| l.cpu_children),
        1 => s.proc(pid).cpu_ns(),
        _ => return Out::Ret(-EINVAL),
    };
    ret(s.proc(pid).mm.write(c.args[1], &rusage(ns)).map(|_| 0))
}

pub fn uname(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mut b = [0u8; 65 * 6];
    for (i, f) in ["Linux", "keep", "6.1.0-keep-workhorse", "#1 Keep workhorse", "x86_64", "(none)"]
        .iter()
        .enumerate()
    {
        b[i * 65..i * 65 + f.len()].copy_from_slice(f.as_bytes());
    }
    ret(s.proc(pid).mm.write(c.args[0], &b).map(|_| 0))
}

/// A resource's limits (EINVAL past RLIMIT_NLIMITS).
fn limit(s: &mut Server, pid: i32, res: u64) -> Result<(u64, u64), i64> {
    s.proc(pid).rlimits.get(res as usize).copied().ok_or(EINVAL)
}

fn write_limit(s: &mut Server, pid: i32, va: u64, (cur, max): (u64, u64)) -> Result<(), i64> {
    let mm = &mut s.proc(pid).mm;
    mm.write_u64(va, cur)?;
    mm.write_u64(va + 8, max)
}

/// New limits for `target`'s process (every thread's copy): a soft limit
/// above the hard one is EINVAL; raising the hard limit is allowed
/// (everyone is root) except RLIMIT_NOFILE past the server's 1024
/// descriptors (EPERM, as Linux past nr_open).
fn set_limit(s: &mut Server, target: i32, res: u64, va: u64, caller: i32) -> Result<(), i64> {
    let mm = &mut s.proc(caller).mm;
    let new = (mm.read_u64(va)?, mm.read_u64(va + 8)?);
    if new.0 > new.1 {
        return Err(EINVAL);
    }
    if res == 7 && new.1 > 1024 {
        return Err(EPERM);
    }
    for t in s.threads_of(target) {
        s.proc(t).rlimits[res as usize] = new;
    }
    Ok(())
}

pub fn getrlimit(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = limit(s, pid, c.args[0]).and_then(|l| write_limit(s, pid, c.args[1], l)).map(|_| 0);
    ret(r)
}

pub fn setrlimit(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = limit(s, pid, c.args[0]).and_then(|_| set_limit(s, pid, c.args[0], c.args[1], pid)).map(|_| 0);
    ret(r)
}

/// prlimit64(pid, resource, new, old).
pub fn prlimit64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let old = s.arg(pid, c, 3);
    let (target, res, new) = (c.args[0] as i32, c.args[1], c.args[2]);
    let r = (|| {
        let target = match target {
            0 => pid,
            t if s.procs.get(&t).is_some_and(|p| p.keep.is_some() || p.thread_done) => t,
            _ => return Err(ESRCH),
        };
        let cur = limit(s, target, res)?;
        if new != 0 {
            set_limit(s, target, res, new, pid)?;
        }
        if old != 0 {
            write_limit(s, pid, old, cur)?;
        }
        Ok(0)
    })();
    ret(r)
}

pub fn getrandom(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[2] & !7 != 0 {
        return Out::Ret(-EINVAL); // GRND_NONBLOCK, GRND_RANDOM, GRND_INSECURE
    }
    let n = (c.args[1] as usize).min(IO_CHUNK);
    let mut b = Vec::with_capacity(n + 8);
    while b.len() < n {
        b.extend_from_slice(&s.random().to_le_bytes());
    }
    b.truncate(n);
    ret(s.proc(pid).mm.write(c.args[0], &b).map(|_| n as i64))
}



pub fn sysinfo(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    // struct sysinfo: uptime, loads[3], totalram, freeram, sharedram,
    // bufferram, totalswap, freeswap (longs), procs (u16), pad, totalhigh,
    // freehigh, mem_unit (u32): 112 bytes.
    let mut b = [0u8; 112];
    let free = crate::frames::available() * 4096;
    let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).unwrap_or(free).max(free);
    let procs = s.procs.len() as u16;
    b[0..8].copy_from_slice(&(TIMER.now_ms().unwrap_or(0) / 1000).to_le_bytes());
    b[32..40].copy_from_slice(&total.to_le_bytes());
    b[40..48].copy_from_slice(&free.to_le_bytes());
    b[80..82].copy_from_slice(&procs.to_le_bytes());
    b[104..108].copy_from_slice(&1u32.to_le_bytes());
    ret(s.proc(pid).mm.write(c.args[0], &b).map(|_| 0))
}
