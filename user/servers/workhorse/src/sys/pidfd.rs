//! pidfd_open and pidfd_send_signal: a descriptor that names a process.
//! It is readable (poll, select, epoll) once the process has ended, and
//! hangs up too once it has been waited for; waitid(P_PIDFD) waits for it.
//! Pids are never reused by the server, so a pidfd cannot come to name
//! another process.

use alloc::rc::Rc;
use core::cell::Cell;

use super::io::{POLLHUP, POLLIN};
use super::object::{Object, new_obj, with_obj};
use super::*;
use crate::linux::signal::SI_TKILL;

/// A process's state as its pidfds see it (`Proc::pidfd_state`).
pub const RUNNING: u8 = 0;
pub const ENDED: u8 = 1;
pub const REAPED: u8 = 2;

pub struct PidFd {
    pub pid: i32,
    state: Rc<Cell<u8>>,
}

impl PidFd {
    pub fn ended(&self) -> bool {
        self.state.get() != RUNNING
    }
}

impl Object for PidFd {
    fn ready(&self) -> u16 {
        match self.state.get() {
            RUNNING => 0,
            ENDED => POLLIN,
            _ => POLLIN | POLLHUP,
        }
    }
    fn stat(&self) -> (u32, u64) {
        (0o600, 0)
    }
    fn name(&self) -> String {
        String::from("anon_inode:[pidfd]")
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

const PIDFD_NONBLOCK: u64 = O_NONBLOCK as u64;

/// pidfd_open(pid, flags): a close-on-exec descriptor for process `pid`
/// (an ended one not yet waited for too).  EINVAL for flags other than
/// PIDFD_NONBLOCK (PIDFD_THREAD too: there are no thread pidfds) or a pid
/// <= 0; ENOENT for a thread that is not its process's leader; ESRCH for
/// no such process.
pub fn pidfd_open(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (target, flags) = (c.args[0] as i32, c.args[1]);
    if flags & !PIDFD_NONBLOCK != 0 || target <= 0 || c.args[0] > i32::MAX as u64 {
        return Out::Ret(-EINVAL);
    }
    let Some(p) = s.procs.get_mut(&target) else { return Out::Ret(-ESRCH) };
    if p.pid != p.tgid {
        return Out::Ret(-ENOENT);
    }
    let state = p.pidfd_state.get_or_insert_with(|| Rc::new(Cell::new(RUNNING))).clone();
    if p.zombie.is_some() {
        state.set(ENDED);
    }
    let obj = new_obj(PidFd { pid: target, state });
    let d = Description::new(Kind::Object(obj), O_RDWR | (flags as u32 & O_NONBLOCK));
    ret(s.proc(pid).install(Fd { desc: d, cloexec: true }, 0))
}

/// The process a pidfd names and whether it has ended, and its
/// description's O_NONBLOCK (waitid); EBADF for a descriptor that is no
/// pidfd.
pub(crate) fn pidfd_target(s: &mut Server, pid: i32, fd: u64) -> Result<(i32, bool, bool), i64> {
    with_obj::<PidFd, _>(s, pid, fd, EBADF, |_, p, d| Ok((p.pid, p.ended(), d.borrow().flags & O_NONBLOCK != 0)))
}

/// pidfd_send_signal(pidfd, sig, info, flags): as kill to the process, or
/// with PIDFD_SIGNAL_THREAD to its leader thread (tgkill), with
/// PIDFD_SIGNAL_PROCESS_GROUP to its process group (PIDFD_SIGNAL_THREAD_GROUP
/// is the default); more than one of them, or another flag, EINVAL.  A
/// siginfo, when given, must carry the same signal (EINVAL), and one
/// claiming to come from the kernel (si_code >= 0) or tkill may only go to
/// the caller itself (EPERM), as Linux checks; its other fields are not
/// delivered (the handler's siginfo is the server's).  An ended process not
/// yet waited for takes it and nothing happens; ESRCH once waited for.
pub fn pidfd_send_signal(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const THREAD: u64 = 1;
    const GROUP: u64 = 4;
    let (fd, sig, info) = (c.args[0], c.args[1] as i32, c.args[2]);
    let flags = s.arg(pid, c, 3);
    if flags & !7 != 0 || flags.count_ones() > 1 {
        return Out::Ret(-EINVAL);
    }
    let (target, _, _) = match pidfd_target(s, pid, fd) {
        Ok(t) => t,
        Err(e) => return Out::Ret(-e),
    };
    let me = s.proc(pid).tgid;
    if info != 0 {
        let mm = &mut s.proc(pid).mm;
        let (signo, code) = match mm.read_u32(info).and_then(|a| Ok((a, mm.read_u32(info + 8)?))) {
            Ok(v) => v,
            Err(e) => return Out::Ret(-e),
        };
        if signo as i32 != sig {
            return Out::Ret(-EINVAL);
        }
        if (target != me || flags == GROUP) && (code as i32 >= 0 || code as i32 == SI_TKILL) {
            return Out::Ret(-EPERM);
        }
    }
    if c.args[1] > 64 {
        return Out::Ret(-EINVAL);
    }
    match s.procs.get(&target) {
        None => return Out::Ret(-ESRCH),
        Some(p) if p.zombie.is_some() => return Out::Ret(0),
        Some(_) => {}
    }
    if sig == 0 {
        return Out::Ret(0);
    }
    if flags == GROUP {
        let pgid = s.proc(target).pgid;
        c.args[0] = (-pgid) as u64;
        c.args[1] = sig as u64;
        return super::procs::kill(s, pid, c);
    }
    if flags == THREAD {
        if target == pid {
            s.proc(pid).pending |= 1 << (sig - 1);
            return Out::Ret(0);
        }
        s.post(target, sig);
    } else if target == me {
        // Delivered as this call returns.
        s.proc(pid).pending |= 1 << (sig - 1);
        return Out::Ret(0);
    } else {
        s.post_process(target, sig);
    }
    if s.procs.get(&pid).is_some_and(|p| p.keep.is_some()) { Out::Ret(0) } else { Out::Gone }
}
