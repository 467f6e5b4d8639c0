//! Waiting for descriptors beyond poll (io.rs): ppoll and pselect6 with
//! their signal masks, select, and epoll.  A call that waits is tried
//! again after every message the server handles (and every 20 ms, for
//! time-outs and the terminal); it keeps its state in its own arguments:
//! bit 40 of one argument says it waits (Linux's are ints or sizes, never
//! that large), another holds the deadline.

use super::*;
use super::io::{POLLERR, POLLHUP, POLLIN, POLLOUT, desc_generation, desc_ready, do_poll};
use super::object::{Object, new_obj, with_obj};
use crate::signal::UNBLOCKABLE;
use crate::linux::poll::{EPOLLERR, EPOLLET, EPOLLEXCLUSIVE, EPOLLHUP, EPOLLONESHOT, EPOLLWAKEUP, POLLPRI};

const WAITING: u64 = 1 << 40;

/// Installs a call's temporary signal mask (ppoll, pselect6, epoll_pwait):
/// the old one comes back when the call returns, or after the handler of
/// the signal that interrupts it (as rt_sigsuspend's).
fn enter_mask(s: &mut Server, pid: i32, mask: u64, size: u64) -> Result<(), i64> {
    if mask == 0 {
        return Ok(());
    }
    if size != 8 {
        return Err(EINVAL);
    }
    let p = s.proc(pid);
    let m = p.mm.read_u64(mask)?;
    p.saved_mask = Some(p.sigmask);
    p.sigmask = m & !UNBLOCKABLE;
    Ok(())
}

fn leave_mask(s: &mut Server, pid: i32) {
    let p = s.proc(pid);
    if let Some(m) = p.saved_mask.take() {
        p.sigmask = m;
    }
}

/// What a waiting call with a temporary mask does with its result.
fn finish_masked(s: &mut Server, pid: i32, out: Out) -> Out {
    if !matches!(out, Out::Block) {
        leave_mask(s, pid);
    }
    out
}

/// A timespec (pselect6, ppoll, epoll_pwait2) as milliseconds, rounded up.
fn timespec_ms(s: &mut Server, pid: i32, va: u64) -> Result<i64, i64> {
    let ns = super::futex::timespec_ns(s, pid, va)?;
    Ok(ns.div_ceil(1_000_000).min(i64::MAX as u64) as i64)
}

/// Starts a masked wait: the mask installed, EINTR at once when a signal
/// it lets in is pending.
fn start_masked(s: &mut Server, pid: i32, c: &mut Call, mask: u64, size: u64, mark: usize) -> Option<Out> {
    if let Err(e) = enter_mask(s, pid, mask, size) {
        return Some(Out::Ret(-e));
    }
    c.args[mark] |= WAITING;
    if mask != 0 && s.deliverable(pid).is_some() {
        return Some(Out::Ret(-EINTR));
    }
    None
}

pub fn ppoll(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fds, n, ts) = (c.args[0], c.args[1], c.args[2]);
    let mask = s.arg(pid, c, 3);
    let size = s.arg(pid, c, 4);
    if size & WAITING == 0 {
        c.args[5] = 0; // r9, not ppoll's: do_poll's deadline
    }
    let t = if ts == 0 {
        -1
    } else if c.args[5] != 0 {
        1 // waiting: do_poll keeps the deadline in args[5]
    } else {
        match timespec_ms(s, pid, ts) {
            Ok(t) => t,
            Err(e) => return Out::Ret(-e),
        }
    };
    if size & WAITING == 0
        && let Some(out) = start_masked(s, pid, c, mask, size, 4)
    {
        return out;
    }
    let out = do_poll(s, pid, c, fds, n, t);
    finish_masked(s, pid, out)
}

/// select's three sets, read, tested and written back: the number of
/// bits left set, or None when nothing is ready.
fn select_sets(s: &mut Server, pid: i32, nfds: u64, sets: [u64; 3], give_up: bool) -> Result<Option<i64>, i64> {
    let bytes = nfds.div_ceil(64) as usize * 8;
    let mut have: [Vec<u8>; 3] = Default::default();
    for (i, &va) in sets.iter().enumerate() {
        have[i] = if va == 0 { alloc::vec![0; bytes] } else { s.proc(pid).mm.read_vec(va, bytes)? };
    }
    let mut out: [Vec<u8>; 3] = [alloc::vec![0; bytes], alloc::vec![0; bytes], alloc::vec![0; bytes]];
    let mut count = 0;
    for fd in 0..nfds as usize {
        let (byte, bit) = (fd / 8, 1u8 << (fd % 8));
        let wanted = [0, 1, 2].map(|i| have[i][byte] & bit != 0);
        if !wanted.iter().any(|&w| w) {
            continue;
        }
        let d = super::io::desc(s, pid, fd as u64)?;
        let r = desc_ready(&d.borrow());
        let got = [r & (POLLIN | POLLHUP | POLLERR) != 0, r & (POLLOUT | POLLERR) != 0, r & POLLPRI != 0];
        for i in 0..3 {
            if wanted[i] && got[i] {
                out[i][byte] |= bit;
                count += 1;
            }
        }
    }
    if count == 0 && !give_up {
        return Ok(None);
    }
    for (i, &va) in sets.iter().enumerate() {
        if va != 0 {
            s.proc(pid).mm.write(va, &out[i])?;
        }
    }
    Ok(Some(count))
}

/// The common part of select and pselect6: `deadline` 0 waits for ever,
/// u64::MAX is "do not wait".
fn do_select(s: &mut Server, pid: i32, nfds: u64, sets: [u64; 3], deadline: u64) -> Result<Option<i64>, i64> {
    if nfds as i32 > 1024 || (nfds as i32) < 0 {
        return Err(EINVAL);
    }
    let now = super::misc::now_ns();
    let give_up = deadline == u64::MAX || (deadline != 0 && now >= deadline);
    super::io::looked_at_tty();
    let r = select_sets(s, pid, nfds, sets, give_up)?;
    if r.is_none() {
        super::io::wait_for(s, pid, deadline);
    }
    Ok(r)
}

/// The time left of a wait, written back (select and pselect6 do).
fn write_left(s: &mut Server, pid: i32, va: u64, deadline: u64, usec: bool) {
    if va == 0 || deadline == 0 {
        return;
    }
    let left = if deadline == u64::MAX { 0 } else { deadline.saturating_sub(super::misc::now_ns()) };
    let sub = if usec { left % 1_000_000_000 / 1000 } else { left % 1_000_000_000 };
    let mm = &mut s.proc(pid).mm;
    let _ = mm.write_u64(va, left / 1_000_000_000).and_then(|_| mm.write_u64(va + 8, sub));
}

/// A timeval (select) or timespec as a deadline: 0 for ever (no time-out),
/// u64::MAX for "do not wait" (a zero time-out).
fn deadline_of(s: &mut Server, pid: i32, va: u64, usec: bool) -> Result<u64, i64> {
    if va == 0 {
        return Ok(0);
    }
    let mm = &mut s.proc(pid).mm;
    let (sec, sub) = (mm.read_u64(va)?, mm.read_u64(va + 8)?);
    let limit = if usec { 1_000_000 } else { 1_000_000_000 };
    if (sec as i64) < 0 || sub >= limit {
        return Err(EINVAL);
    }
    let ns = sec.saturating_mul(1_000_000_000).saturating_add(if usec { sub * 1000 } else { sub });
    Ok(if ns == 0 { u64::MAX } else { super::misc::now_ns().saturating_add(ns).min(u64::MAX - 1) })
}

/// select and pselect6 once their time-out (and mask) are taken: the
/// deadline in args[5], WAITING in args[0].
fn select_wait(s: &mut Server, pid: i32, c: &mut Call, usec: bool) -> Out {
    let nfds = c.args[0] & 0xffff_ffff;
    let sets = [c.args[1], c.args[2], c.args[3]];
    let (tv, deadline) = (c.args[4], c.args[5]);
    match do_select(s, pid, nfds, sets, deadline) {
        Ok(Some(n)) => {
            write_left(s, pid, tv, deadline, usec);
            Out::Ret(n)
        }
        Ok(None) => Out::Block,
        Err(e) => Out::Ret(-e),
    }
}

pub fn select(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] & WAITING == 0 {
        let _ = s.arg(pid, c, 3);
        let tv = s.arg(pid, c, 4);
        match deadline_of(s, pid, tv, true) {
            Ok(d) => c.args[5] = d,
            Err(e) => return Out::Ret(-e),
        }
        c.args[0] |= WAITING;
    }
    select_wait(s, pid, c, true)
}

/// pselect6(nfds, r, w, e, timespec, &{mask, size}).
pub fn pselect6(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] & WAITING == 0 {
        let _ = s.arg(pid, c, 3);
        let ts = s.arg(pid, c, 4);
        let sig = s.arg(pid, c, 5);
        let (mask, size) = if sig == 0 {
            (0, 0)
        } else {
            let mm = &mut s.proc(pid).mm;
            match (mm.read_u64(sig), mm.read_u64(sig + 8)) {
                (Ok(m), Ok(z)) => (m, z),
                (Err(e), _) | (_, Err(e)) => return Out::Ret(-e),
            }
        };
        match deadline_of(s, pid, ts, false) {
            Ok(d) => c.args[5] = d,
            Err(e) => return Out::Ret(-e),
        }
        if let Some(out) = start_masked(s, pid, c, mask, size, 0) {
            return out;
        }
    }
    let out = select_wait(s, pid, c, false);
    finish_masked(s, pid, out)
}

// ---- epoll --------------------------------------------------------------


/// One descriptor in an epoll set, keyed like Linux's by the number it
/// was added under and its open file description.  The description is
/// held weakly: when it is closed for good it leaves the set.
struct Member {
    fd: i32,
    desc: alloc::rc::Weak<core::cell::RefCell<Description>>,
    events: u32,
    data: u64,
    /// One-shot and reported: silent until EPOLL_CTL_MOD.
    disarmed: bool,
    /// Edge-triggered: what was last reported.
    seen: (u16, u64),
}

pub struct Epoll {
    members: Vec<Member>,
}

impl Epoll {
    /// Events due now (at most `max`); one-shot and edge-triggered state
    /// updated when `take`.
    fn due(&mut self, max: usize, take: bool) -> Vec<(u32, u64)> {
        self.members.retain(|m| m.desc.strong_count() > 0);
        let mut out = Vec::new();
        for m in self.members.iter_mut() {
            if out.len() >= max {
                break;
            }
            if m.disarmed {
                continue;
            }
            let Some(d) = m.desc.upgrade() else { continue };
            let (ready, generation) = {
                let d = d.borrow();
                (desc_ready(&d), desc_generation(&d))
            };
            let r = ready as u32 & (m.events | EPOLLERR | EPOLLHUP);
            if m.events & EPOLLET != 0 {
                let new = r as u16 & !m.seen.0 != 0 || (r != 0 && generation != m.seen.1);
                if take {
                    m.seen = (r as u16, generation);
                }
                if !new {
                    continue;
                }
            }
            if r == 0 {
                continue;
            }
            if take && m.events & EPOLLONESHOT != 0 {
                m.disarmed = true;
            }
            out.push((r, m.data));
        }
        out
    }
}

impl Object for Epoll {
    fn ready(&self) -> u16 {
        // Poll on an epoll descriptor: readable when a member has events
        // (without consuming edge-triggered or one-shot ones).
        let any = self.members.iter().any(|m| {
            !m.disarmed
                && m.desc.upgrade().is_some_and(|d| desc_ready(&d.borrow()) as u32 & (m.events | EPOLLERR | EPOLLHUP) != 0)
        });
        if any { POLLIN } else { 0 }
    }
    fn stat(&self) -> (u32, u64) {
        (0o600, 0)
    }
    fn name(&self) -> String {
        String::from("anon_inode:[eventpoll]")
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

fn create(s: &mut Server, pid: i32, flags: u64) -> Out {
    if flags & !(O_CLOEXEC as u64) != 0 {
        return Out::Ret(-EINVAL);
    }
    let obj = new_obj(Epoll { members: Vec::new() });
    let d = Description::new(Kind::Object(obj), O_RDWR);
    ret(s.proc(pid).install(Fd { desc: d, cloexec: flags != 0 }, 0))
}

pub fn epoll_create(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] as i32 <= 0 {
        return Out::Ret(-EINVAL);
    }
    create(s, pid, 0)
}

pub fn epoll_create1(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    create(s, pid, c.args[0])
}

pub fn epoll_ctl(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const ADD: u64 = 1;
    const DEL: u64 = 2;
    const MOD: u64 = 3;
    let (epfd, op, fd, evp) = (c.args[0], c.args[1], c.args[2] as i32, s.arg(pid, c, 3));
    let r = (|| {
        let ep = super::io::desc(s, pid, epfd)?;
        let target = super::io::desc(s, pid, fd as u64)?;
        if alloc::rc::Rc::ptr_eq(&ep, &target) {
            return Err(EINVAL);
        }
        if matches!(target.borrow().kind, Kind::File { .. } | Kind::Dir { .. }) {
            return Err(EPERM); // Linux: regular files and directories cannot wait
        }
        let (events, data) = if op == DEL {
            (0, 0)
        } else {
            let mm = &mut s.proc(pid).mm;
            let b = mm.read_vec(evp, 12)?;
            (u32::from_le_bytes(b[0..4].try_into().unwrap()), u64::from_le_bytes(b[4..12].try_into().unwrap()))
        };
        with_obj(s, pid, epfd, EINVAL, |_, e: &mut Epoll, _| {
            e.members.retain(|m| m.desc.strong_count() > 0);
            let at = e.members.iter().position(|m| {
                m.fd == fd && m.desc.upgrade().is_some_and(|d| alloc::rc::Rc::ptr_eq(&d, &target))
            });
            let events = events & !(EPOLLWAKEUP | EPOLLEXCLUSIVE) | EPOLLERR | EPOLLHUP;
            match (op, at) {
                (ADD, Some(_)) => Err(EEXIST),
                (ADD, None) => {
                    let desc = alloc::rc::Rc::downgrade(&target);
                    e.members.push(Member { fd, desc, events, data, disarmed: false, seen: (0, u64::MAX) });
                    Ok(0)
                }
                (MOD, Some(i)) => {
                    let m = &mut e.members[i];
                    (m.events, m.data, m.disarmed, m.seen) = (events, data, false, (0, u64::MAX));
                    Ok(0)
                }
                (DEL, Some(i)) => {
                    e.members.remove(i);
                    Ok(0)
                }
                (MOD | DEL, None) => Err(ENOENT),
                _ => Err(EINVAL),
            }
        })
    })();
    ret(r)
}

/// epoll_wait and its variants once started: deadline in args[5] (0 for
/// ever, u64::MAX no wait), WAITING in args[2] (maxevents).
fn epoll_wait_now(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (epfd, evs, max, deadline) = (c.args[0], c.args[1], (c.args[2] & 0xffff_ffff) as usize, c.args[5]);
    let give_up = deadline == u64::MAX || (deadline != 0 && super::misc::now_ns() >= deadline);
    super::io::looked_at_tty();
    let r = with_obj(s, pid, epfd, EINVAL, |_, e: &mut Epoll, _| Ok(e.due(max, true)));
    match r {
        Ok(due) if due.is_empty() && !give_up => {
            super::io::wait_for(s, pid, deadline);
            Out::Block
        }
        Ok(due) => {
            let mut b = Vec::with_capacity(due.len() * 12);
            for (ev, data) in &due {
                b.extend_from_slice(&ev.to_le_bytes());
                b.extend_from_slice(&data.to_le_bytes());
            }
            ret(s.proc(pid).mm.write(evs, &b).map(|_| due.len() as i64))
        }
        Err(e) => Out::Ret(-e),
    }
}

/// Checks and takes the time-out: `ms` < 0 for ever.
fn epoll_start(s: &mut Server, pid: i32, c: &mut Call, deadline: u64) -> Result<(), i64> {
    let max = c.args[2] as i32;
    if max <= 0 || max > 1 << 20 {
        return Err(EINVAL);
    }
    mem::check_range(c.args[1], max as usize * 12)?;
    with_obj(s, pid, c.args[0], EINVAL, |_, _: &mut Epoll, _| Ok(()))?;
    c.args[5] = deadline;
    c.args[2] |= WAITING;
    Ok(())
}

fn ms_deadline(ms: i32) -> u64 {
    match ms {
        m if m < 0 => 0,
        0 => u64::MAX,
        m => super::misc::now_ns() + m as u64 * 1_000_000,
    }
}

pub fn epoll_wait(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[2] & WAITING == 0 {
        let ms = s.arg(pid, c, 3) as i32;
        if let Err(e) = epoll_start(s, pid, c, ms_deadline(ms)) {
            return Out::Ret(-e);
        }
    }
    epoll_wait_now(s, pid, c)
}

/// epoll_pwait(epfd, events, max, ms, mask, size).
pub fn epoll_pwait(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[2] & WAITING == 0 {
        let ms = s.arg(pid, c, 3) as i32;
        let mask = s.arg(pid, c, 4);
        let size = c.args[5];
        if let Err(e) = epoll_start(s, pid, c, ms_deadline(ms)) {
            return Out::Ret(-e);
        }
        if let Some(out) = start_masked(s, pid, c, mask, size, 2) {
            return out;
        }
    }
    let out = epoll_wait_now(s, pid, c);
    finish_masked(s, pid, out)
}

/// epoll_pwait2(epfd, events, max, timespec, mask, size).
pub fn epoll_pwait2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[2] & WAITING == 0 {
        let ts = s.arg(pid, c, 3);
        let mask = s.arg(pid, c, 4);
        let size = c.args[5];
        let deadline = match deadline_of(s, pid, ts, false) {
            Ok(d) => d,
            Err(e) => return Out::Ret(-e),
        };
        if let Err(e) = epoll_start(s, pid, c, deadline) {
            return Out::Ret(-e);
        }
        if let Some(out) = start_masked(s, pid, c, mask, size, 2) {
            return out;
        }
    }
    let out = epoll_wait_now(s, pid, c);
    finish_masked(s, pid, out)
}
