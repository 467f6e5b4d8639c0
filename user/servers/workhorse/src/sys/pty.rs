//! Pseudo-terminals: each open of /dev/ptmx makes a pair, its master a
//! description of that open, its slave `/dev/pts/N` (opened by path once
//! `TIOCSPTLCK` unlocked it, or with `TIOCGPTPEER`).  The slave side has
//! the console's line discipline (tty.rs: termios, canonical editing,
//! echo, ISIG's signals for its foreground group), its output kept for the
//! master's reads; what the master writes is the slave's input.  A session
//! leader takes a slave as its controlling terminal with `TIOCSCTTY`, or by
//! opening it without `O_NOCTTY` when its session has none; job control
//! (SIGTTIN, SIGTTOU) then works as on the console.

use alloc::collections::VecDeque;
use alloc::rc::{Rc, Weak};
use core::cell::RefCell;
use core::sync::atomic::{AtomicBool, Ordering::Relaxed};

use super::io::{POLLHUP, POLLIN, POLLOUT};
use super::object::{Object, new_obj};
use super::*;
use crate::tty::Tty;
use crate::linux::ioctl::{FIONREAD, TCFLSH, TCGETS, TCSBRK, TCSETS, TCSETSF, TIOCGPGRP, TIOCGPTLCK, TIOCGPTN, TIOCGPTPEER, TIOCGSID, TIOCGWINSZ, TIOCNOTTY, TIOCSCTTY, TIOCSPGRP, TIOCSPTLCK, TIOCSWINSZ};
use crate::linux::signal::SIGWINCH;

/// The ptys' most (a slave's number is below it).
const MAX_PTYS: usize = 64;

pub struct Pty {
    n: u32,
    tty: Tty,
    locked: bool,
    winsize: [u8; 8],
    /// Slave descriptions open now, and whether one ever was.
    slaves: u32,
    slave_opened: bool,
    master_open: bool,
    generation: u64,
}

type PtyRef = Rc<RefCell<Pty>>;

struct Table {
    ptys: Vec<Weak<RefCell<Pty>>>,
    /// Signals not yet posted: posted by `post_signals` before waiting
    /// calls are tried, so that no descriptor is in use while they are.
    signals: VecDeque<Post>,
}

enum Post {
    /// A signal for a process group (ISIG's, SIGWINCH, SIGTTIN/SIGTTOU).
    Group(i32, i32),
    /// A session whose controlling terminal hung up (its master closed),
    /// with its foreground group then: its leader gets SIGHUP and SIGCONT.
    Hangup(i32, i32),
}

static mut TABLE: Option<Table> = None;

#[allow(static_mut_refs)]
fn table() -> &'static mut Table {
    // SAFETY: the server is single threaded; no caller keeps it across a
    // call that takes it again.
    unsafe { TABLE.get_or_insert_with(|| Table { ptys: Vec::new(), signals: VecDeque::new() }) }
}

fn live(n: usize) -> Option<PtyRef> {
    table().ptys.get(n).and_then(|w| w.upgrade())
}

/// The pty whose controlling terminal session `sid` has, if any.
fn ctty_of(sid: i32) -> Option<PtyRef> {
    table().ptys.iter().filter_map(|w| w.upgrade()).find(|p| p.borrow().tty.session == sid && sid != 0)
}

/// Posts the signals the ptys queued (`Table::signals`) to their groups,
/// and a hangup's SIGHUP and SIGCONT to its session's leader (as Linux's
/// hangup of a pty whose master closed: the leader alone, not the
/// foreground group).
#[inline]
pub fn post_signals(s: &mut Server) {
    // One load on every pass of the server loop; the queue only when
    // something was put there.
    if QUEUED.load(Relaxed) {
        QUEUED.store(false, Relaxed);
        post_queued(s);
    }
}

/// Whether `Table::signals` may hold something (set by `queue`).
static QUEUED: AtomicBool = AtomicBool::new(false);

fn queue(p: Post) {
    table().signals.push_back(p);
    QUEUED.store(true, Relaxed);
}

fn post_queued(s: &mut Server) {
    while let Some(post) = table().signals.pop_front() {
        let (pgid, sig) = match post {
            Post::Group(pgid, sig) => (pgid, sig),
            Post::Hangup(sid, fg) => {
                if let Some(p) = s.procs.get_mut(&sid)
                    && p.zombie.is_none()
                    && p.sid == sid
                    && p.tgid == sid
                {
                    p.hup_pgrp = fg;
                    s.post_process(sid, process::SIGHUP);
                    s.post_process(sid, process::SIGCONT);
                }
                continue;
            }
        };
        let group: Vec<i32> =
            s.procs.values().filter(|p| p.pgid == pgid && p.pid == p.tgid && p.zombie.is_none()).map(|p| p.pid).collect();
        for p in group {
            s.post_process(p, sig);
        }
    }
}

/// The end of session leader `sid` (after its descriptors closed), as
/// Linux's: a pty that is its controlling terminal is the session's no
/// more and its foreground group gets SIGHUP; a leader whose terminal
/// hung up sends that terminal's foreground group then SIGHUP and SIGCONT.
pub fn leader_ended(s: &mut Server, sid: i32) {
    let mut old = s.procs.get(&sid).map_or(0, |p| p.hup_pgrp);
    // A hangup its own end made (it held the master) is not posted yet.
    let t = table();
    if let Some(i) = t.signals.iter().position(|h| matches!(h, Post::Hangup(s, _) if *s == sid)) {
        if let Some(Post::Hangup(_, fg)) = t.signals.remove(i) {
            old = fg;
        }
    }
    let group = |s: &Server, g: i32| -> Vec<i32> {
        s.procs.values().filter(|p| p.pgid == g && g != 0 && p.pid == p.tgid && p.zombie.is_none()).map(|p| p.pid).collect()
    };
    if let Some(pty) = ctty_of(sid) {
        let fg = {
            let mut p = pty.borrow_mut();
            p.tty.session = 0;
            p.generation += 1;
            core::mem::take(&mut p.tty.fg_pgrp)
        };
        for m in group(s, fg) {
            s.post_process(m, process::SIGHUP);
        }
    } else if old != 0 {
        let members = group(s, old);
        for &m in &members {
            s.post_process(m, process::SIGHUP);
        }
        for &m in &members {
            s.post_process(m, process::SIGCONT);
        }
    }
}

pub struct Master(PtyRef);
pub struct Slave(PtyRef);

impl Drop for Master {
    /// The master's last close hangs the slave up: its session (if it is
    /// one's controlling terminal) loses it, and the leader is signalled.
    fn drop(&mut self) {
        let mut p = self.0.borrow_mut();
        p.master_open = false;
        p.generation += 1;
        let sid = core::mem::take(&mut p.tty.session);
        let fg = core::mem::take(&mut p.tty.fg_pgrp);
        if sid != 0 {
            queue(Post::Hangup(sid, fg));
        }
    }
}

impl Drop for Slave {
    fn drop(&mut self) {
        let mut p = self.0.borrow_mut();
        p.slaves -= 1;
        p.generation += 1;
    }
}

impl Object for Master {
    fn read(&mut self, _: &mut Server, _: i32, max: usize) -> Result<Vec<u8>, i64> {
        let mut p = self.0.borrow_mut();
        let hung_up = p.slave_opened && p.slaves == 0;
        let q = p.tty.out.as_mut().unwrap();
        if q.is_empty() {
            // As Linux: EIO once every slave has closed.
            return Err(if hung_up { EIO } else { WOULD_BLOCK });
        }
        let n = max.min(q.len());
        let v: Vec<u8> = q.drain(..n).collect();
        p.generation += 1;
        Ok(v)
    }
    fn write(&mut self, _: &mut Server, _: i32, data: &[u8]) -> Result<usize, i64> {
        let mut p = self.0.borrow_mut();
        for &b in data {
            p.tty.input(b);
        }
        let fg = p.tty.fg_pgrp;
        while let Some(sig) = p.tty.take_signal() {
            if fg != 0 {
                queue(Post::Group(fg, sig));
            }
        }
        p.generation += 1;
        Ok(data.len())
    }
    fn ready(&self) -> u16 {
        let p = self.0.borrow();
        let mut r = POLLOUT;
        if !p.tty.out.as_ref().unwrap().is_empty() {
            r |= POLLIN;
        }
        if p.slave_opened && p.slaves == 0 {
            r |= POLLIN | POLLHUP;
        }
        r
    }
    fn generation(&self) -> u64 {
        self.0.borrow().generation
    }
    fn stat(&self) -> (u32, u64) {
        (0o020666, makedev(5, 2))
    }
    fn name(&self) -> String {
        String::from("/dev/ptmx")
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

impl Object for Slave {
    fn read(&mut self, _: &mut Server, _: i32, max: usize) -> Result<Vec<u8>, i64> {
        let mut p = self.0.borrow_mut();
        let mut b = alloc::vec![0u8; max];
        match p.tty.read(&mut b) {
            Some(n) => {
                b.truncate(n);
                p.generation += 1;
                Ok(b)
            }
            // The master closed: end of input.
            None if !p.master_open => Ok(Vec::new()),
            None => Err(WOULD_BLOCK),
        }
    }
    fn write(&mut self, _: &mut Server, _: i32, data: &[u8]) -> Result<usize, i64> {
        let mut p = self.0.borrow_mut();
        if !p.master_open {
            return Err(EIO);
        }
        p.tty.write(data);
        p.generation += 1;
        Ok(data.len())
    }
    fn ready(&self) -> u16 {
        let p = self.0.borrow();
        let mut r = POLLOUT;
        if p.tty.has_input() {
            r |= POLLIN;
        }
        if !p.master_open {
            r |= POLLIN | POLLHUP;
        }
        r
    }
    fn generation(&self) -> u64 {
        self.0.borrow().generation
    }
    fn stat(&self) -> (u32, u64) {
        (0o020620, makedev(136, self.0.borrow().n as u64))
    }
    fn name(&self) -> String {
        alloc::format!("/dev/pts/{}", self.0.borrow().n)
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

/// A new slave description of `pty` (EIO while locked or without a
/// master); without `O_NOCTTY` a session leader whose session has no
/// controlling terminal takes it as its own.
fn open_slave(s: &mut Server, pid: i32, pty: &PtyRef, flags: u32) -> Result<Desc, i64> {
    {
        let mut p = pty.borrow_mut();
        if p.locked || !p.master_open {
            return Err(EIO);
        }
        p.slaves += 1;
        p.slave_opened = true;
        p.generation += 1;
    }
    if flags & O_NOCTTY == 0 {
        let (sid, pgid, leader) = {
            let p = s.proc(pid);
            (p.sid, p.pgid, p.sid == p.tgid)
        };
        if leader && tty().session != sid && ctty_of(sid).is_none() && pty.borrow().tty.session == 0 {
            let mut p = pty.borrow_mut();
            p.tty.session = sid;
            p.tty.fg_pgrp = pgid;
        }
    }
    Ok(Description::new(Kind::Object(new_obj(Slave(pty.clone()))), flags & (O_ACCMODE | O_NONBLOCK)))
}

/// open of /dev/ptmx, /dev/pts/N, or /dev/tty when the caller's
/// controlling terminal is a pty; None for other paths.
pub(crate) fn open(s: &mut Server, pid: i32, path: &str, flags: u32) -> Option<Result<Desc, i64>> {
    if path == "/dev/ptmx" {
        let t = table();
        let n = match t.ptys.iter().position(|w| w.upgrade().is_none()) {
            Some(n) => n,
            None if t.ptys.len() < MAX_PTYS => {
                t.ptys.push(Weak::new());
                t.ptys.len() - 1
            }
            None => return Some(Err(ENOSPC)),
        };
        let pty = Rc::new(RefCell::new(Pty {
            n: n as u32,
            tty: Tty::for_pty(),
            locked: true,
            winsize: [0; 8],
            slaves: 0,
            slave_opened: false,
            master_open: true,
            generation: 0,
        }));
        t.ptys[n] = Rc::downgrade(&pty);
        return Some(Ok(Description::new(Kind::Object(new_obj(Master(pty))), flags & (O_ACCMODE | O_NONBLOCK))));
    }
    if path == "/dev/tty" {
        let sid = s.proc(pid).sid;
        let pty = ctty_of(sid)?;
        return Some(open_slave(s, pid, &pty, flags | O_NOCTTY));
    }
    let n: usize = path.strip_prefix("/dev/pts/")?.parse().ok()?;
    Some(match live(n) {
        Some(pty) => open_slave(s, pid, &pty, flags),
        None => Err(ENOENT),
    })
}

/// The inode number fstat gives an object's descriptor (files.rs): a path's
/// stat says the same, as ttyname compares them.
const OBJECT_INO: u64 = 5;

/// stat of /dev/ptmx or /dev/pts/N (a live pty's), None for other paths.
pub(crate) fn stat(path: &str) -> Option<Result<[u8; Stat::BYTES], i64>> {
    if path == "/dev/ptmx" {
        return Some(Ok(Stat::new(0o020666, OBJECT_INO, 1, 0, makedev(5, 2)).to_bytes()));
    }
    let n: usize = path.strip_prefix("/dev/pts/")?.parse().ok()?;
    Some(match live(n) {
        Some(_) => Ok(Stat::new(0o020620, OBJECT_INO, 1, 0, makedev(136, n as u64)).to_bytes()),
        None => Err(ENOENT),
    })
}

/// The pty of a description, and whether it is the master side.
fn pty_of(d: &Desc) -> Option<(PtyRef, bool)> {
    let Kind::Object(o) = &d.borrow().kind else { return None };
    let mut o = o.borrow_mut();
    let any = o.as_any();
    if let Some(m) = any.downcast_mut::<Master>() {
        return Some((m.0.clone(), true));
    }
    any.downcast_mut::<Slave>().map(|sl| (sl.0.clone(), false))
}

/// Job control for a read (SIGTTIN) or write (SIGTTOU, with TOSTOP) of a
/// slave, before its description is in use (io.rs).
pub(crate) fn job_control(s: &mut Server, pid: i32, d: &Desc, write: bool) -> Result<(), i64> {
    let Some((pty, false)) = pty_of(d) else { return Ok(()) };
    let (session, fg, tostop) = {
        let p = pty.borrow();
        (p.tty.session, p.tty.fg_pgrp, p.tty.termios.lflag & crate::tty::TOSTOP != 0)
    };
    if write && !tostop {
        return Ok(());
    }
    let sig = if write { process::SIGTTOU } else { process::SIGTTIN };
    super::io::job_control_of(s, pid, sig, session, fg)
}

/// A pty's ioctls (None: not a pty, or a request for io.rs).
pub(crate) fn ioctl(s: &mut Server, pid: i32, d: &Desc, req: u64, arg: u64) -> Option<Result<i64, i64>> {
    let (pty, master) = pty_of(d)?;
    let (sid, pgid, tgid) = {
        let p = s.proc(pid);
        (p.sid, p.pgid, p.tgid)
    };
    let session = pty.borrow().tty.session;
    let mine = session != 0 && session == sid;
    let r = (|| {
        match req {
            TCGETS => {
                let b = pty.borrow().tty.termios.to_bytes();
                s.proc(pid).mm.write(arg, &b)?;
            }
            TCSETS..=TCSETSF => {
                if !master {
                    let fg = pty.borrow().tty.fg_pgrp;
                    super::io::job_control_of(s, pid, process::SIGTTOU, session, fg)?;
                }
                let mut b = [0u8; 36];
                s.proc(pid).mm.read(arg, &mut b)?;
                pty.borrow_mut().tty.set_termios(Termios::from_bytes(&b), req == TCSETSF);
            }
            TCSBRK => {}
            TCFLSH => {
                if arg > 2 {
                    return Err(EINVAL);
                }
                let mut p = pty.borrow_mut();
                if arg != 1 {
                    let t = p.tty.termios;
                    p.tty.set_termios(t, true);
                }
                if arg != 0 {
                    p.tty.out.as_mut().unwrap().clear();
                }
            }
            TIOCGWINSZ => {
                let w = pty.borrow().winsize;
                s.proc(pid).mm.write(arg, &w)?;
            }
            TIOCSWINSZ => {
                let mut w = [0u8; 8];
                s.proc(pid).mm.read(arg, &mut w)?;
                let mut p = pty.borrow_mut();
                if p.winsize != w {
                    p.winsize = w;
                    if p.tty.fg_pgrp != 0 {
                        queue(Post::Group(p.tty.fg_pgrp, SIGWINCH));
                    }
                }
            }
            FIONREAD => {
                let p = pty.borrow();
                let n = if master { p.tty.out.as_ref().unwrap().len() } else { p.tty.pending() };
                drop(p);
                s.proc(pid).mm.write_u32(arg, n as u32)?;
            }
            TIOCGPGRP => {
                if !master && !mine {
                    return Err(ENOTTY);
                }
                let fg = pty.borrow().tty.fg_pgrp;
                s.proc(pid).mm.write_u32(arg, fg as u32)?;
            }
            TIOCSPGRP => {
                if master || !mine {
                    return Err(ENOTTY);
                }
                let fg = pty.borrow().tty.fg_pgrp;
                super::io::job_control_of(s, pid, process::SIGTTOU, session, fg)?;
                let g = s.proc(pid).mm.read_u32(arg)? as i32;
                if g <= 0 {
                    return Err(EINVAL);
                }
                if !s.procs.values().any(|p| p.pgid == g && p.sid == sid && p.zombie.is_none()) {
                    return Err(EPERM);
                }
                pty.borrow_mut().tty.fg_pgrp = g;
            }
            TIOCSCTTY => {
                // A session leader without a controlling terminal, and a
                // terminal that is no other live session's.
                if mine {
                    return Ok(0);
                }
                let taken = session != 0 && s.procs.get(&session).is_some_and(|p| p.zombie.is_none());
                if sid != tgid || tty().session == sid || ctty_of(sid).is_some() || taken {
                    return Err(EPERM);
                }
                let mut p = pty.borrow_mut();
                p.tty.session = sid;
                p.tty.fg_pgrp = pgid;
            }
            TIOCNOTTY => {
                if !mine {
                    return Err(ENOTTY);
                }
                if sid == tgid {
                    let mut p = pty.borrow_mut();
                    p.tty.session = 0;
                    p.tty.fg_pgrp = 0;
                }
            }
            TIOCGSID => {
                if !mine {
                    return Err(ENOTTY);
                }
                s.proc(pid).mm.write_u32(arg, session as u32)?;
            }
            TIOCGPTN if master => {
                let n = pty.borrow().n;
                s.proc(pid).mm.write_u32(arg, n)?;
            }
            TIOCSPTLCK if master => {
                let v = s.proc(pid).mm.read_u32(arg)?;
                pty.borrow_mut().locked = v != 0;
            }
            TIOCGPTLCK if master => {
                let v = pty.borrow().locked as u32;
                s.proc(pid).mm.write_u32(arg, v)?;
            }
            TIOCGPTPEER if master => {
                let flags = arg as u32;
                if flags & !(O_ACCMODE | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) != 0 {
                    return Err(EINVAL);
                }
                let desc = open_slave(s, pid, &pty, flags)?;
                return s.proc(pid).install(Fd { desc, cloexec: flags & O_CLOEXEC != 0 }, 0);
            }
            TIOCGPTN | TIOCSPTLCK | TIOCGPTLCK | TIOCGPTPEER => return Err(ENOTTY),
            _ => return Err(ENOTTY),
        }
        Ok(0)
    })();
    Some(r)
}
