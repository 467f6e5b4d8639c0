//! Reading and writing: descriptors, pipes, the terminal's ioctls, poll.

use super::*;
use crate::linux::fs::{F_DUPFD, F_DUPFD_CLOEXEC, F_GETFD, F_GETFL, F_GETPIPE_SZ, F_SETFD, F_SETFL, F_SETPIPE_SZ};
use crate::linux::ioctl::{FIOCLEX, FIONBIO, FIONCLEX, FIONREAD, TCGETS, TCSETS, TCSETSF, TIOCGPGRP, TIOCGWINSZ, TIOCSPGRP};
pub(crate) use crate::linux::poll::{POLLERR, POLLHUP, POLLIN, POLLNVAL, POLLOUT};

/// Reads at most `max` bytes from a description (at `at` when given,
/// else at and past its position).
pub(crate) fn read_desc(s: &mut Server, pid: i32, d: &Desc, max: usize, at: Option<u64>) -> Result<Vec<u8>, i64> {
    let mut out = alloc::vec![0u8; max.min(IO_CHUNK)];
    if matches!(d.borrow().kind, Kind::Console) && d.borrow().readable() {
        job_control(s, pid, process::SIGTTIN)?;
    }
    if matches!(d.borrow().kind, Kind::Object(_)) && d.borrow().readable() {
        super::pty::job_control(s, pid, d, false)?;
    }
    let mut desc = d.borrow_mut();
    if !desc.readable() {
        return Err(EBADF);
    }
    let nonblock = desc.flags & O_NONBLOCK != 0;
    let n = match &desc.kind {
        Kind::Console => match tty().read(&mut out) {
            Some(n) => n,
            None if nonblock => return Err(EAGAIN),
            None => {
                s.proc(pid).waits_tty = true;
                return Err(WOULD_BLOCK);
            }
        },
        Kind::File { ino } => {
            let ino = *ino;
            let pos = at.unwrap_or(desc.pos);
            let n = fs().read(ino, pos, &mut out)?;
            if at.is_none() {
                desc.pos += n as u64;
            }
            n
        }
        Kind::Dir { .. } => return Err(EISDIR),
        Kind::Pipe(pipe, _) => {
            if at.is_some() {
                return Err(ESPIPE);
            }
            let mut pipe = pipe.borrow_mut();
            if pipe.buf.is_empty() {
                if pipe.writers == 0 {
                    0
                } else if nonblock {
                    return Err(EAGAIN);
                } else {
                    return Err(WOULD_BLOCK);
                }
            } else {
                let n = out.len().min(pipe.buf.len());
                for (i, b) in pipe.buf.drain(..n).enumerate() {
                    out[i] = b;
                }
                pipe.generation += 1;
                n
            }
        }
        Kind::Null => 0,
        Kind::Object(o) => {
            let o = o.clone();
            drop(desc);
            let r = o.borrow_mut().read(s, pid, out.len());
            return match r {
                Err(WOULD_BLOCK) if nonblock => Err(EAGAIN),
                r => r,
            };
        }
        Kind::Generated(bytes) => {
            let pos = at.unwrap_or(desc.pos) as usize;
            let n = bytes.len().saturating_sub(pos).min(out.len());
            out[..n].copy_from_slice(&bytes[pos..pos + n]);
            if at.is_none() {
                desc.pos += n as u64;
            }
            n
        }
    };
    out.truncate(n);
    Ok(out)
}

/// Writes to a description; returns the bytes taken.
pub(crate) fn write_desc(s: &mut Server, pid: i32, d: &Desc, data: &[u8], at: Option<u64>) -> Result<usize, i64> {
    if matches!(d.borrow().kind, Kind::Console) && tty().termios.lflag & crate::tty::TOSTOP != 0 {
        job_control(s, pid, process::SIGTTOU)?;
    }
    if matches!(d.borrow().kind, Kind::Object(_)) && d.borrow().writable() {
        super::pty::job_control(s, pid, d, true)?;
    }
    let mut desc = d.borrow_mut();
    if !desc.writable() {
        return Err(EBADF);
    }
    let nonblock = desc.flags & O_NONBLOCK != 0;
    match &desc.kind {
        Kind::Console => {
            tty().write(data);
            Ok(data.len())
        }
        Kind::File { ino } => {
            let ino = *ino;
            let pos = match at {
                Some(a) => a,
                None if desc.flags & O_APPEND != 0 => fs().size(ino),
                None => desc.pos,
            };
            let n = fs().write(ino, pos, data)?;
            if at.is_none() {
                desc.pos = pos + n as u64;
            }
            Ok(n)
        }
        Kind::Dir { .. } => Err(EISDIR),
        Kind::Pipe(pipe, _) => {
            if at.is_some() {
                return Err(ESPIPE);
            }
            let mut pipe = pipe.borrow_mut();
            if pipe.readers == 0 {
                drop(pipe);
                drop(desc);
                // SIGPIPE, delivered as the call returns EPIPE (its default
                // action ends the writer).
                s.proc(pid).pending |= 1 << (13 - 1);
                return Err(EPIPE);
            }
            let room = pipe.room();
            if room == 0 {
                return Err(if nonblock { EAGAIN } else { WOULD_BLOCK });
            }
            let n = room.min(data.len());
            pipe.buf.extend(&data[..n]);
            pipe.generation += 1;
            Ok(n)
        }
        Kind::Generated(_) => Err(EBADF),
        Kind::Null => Ok(data.len()),
        Kind::Object(o) => {
            let o = o.clone();
            drop(desc);
            let r = o.borrow_mut().write(s, pid, data);
            match r {
                Err(WOULD_BLOCK) if nonblock => Err(EAGAIN),
                r => r,
            }
        }
    }
}

pub(crate) fn write_out(r: Result<usize, i64>) -> Out {
    ret(r.map(|n| n as i64))
}

pub(crate) fn desc(s: &mut Server, pid: i32, fd: u64) -> Result<Desc, i64> {
    Ok(s.proc(pid).fd(fd)?.desc.clone())
}

/// Linux's largest read or write (MAX_RW_COUNT).
const MAX_RW: u64 = 0x7fff_f000;

/// A description whose reads and writes are never short on Linux (a
/// regular file, /dev/null, /dev/zero...): one call moves everything asked
/// for (dd bs=1M counts a short one as a partial record), in IO_CHUNK
/// pieces; pipes, sockets and the terminal move what is there.
fn whole(d: &Desc) -> bool {
    match &d.borrow().kind {
        Kind::File { .. } | Kind::Null | Kind::Generated(_) => true,
        Kind::Object(o) => o.borrow().whole(),
        _ => false,
    }
}

pub(crate) fn do_read(s: &mut Server, pid: i32, fd: u64, buf: u64, count: u64, at: Option<u64>) -> Result<i64, i64> {
    let d = desc(s, pid, fd)?;
    let count = count.min(MAX_RW);
    mem::check_range(buf, count as usize)?;
    let all = whole(&d);
    let mut done = 0u64;
    loop {
        let want = (count - done).min(IO_CHUNK as u64);
        let r = read_desc(s, pid, &d, want as usize, at.map(|a| a + done))
            .and_then(|data| s.proc(pid).mm.write(buf + done, &data).map(|_| data.len() as u64));
        let n = match r {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break, // what was read is reported; the error comes next time
        };
        done += n;
        if !all || n < want || done == count {
            break;
        }
    }
    Ok(done as i64)
}

pub(crate) fn do_write(s: &mut Server, pid: i32, fd: u64, buf: u64, count: u64, at: Option<u64>) -> Result<usize, i64> {
    let d = desc(s, pid, fd)?;
    let count = count.min(MAX_RW);
    let all = whole(&d);
    let mut done = 0u64;
    loop {
        let want = (count - done).min(IO_CHUNK as u64);
        let r = s
            .proc(pid)
            .mm
            .read_vec(buf + done, want as usize)
            .and_then(|data| write_desc(s, pid, &d, &data, at.map(|a| a + done)));
        let n = match r {
            Ok(n) => n as u64,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += n;
        if !all || n < want || done == count {
            break;
        }
    }
    Ok(done as usize)
}

pub fn read(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(do_read(s, pid, c.args[0], c.args[1], c.args[2], None))
}

pub fn write(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    write_out(do_write(s, pid, c.args[0], c.args[1], c.args[2], None))
}

pub fn pread64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let off = s.arg(pid, c, 3);
    ret(do_read(s, pid, c.args[0], c.args[1], c.args[2], Some(off)))
}

pub fn pwrite64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let off = s.arg(pid, c, 3);
    write_out(do_write(s, pid, c.args[0], c.args[1], c.args[2], Some(off)))
}

pub(crate) fn iovecs(s: &mut Server, pid: i32, iov: u64, n: u64) -> Result<Vec<(u64, u64)>, i64> {
    if n > 1024 {
        return Err(EINVAL);
    }
    let mm = &mut s.proc(pid).mm;
    let mut v = Vec::new();
    for i in 0..n {
        let base = mm.read_u64(iov + i * 16)?;
        let len = mm.read_u64(iov + i * 16 + 8)?;
        v.push((base, len));
    }
    Ok(v)
}

pub fn writev(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let mut data = Vec::new();
        for (base, len) in iovecs(s, pid, c.args[1], c.args[2])? {
            let take = (len as usize).min(IO_CHUNK - data.len());
            data.extend(s.proc(pid).mm.read_vec(base, take)?);
        }
        write_desc(s, pid, &d, &data, None)
    })();
    write_out(r)
}

pub fn readv(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let v = iovecs(s, pid, c.args[1], c.args[2])?;
        let total: u64 = v.iter().map(|x| x.1).sum();
        let data = read_desc(s, pid, &d, total as usize, None)?;
        let mut done = 0;
        for (base, len) in v {
            let n = (len as usize).min(data.len() - done);
            s.proc(pid).mm.write(base, &data[done..done + n])?;
            done += n;
        }
        Ok(data.len() as i64)
    })();
    ret(r)
}

pub fn sendfile(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let count = s.arg(pid, c, 3);
    let (out_fd, in_fd, offp) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let out = desc(s, pid, out_fd)?;
        let inp = desc(s, pid, in_fd)?;
        let mut n = (count as usize).min(IO_CHUNK);
        // Never take more than the output can take now.
        if let Kind::Pipe(p, _) = &out.borrow().kind {
            n = n.min(p.borrow().room());
            if n == 0 && count > 0 {
                return Err(WOULD_BLOCK);
            }
        }
        let at = if offp != 0 { Some(s.proc(pid).mm.read_u64(offp)?) } else { None };
        if at.is_some_and(|a| (a as i64) < 0) {
            return Err(EINVAL);
        }
        let data = read_desc(s, pid, &inp, n, at)?;
        let w = write_desc(s, pid, &out, &data, None)?;
        if let Some(a) = at {
            s.proc(pid).mm.write_u64(offp, a + w as u64)?;
        }
        Ok(w)
    })();
    write_out(r)
}

pub fn lseek(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let mut d = d.borrow_mut();
        let size = match &d.kind {
            // Linux's /dev/null: every seek is to 0.
            Kind::Null => {
                d.pos = 0;
                return Ok(0);
            }
            Kind::File { ino } | Kind::Dir { ino } => fs().size(*ino) as i64,
            Kind::Generated(b) => b.len() as i64,
            _ => return Err(ESPIPE),
        };
        let base = match c.args[2] {
            0 => 0,
            1 => d.pos as i64,
            2 => size,
            _ => return Err(EINVAL),
        };
        let new = base.checked_add(c.args[1] as i64).ok_or(EINVAL)?;
        if new < 0 {
            return Err(EINVAL);
        }
        d.pos = new as u64;
        Ok(new)
    })();
    ret(r)
}


pub fn close(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let tgid = p.tgid;
    ret(match p.fds.get_mut(c.args[0] as usize) {
        Some(slot @ Some(_)) => {
            // The process's record locks on the file go with any of its
            // descriptors of it (POSIX).
            if let Some(Fd { desc, .. }) = slot.take()
                && let Kind::File { ino } = desc.borrow().kind
            {
                super::locks::closed(tgid, ino);
            }
            Ok(0)
        }
        _ => Err(EBADF),
    })
}

pub fn close_range(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const CLOSE_RANGE_UNSHARE: u64 = 2;
    const CLOSE_RANGE_CLOEXEC: u64 = 4;
    let (first, last, flags) = (c.args[0] as u32 as usize, c.args[1] as u32 as usize, c.args[2]);
    if first > last || flags & !(CLOSE_RANGE_UNSHARE | CLOSE_RANGE_CLOEXEC) != 0 {
        return Out::Ret(-EINVAL);
    }
    let p = s.proc(pid);
    if flags & CLOSE_RANGE_UNSHARE != 0 && !p.fds.is_unique() {
        // A table of its own (as unshare(CLONE_FILES)) before closing.
        p.fds = crate::shared::Shared::new((*p.fds).clone());
    }
    let end = last.saturating_add(1).min(p.fds.len());
    for slot in p.fds.iter_mut().take(end).skip(first) {
        if flags & CLOSE_RANGE_CLOEXEC != 0 {
            if let Some(f) = slot {
                f.cloexec = true;
            }
        } else {
            *slot = None;
        }
    }
    Out::Ret(0)
}

pub fn dup(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    ret(p.fd(c.args[0]).cloned().and_then(|f| p.install(Fd { desc: f.desc, cloexec: false }, 0)))
}

pub(crate) fn dup_to(s: &mut Server, pid: i32, old: u64, new: u64, cloexec: bool) -> Result<i64, i64> {
    let p = s.proc(pid);
    let f = p.fd(old)?.clone();
    if new >= 1024 {
        return Err(EBADF);
    }
    let new = new as usize;
    if p.fds.len() <= new {
        p.fds.resize(new + 1, None);
    }
    p.fds[new] = Some(Fd { desc: f.desc, cloexec });
    Ok(new as i64)
}

pub fn dup2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] == c.args[1] {
        let p = s.proc(pid);
        return ret(p.fd(c.args[0]).map(|_| c.args[1] as i64));
    }
    ret(dup_to(s, pid, c.args[0], c.args[1], false))
}

pub fn dup3(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] == c.args[1] || c.args[2] as u32 & !O_CLOEXEC != 0 {
        return Out::Ret(-EINVAL);
    }
    ret(dup_to(s, pid, c.args[0], c.args[1], c.args[2] as u32 & O_CLOEXEC != 0))
}

pub fn fcntl(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let (fd, cmd, arg) = (c.args[0], c.args[1], c.args[2]);
    let f = match p.fd(fd) {
        Ok(f) => f.clone(),
        Err(e) => return Out::Ret(-e),
    };
    ret(match cmd {
        F_DUPFD | F_DUPFD_CLOEXEC => {
            p.install(Fd { desc: f.desc, cloexec: cmd == F_DUPFD_CLOEXEC }, arg as usize)
        }
        F_GETFD => Ok(f.cloexec as i64),
        F_SETFD => {
            p.fds[fd as usize].as_mut().unwrap().cloexec = arg & 1 != 0;
            Ok(0)
        }
        F_GETFL => Ok(f.desc.borrow().flags as i64),
        super::locks::F_GETLK..=super::locks::F_SETLKW | super::locks::F_OFD_GETLK..=super::locks::F_OFD_SETLKW => {
            super::locks::fcntl_lock(s, pid, &f.desc, cmd, arg)
        }
        F_GETPIPE_SZ | F_SETPIPE_SZ => match &f.desc.borrow().kind {
            Kind::Pipe(pipe, _) if cmd == F_GETPIPE_SZ => Ok(pipe.borrow().size as i64),
            Kind::Pipe(pipe, _) => pipe.borrow_mut().resize(arg).map(|n| n as i64),
            _ => Err(EBADF),
        },
        F_SETFL => {
            let mut d = f.desc.borrow_mut();
            d.flags = (d.flags & !(O_APPEND | O_NONBLOCK)) | (arg as u32 & (O_APPEND | O_NONBLOCK));
            Ok(0)
        }
        _ => Err(EINVAL),
    })
}

pub(crate) fn make_pipe(s: &mut Server, pid: i32, fds: u64, flags: u64) -> Result<i64, i64> {
    let flags = flags as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(EINVAL);
    }
    mem::check_range(fds, 8)?;
    let pipe = alloc::rc::Rc::new(core::cell::RefCell::new(Pipe::new()));
    let nb = flags & O_NONBLOCK;
    let r = Description::new(Kind::Pipe(pipe.clone(), None), O_RDONLY | nb);
    let w = Description::new(Kind::Pipe(pipe, None), O_WRONLY | nb);
    let cloexec = flags & O_CLOEXEC != 0;
    let p = s.proc(pid);
    let rfd = p.install(Fd { desc: r, cloexec }, 0)?;
    let wfd = match p.install(Fd { desc: w, cloexec }, 0) {
        Ok(n) => n,
        Err(e) => {
            p.fds[rfd as usize] = None;
            return Err(e);
        }
    };
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(rfd as i32).to_le_bytes());
    b[4..].copy_from_slice(&(wfd as i32).to_le_bytes());
    if let Err(e) = p.mm.write(fds, &b) {
        p.fds[rfd as usize] = None;
        p.fds[wfd as usize] = None;
        return Err(e);
    }
    Ok(0)
}

pub fn pipe(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(make_pipe(s, pid, c.args[0], 0))
}

pub fn pipe2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(make_pipe(s, pid, c.args[0], c.args[1]))
}

pub fn ioctl(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    // Any descriptor's (Python's socket.setblocking uses FIONBIO).
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let (req, arg) = (c.args[1], c.args[2]);
        match req {
            FIONBIO => {
                let on = s.proc(pid).mm.read_u32(arg)? != 0;
                let mut d = d.borrow_mut();
                d.flags = if on { d.flags | O_NONBLOCK } else { d.flags & !O_NONBLOCK };
                return Ok(0);
            }
            FIOCLEX | FIONCLEX => {
                let p = s.proc(pid);
                p.fds[c.args[0] as usize].as_mut().unwrap().cloexec = req == FIOCLEX;
                return Ok(0);
            }
            _ if let Some(r) = super::pty::ioctl(s, pid, &d, req, arg) => return r,
            FIONREAD => {
                let n = match &d.borrow().kind {
                    Kind::Pipe(p, _) => p.borrow().buf.len(),
                    Kind::Console => tty().pending(),
                    _ => return Err(ENOTTY),
                };
                s.proc(pid).mm.write_u32(arg, n as u32)?;
                return Ok(0);
            }
            _ => {}
        }
        if !matches!(d.borrow().kind, Kind::Console) {
            return Err(ENOTTY);
        }
        // Changing the terminal from a background group: SIGTTOU (as
        // Linux's tty_check_change).
        if matches!(req, TCSETS..=TCSETSF | TIOCSPGRP) {
            job_control(s, pid, process::SIGTTOU)?;
        }
        let p = s.proc(pid);
        match req {
            TCGETS => p.mm.write(arg, &tty().termios.to_bytes())?,
            TCSETS..=TCSETSF => {
                let mut b = [0u8; 36];
                p.mm.read(arg, &mut b)?;
                tty().set_termios(Termios::from_bytes(&b), req == TCSETSF);
            }
            TIOCGWINSZ => p.mm.write(arg, &[24, 0, 80, 0, 0, 0, 0, 0])?,
            TIOCGPGRP => p.mm.write_u32(arg, tty().fg_pgrp as u32)?,
            TIOCSPGRP => {
                let mut b = [0u8; 4];
                p.mm.read(arg, &mut b)?;
                tty().fg_pgrp = i32::from_le_bytes(b);
            }
            _ => return Err(ENOTTY),
        }
        Ok(0)
    })();
    ret(r)
}


/// Job control on the terminal, as Linux's `__tty_check_change`: a process
/// of the terminal's session (its controlling terminal) outside the
/// foreground group that reads (`sig` SIGTTIN), or writes with TOSTOP or
/// changes the settings or the foreground group (SIGTTOU), sends `sig` to
/// its group and waits (WOULD_BLOCK: the call is tried again once
/// continued, or is interrupted by the signal's handler).  EIO for an
/// orphaned group and for SIGTTIN ignored or blocked; SIGTTOU ignored or
/// blocked lets the call go on.
pub(crate) fn job_control(s: &mut Server, pid: i32, sig: i32) -> Result<(), i64> {
    let (session, fg) = (tty().session, tty().fg_pgrp);
    job_control_of(s, pid, sig, session, fg)
}

/// `job_control` for a terminal of session `session` whose foreground
/// group is `fg` (a pseudo-terminal's too).
pub(crate) fn job_control_of(s: &mut Server, pid: i32, sig: i32, session: i32, fg: i32) -> Result<(), i64> {
    let p = s.proc(pid);
    if session == 0 || p.sid != session || p.pgid == fg || fg == 0 {
        return Ok(());
    }
    let ignored = p.sigactions[sig as usize][0] == process::SIG_IGN || p.sigmask & (1 << (sig - 1)) != 0;
    let pgid = p.pgid;
    if ignored {
        return if sig == process::SIGTTIN { Err(EIO) } else { Ok(()) };
    }
    if s.orphaned(pgid) {
        return Err(EIO);
    }
    let group: Vec<i32> = s.procs.values().filter(|q| q.pgid == pgid && q.pid == q.tgid && q.zombie.is_none()).map(|q| q.pid).collect();
    for q in group {
        s.post_process(q, sig);
    }
    Err(WOULD_BLOCK)
}


/// What is ready of `events` on descriptor `fd`.
pub(crate) fn poll_one(s: &mut Server, pid: i32, fd: i32, events: u16) -> u16 {
    if fd < 0 {
        return 0;
    }
    let Ok(d) = desc(s, pid, fd as u64) else { return POLLNVAL };
    let ready = desc_ready(&d.borrow());
    ready & (events | POLLERR | POLLHUP | POLLNVAL)
}

/// desc_ready asked the terminal since the last `looked_at_tty`.
static TTY_LOOKED: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Whether desc_ready asked the terminal since the last call: a wait of
/// poll, select or epoll that watches it is polled with the terminal
/// (`waits_tty`); any other waits for a message, the network's
/// notification (wake.rs) or its deadline (timers::wake_at), not a poll.
pub(crate) fn looked_at_tty() -> bool {
    TTY_LOOKED.swap(false, core::sync::atomic::Ordering::Relaxed)
}

/// A poll, select or epoll wait that cannot end yet: polled with the
/// terminal if it watches it, awake at its deadline (0: none).
pub(crate) fn wait_for(s: &mut Server, pid: i32, deadline: u64) {
    if looked_at_tty() {
        s.proc(pid).waits_tty = true;
    }
    if deadline != 0 && deadline != u64::MAX {
        super::timers::wake_at(deadline);
    }
}

/// What poll says of a description now.
pub(crate) fn desc_ready(d: &Description) -> u16 {
    match &d.kind {
        Kind::Console => {
            TTY_LOOKED.store(true, core::sync::atomic::Ordering::Relaxed);
            (if tty().has_input() { POLLIN } else { 0 }) | POLLOUT
        }
        Kind::Pipe(p, _) => {
            let p = p.borrow();
            let mut ready = 0;
            if d.readable() {
                ready |= (if p.buf.is_empty() { 0 } else { POLLIN }) | if p.writers == 0 { POLLHUP } else { 0 };
            }
            if d.writable() {
                ready |= if p.readers == 0 {
                    POLLERR
                } else if p.room() > 0 {
                    POLLOUT
                } else {
                    0
                };
            }
            ready
        }
        Kind::Object(o) => o.borrow().ready(),
        _ => POLLIN | POLLOUT,
    }
}

/// Grows with each change an edge-triggered epoll reports.
pub(crate) fn desc_generation(d: &Description) -> u64 {
    match &d.kind {
        Kind::Pipe(p, _) => p.borrow().generation,
        Kind::Object(o) => o.borrow().generation(),
        _ => 0,
    }
}

/// poll and ppoll: `timeout_ms` < 0 waits for ever; the deadline is kept in
/// the call's last argument while it waits.
pub(crate) fn do_poll(s: &mut Server, pid: i32, c: &mut Call, fds: u64, n: u64, timeout_ms: i64) -> Out {
    if n > 1024 {
        return Out::Ret(-EINVAL);
    }
    let mut entries = match s.proc(pid).mm.read_vec(fds, n as usize * 8) {
        Ok(v) => v,
        Err(e) => return Out::Ret(-e),
    };
    let mut count = 0;
    looked_at_tty();
    for i in 0..n as usize {
        let e = &mut entries[i * 8..i * 8 + 8];
        let fd = i32::from_le_bytes([e[0], e[1], e[2], e[3]]);
        let events = u16::from_le_bytes([e[4], e[5]]);
        let r = poll_one(s, pid, fd, events);
        e[6..8].copy_from_slice(&r.to_le_bytes());
        count += (r != 0) as i64;
    }
    if count > 0 || timeout_ms == 0 {
        return ret(s.proc(pid).mm.write(fds, &entries).map(|_| count));
    }
    if timeout_ms > 0 {
        if c.args[5] == 0 {
            c.args[5] = now_ns() + timeout_ms as u64 * 1_000_000;
            c.have_all = true;
        }
        if now_ns() >= c.args[5] {
            return ret(s.proc(pid).mm.write(fds, &entries).map(|_| 0));
        }
    }
    wait_for(s, pid, if timeout_ms > 0 { c.args[5] } else { 0 });
    Out::Block
}

pub fn poll(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fds, n, t) = (c.args[0], c.args[1], c.args[2] as i32 as i64);
    do_poll(s, pid, c, fds, n, t)
}

/// preadv, pwritev and their ...2 forms: readv and writev at an offset
/// (pos_l; pos_h would be its upper half on a 32-bit system and is nothing
/// on x86-64), the iovecs in order until one is short, what was moved
/// reported before an error.  In the ...2 forms an offset of -1 is the
/// description's position (and moves it), and flags RWF_HIPRI, RWF_DSYNC
/// and RWF_SYNC change nothing here (every write is in the file at once);
/// any other flag is EOPNOTSUPP.  A negative offset is EINVAL; a pipe or
/// the terminal at an offset ESPIPE.
fn vector_at(s: &mut Server, pid: i32, c: &mut Call, write: bool, v2: bool) -> Result<i64, i64> {
    const RWF_KNOWN: u64 = 1 | 2 | 4;
    let off = s.arg(pid, c, 3) as i64;
    let flags = if v2 { s.arg(pid, c, 5) } else { 0 };
    let d = desc(s, pid, c.args[0])?;
    if flags & !RWF_KNOWN != 0 {
        return Err(EOPNOTSUPP);
    }
    let at = match off {
        -1 if v2 => None,
        o if o < 0 => return Err(EINVAL),
        o => Some(o as u64),
    };
    if at.is_some() && matches!(d.borrow().kind, Kind::Pipe(..) | Kind::Console) {
        return Err(ESPIPE);
    }
    let mut done = 0u64;
    for (base, len) in iovecs(s, pid, c.args[1], c.args[2])? {
        if len == 0 {
            continue;
        }
        let pos = at.map(|a| a + done);
        let r = if write {
            do_write(s, pid, c.args[0], base, len, pos).map(|n| n as u64)
        } else {
            do_read(s, pid, c.args[0], base, len, pos).map(|n| n as u64)
        };
        let n = match r {
            Ok(n) => n,
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        };
        done += n;
        if n < len {
            break;
        }
    }
    Ok(done as i64)
}

pub fn preadv(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(vector_at(s, pid, c, false, false))
}

pub fn pwritev(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(vector_at(s, pid, c, true, false))
}

pub fn preadv2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(vector_at(s, pid, c, false, true))
}

pub fn pwritev2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(vector_at(s, pid, c, true, true))
}
