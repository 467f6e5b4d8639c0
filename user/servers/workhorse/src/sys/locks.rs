//! Advisory file locks: fcntl's record locks (F_GETLK, F_SETLK, F_SETLKW),
//! owned by the process and dropped when it closes any descriptor of the
//! file or ends; the open-file-description locks (F_OFD_*), owned by the
//! description and dropped with it; and flock's whole-file locks, also the
//! description's, which never conflict with record locks.  One table for
//! the server (it is single threaded), by inode.  lockf is glibc's, over
//! fcntl.  A call that must wait (F_SETLKW, flock without LOCK_NB) is tried
//! again as every waiting call is; one that would close a cycle of
//! processes waiting for each other's record locks is refused (EDEADLK).

use super::*;
use crate::process::Blocked;
use crate::linux::errno::EDEADLK;
use crate::linux::fs::{F_RDLCK, F_UNLCK, F_WRLCK, LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN};
pub(crate) use crate::linux::fs::{F_GETLK, F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW, F_SETLK, F_SETLKW};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// A process's record lock (by its pid, the thread group's).
    Proc(i32),
    /// An open file description's record lock (F_OFD_*).
    Desc(usize),
    /// An open file description's flock.
    Flock(usize),
}

#[derive(Clone, Copy)]
struct Lock {
    ino: Ino,
    owner: Owner,
    /// Bytes [start, end); end u64::MAX: to the end of the file, however
    /// far it grows.
    start: u64,
    end: u64,
    write: bool,
}

static mut LOCKS: Vec<Lock> = Vec::new();

#[allow(static_mut_refs)]
fn locks() -> &'static mut Vec<Lock> {
    // SAFETY: single threaded; no reference is kept across calls.
    unsafe { &mut LOCKS }
}


fn is_record(o: Owner) -> bool {
    !matches!(o, Owner::Flock(_))
}

/// The lowest lock of another owner (of the same family: record or
/// flock) that [start, end) conflicts with.
fn conflict(ino: Ino, owner: Owner, start: u64, end: u64, write: bool) -> Option<Lock> {
    locks()
        .iter()
        .filter(|l| {
            l.ino == ino
                && l.owner != owner
                && is_record(l.owner) == is_record(owner)
                && l.start < end
                && start < l.end
                && (l.write || write)
        })
        .min_by_key(|l| l.start)
        .copied()
}

/// Removes `owner`'s locks on [start, end) of `ino` (splitting those that
/// reach past it).
fn remove(ino: Ino, owner: Owner, start: u64, end: u64) {
    let mut kept = Vec::new();
    for l in locks().drain(..) {
        if l.ino != ino || l.owner != owner || l.end <= start || end <= l.start {
            kept.push(l);
            continue;
        }
        if l.start < start {
            kept.push(Lock { end: start, ..l });
        }
        if end < l.end {
            kept.push(Lock { start: end, ..l });
        }
    }
    *locks() = kept;
}

/// Sets `owner`'s lock on [start, end), replacing what it held there and
/// merging with its locks of the same kind that touch it.
fn set(ino: Ino, owner: Owner, mut start: u64, mut end: u64, write: bool) {
    remove(ino, owner, start, end);
    locks().retain(|l| {
        let touches = l.ino == ino && l.owner == owner && l.write == write && l.start <= end && start <= l.end;
        if touches {
            start = start.min(l.start);
            end = end.max(l.end);
        }
        !touches
    });
    locks().push(Lock { ino, owner, start, end, write });
}

/// The process's record locks on `ino` go (it closed a descriptor of it).
pub(crate) fn closed(tgid: i32, ino: Ino) {
    locks().retain(|l| !(l.ino == ino && l.owner == Owner::Proc(tgid)));
}

/// Every record lock of the process goes (it ended).
pub(crate) fn process_ended(tgid: i32) {
    locks().retain(|l| l.owner != Owner::Proc(tgid));
}

/// The description's locks (OFD and flock) go with it.
pub(crate) fn description_dropped(desc: usize) {
    if !locks().is_empty() {
        locks().retain(|l| l.owner != Owner::Desc(desc) && l.owner != Owner::Flock(desc));
    }
}

fn lockable(d: &Description) -> Result<Ino, i64> {
    match d.kind {
        Kind::File { ino } | Kind::Dir { ino } | Kind::Pipe(_, Some(ino)) => Ok(ino),
        _ => Err(EINVAL),
    }
}

/// Whether process `holder` waits (in F_SETLKW) for a lock that `me`
/// holds, directly or through others that wait: granting `me`'s wait
/// would deadlock.
fn waits_for(s: &Server, holder: i32, me: i32, depth: u32) -> bool {
    if holder == me {
        return true;
    }
    if depth > 64 {
        return false;
    }
    for p in s.procs.values().filter(|p| p.tgid == holder) {
        let Some(Blocked::Call(c)) = &p.blocked else { continue };
        if c.nr != 72 || c.args[1] != F_SETLKW {
            continue;
        }
        let Some((ino, start, end, write)) = s.lock_wanted.get(&p.pid).copied() else { continue };
        let mut next = Vec::new();
        for l in locks().iter() {
            if l.ino == ino && is_record(l.owner) && l.owner != Owner::Proc(holder) && l.start < end && start < l.end && (l.write || write) {
                if let Owner::Proc(t) = l.owner {
                    next.push(t);
                }
            }
        }
        if next.into_iter().any(|t| waits_for(s, t, me, depth + 1)) {
            return true;
        }
    }
    false
}

/// fcntl's lock commands on descriptor `fd` (its description `d`), with
/// the struct flock at `arg`.
pub(crate) fn fcntl_lock(s: &mut Server, pid: i32, d: &Desc, cmd: u64, arg: u64) -> Result<i64, i64> {
    let ofd = matches!(cmd, F_OFD_GETLK | F_OFD_SETLK | F_OFD_SETLKW);
    let p = s.proc(pid);
    let tgid = p.tgid;
    let mut fl = [0u8; 32];
    p.mm.read(arg, &mut fl)?;
    let ty = u16::from_le_bytes([fl[0], fl[1]]);
    let whence = u16::from_le_bytes([fl[2], fl[3]]);
    let l_start = i64::from_le_bytes(fl[8..16].try_into().unwrap());
    let l_len = i64::from_le_bytes(fl[16..24].try_into().unwrap());
    let l_pid = i32::from_le_bytes(fl[24..28].try_into().unwrap());
    let (ino, readable, writable, pos) = {
        let b = d.borrow();
        (lockable(&b)?, b.readable(), b.writable(), b.pos)
    };
    if ty > F_UNLCK {
        return Err(EINVAL);
    }
    if ofd && l_pid != 0 {
        return Err(EINVAL);
    }
    let base = match whence {
        0 => 0,
        1 => pos as i64,
        2 => fs().size(ino) as i64,
        _ => return Err(EINVAL),
    };
    let mut start = base.checked_add(l_start).ok_or(EOVERFLOW)?;
    let end = if l_len > 0 {
        (start.checked_add(l_len).ok_or(EOVERFLOW)?) as u64
    } else if l_len == 0 {
        u64::MAX
    } else {
        let e = start;
        start += l_len;
        e as u64
    };
    if start < 0 {
        return Err(EINVAL);
    }
    let start = start as u64;
    let owner = if ofd { Owner::Desc(d.as_ptr() as usize) } else { Owner::Proc(tgid) };
    if matches!(cmd, F_GETLK | F_OFD_GETLK) {
        if ty == F_UNLCK {
            return Err(EINVAL);
        }
        match conflict(ino, owner, start, end, ty == F_WRLCK) {
            Some(l) => {
                fl[0..2].copy_from_slice(&(if l.write { F_WRLCK } else { F_RDLCK }).to_le_bytes());
                fl[2..4].copy_from_slice(&0u16.to_le_bytes());
                fl[8..16].copy_from_slice(&(l.start as i64).to_le_bytes());
                let len = if l.end == u64::MAX { 0 } else { (l.end - l.start) as i64 };
                fl[16..24].copy_from_slice(&len.to_le_bytes());
                let who = if let Owner::Proc(t) = l.owner { t } else { -1 };
                fl[24..28].copy_from_slice(&who.to_le_bytes());
            }
            None => fl[0..2].copy_from_slice(&F_UNLCK.to_le_bytes()),
        }
        s.proc(pid).mm.write(arg, &fl)?;
        return Ok(0);
    }
    match ty {
        F_UNLCK => {
            remove(ino, owner, start, end);
            return Ok(0);
        }
        F_RDLCK if !readable => return Err(EBADF),
        F_WRLCK if !writable => return Err(EBADF),
        _ => {}
    }
    let write = ty == F_WRLCK;
    if let Some(l) = conflict(ino, owner, start, end, write) {
        if matches!(cmd, F_SETLK | F_OFD_SETLK) {
            return Err(EAGAIN);
        }
        if let (Owner::Proc(holder), Owner::Proc(_)) = (l.owner, owner) {
            if waits_for(s, holder, tgid, 0) {
                s.lock_wanted.remove(&pid);
                return Err(EDEADLK);
            }
        }
        s.lock_wanted.insert(pid, (ino, start, end, write));
        return Err(WOULD_BLOCK);
    }
    s.lock_wanted.remove(&pid);
    set(ino, owner, start, end, write);
    Ok(0)
}

/// flock(fd, operation): LOCK_SH, LOCK_EX (with LOCK_NB: EWOULDBLOCK
/// rather than wait), LOCK_UN; the description's lock on the whole file.
pub fn flock(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = super::io::desc(s, pid, c.args[0])?;
        let op = c.args[1];
        let ino = lockable(&d.borrow())?;
        let owner = Owner::Flock(d.as_ptr() as usize);
        match op & !LOCK_NB {
            LOCK_UN => {
                remove(ino, owner, 0, u64::MAX);
                Ok(0)
            }
            LOCK_SH | LOCK_EX => {
                let write = op & !LOCK_NB == LOCK_EX;
                if conflict(ino, owner, 0, u64::MAX, write).is_some() {
                    return Err(if op & LOCK_NB != 0 { EAGAIN } else { WOULD_BLOCK });
                }
                remove(ino, owner, 0, u64::MAX);
                locks().push(Lock { ino, owner, start: 0, end: u64::MAX, write });
                Ok(0)
            }
            _ => Err(EINVAL),
        }
    })();
    ret(r)
}
