//! The system calls' handlers, named by `syscall_table.rs`.  Each gets the
//! server, the caller's pid and the call, and says what happens next
//! ([`Out`]).  Guest memory is reached only through `Mm::read`/`write`,
//! which answer EFAULT for anything outside the caller's areas.

use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{TIMER, reg};

use crate::errno::*;
use crate::fd::*;
use crate::mem::{self, PAGE, PROT_WRITE};
use crate::process::{self, Blocked, Keep, Proc};
use crate::tty::{Termios, tty};
use crate::vfs::{self, Data, Ino, Node, fs};
use crate::{Call, Out, Server};

/// A read or write that must wait (internal; never returned to Linux).
const WOULD_BLOCK: i64 = 100_000;
/// Bytes one read or write moves at most (the server's heap is small).
const IO_CHUNK: usize = 64 * 1024;
const AT_FDCWD: i64 = -100;
const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
const AT_REMOVEDIR: u64 = 0x200;
const AT_EMPTY_PATH: u64 = 0x1000;
const PATH_MAX: usize = 4096;
/// Linux processes at once (zombies included); fork says EAGAIN past it.
const MAX_PROCS: usize = 128;

fn ret(r: Result<i64, i64>) -> Out {
    match r {
        Ok(v) => Out::Ret(v),
        Err(WOULD_BLOCK) => Out::Block,
        Err(e) => Out::Ret(-e),
    }
}

impl Server {
    pub fn proc(&mut self, pid: i32) -> &mut Proc {
        self.procs.get_mut(&pid).expect("caller exists")
    }

    fn path(&mut self, pid: i32, va: u64) -> Result<String, i64> {
        let p = self.proc(pid);
        let bytes = p.mm.read_cstr(va, PATH_MAX)?;
        let s = String::from_utf8(bytes).map_err(|_| ENOENT)?;
        if s.is_empty() {
            return Err(ENOENT);
        }
        Ok(if s == "/proc/self/exe" { p.exe.clone() } else { s })
    }

    /// The directory a *at call starts from.
    fn dirfd(&mut self, pid: i32, dirfd: u64) -> Result<Ino, i64> {
        let p = self.proc(pid);
        if dirfd as i32 as i64 == AT_FDCWD {
            return Ok(p.cwd);
        }
        let d = p.fd(dirfd as i32 as u64)?.desc.clone();
        match d.borrow().kind {
            Kind::Dir { ino } => Ok(ino),
            _ => Err(ENOTDIR),
        }
    }
}

// ---- reading and writing ---------------------------------------------------

/// Reads at most `max` bytes from a description (at `at` when given,
/// else at and past its position).
fn read_desc(s: &mut Server, pid: i32, d: &Desc, max: usize, at: Option<u64>) -> Result<Vec<u8>, i64> {
    let mut out = alloc::vec![0u8; max.min(IO_CHUNK)];
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
        Kind::PipeRead(pipe) => {
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
                n
            }
        }
        Kind::PipeWrite(_) => return Err(EBADF),
        Kind::Null => 0,
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
fn write_desc(s: &mut Server, pid: i32, d: &Desc, data: &[u8], at: Option<u64>) -> Result<usize, i64> {
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
        Kind::PipeWrite(pipe) => {
            let mut pipe = pipe.borrow_mut();
            if pipe.readers == 0 {
                drop(pipe);
                drop(desc);
                // SIGPIPE, delivered as the call returns EPIPE (its default
                // action ends the writer).
                s.proc(pid).pending |= 1 << (13 - 1);
                return Err(EPIPE);
            }
            let room = PIPE_SIZE - pipe.buf.len();
            if room == 0 {
                return Err(if nonblock { EAGAIN } else { WOULD_BLOCK });
            }
            let n = room.min(data.len());
            pipe.buf.extend(&data[..n]);
            Ok(n)
        }
        Kind::PipeRead(_) | Kind::Generated(_) => Err(EBADF),
        Kind::Null => Ok(data.len()),
    }
}

fn write_out(r: Result<usize, i64>) -> Out {
    ret(r.map(|n| n as i64))
}

fn desc(s: &mut Server, pid: i32, fd: u64) -> Result<Desc, i64> {
    Ok(s.proc(pid).fd(fd)?.desc.clone())
}

fn do_read(s: &mut Server, pid: i32, fd: u64, buf: u64, count: u64, at: Option<u64>) -> Result<i64, i64> {
    let d = desc(s, pid, fd)?;
    mem::check_range(buf, count as usize)?;
    let data = read_desc(s, pid, &d, count as usize, at)?;
    s.proc(pid).mm.write(buf, &data)?;
    Ok(data.len() as i64)
}

fn do_write(s: &mut Server, pid: i32, fd: u64, buf: u64, count: u64, at: Option<u64>) -> Result<usize, i64> {
    let d = desc(s, pid, fd)?;
    let n = (count as usize).min(IO_CHUNK);
    let data = s.proc(pid).mm.read_vec(buf, n)?;
    write_desc(s, pid, &d, &data, at)
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

fn iovecs(s: &mut Server, pid: i32, iov: u64, n: u64) -> Result<Vec<(u64, u64)>, i64> {
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
        if let Kind::PipeWrite(p) = &out.borrow().kind {
            n = n.min(PIPE_SIZE - p.borrow().buf.len());
            if n == 0 && count > 0 {
                return Err(WOULD_BLOCK);
            }
        }
        let at = if offp != 0 { Some(s.proc(pid).mm.read_u64(offp)?) } else { None };
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

// ---- files and directories ---------------------------------------------------

fn open_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, flags: u64, mode: u64) -> Result<i64, i64> {
    let flags = flags as u32;
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let kind = match path.as_str() {
        "/dev/null" => Some(Kind::Null),
        "/dev/tty" | "/dev/console" => Some(Kind::Console),
        p => proc_file(s, pid, p).map(|b| Kind::Generated(b.into())),
    };
    let kind = match kind {
        Some(k) => k,
        None => {
            let f = fs();
            let ino = match f.resolve(base, &path, flags & O_NOFOLLOW == 0) {
                Ok(ino) => {
                    if flags & O_CREAT != 0 && flags & O_EXCL != 0 {
                        return Err(EEXIST);
                    }
                    ino
                }
                Err(ENOENT) if flags & O_CREAT != 0 => {
                    let (dir, name) = f.parent(base, &path)?;
                    let umask = s.proc(pid).umask;
                    let node = Node::File(Data::Pages(Vec::new(), 0));
                    f.create(dir, name, node, vfs::S_IFREG | (mode as u32 & 0o7777 & !umask))?
                }
                Err(e) => return Err(e),
            };
            match &f.get(ino).node {
                Node::Dir { .. } => {
                    if flags & O_ACCMODE != O_RDONLY || flags & O_CREAT != 0 {
                        return Err(EISDIR);
                    }
                    Kind::Dir { ino }
                }
                Node::Symlink(_) => return Err(ELOOP),
                Node::File(_) => {
                    if flags & O_DIRECTORY != 0 {
                        return Err(ENOTDIR);
                    }
                    if flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY {
                        f.truncate(ino, 0)?;
                    }
                    Kind::File { ino }
                }
            }
        }
    };
    let d = Description::new(kind, flags & (O_ACCMODE | O_APPEND | O_NONBLOCK));
    s.proc(pid).install(Fd { desc: d, cloexec: flags & O_CLOEXEC != 0 }, 0)
}

pub fn open(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(open_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], c.args[2]))
}

pub fn openat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mode = s.arg(pid, c, 3);
    ret(open_at(s, pid, c.args[0], c.args[1], c.args[2], mode))
}

pub fn close(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    ret(match p.fds.get_mut(c.args[0] as usize) {
        Some(slot @ Some(_)) => {
            *slot = None;
            Ok(0)
        }
        _ => Err(EBADF),
    })
}

/// struct stat of x86-64 (144 bytes).
fn stat_bytes(mode: u32, ino: u64, nlink: u64, size: u64, rdev: u64) -> [u8; 144] {
    let mut b = [0u8; 144];
    b[0..8].copy_from_slice(&1u64.to_le_bytes());
    b[8..16].copy_from_slice(&ino.to_le_bytes());
    b[16..24].copy_from_slice(&nlink.to_le_bytes());
    b[24..28].copy_from_slice(&mode.to_le_bytes());
    b[40..48].copy_from_slice(&rdev.to_le_bytes());
    b[48..56].copy_from_slice(&size.to_le_bytes());
    b[56..64].copy_from_slice(&4096u64.to_le_bytes());
    b[64..72].copy_from_slice(&size.div_ceil(512).to_le_bytes());
    b
}

fn stat_ino(ino: Ino) -> [u8; 144] {
    let f = fs();
    let n = f.get(ino);
    stat_bytes(n.mode, ino as u64 + 2, n.nlink as u64, f.size(ino), 0)
}

fn stat_desc(d: &Desc) -> [u8; 144] {
    match &d.borrow().kind {
        Kind::File { ino } | Kind::Dir { ino } => stat_ino(*ino),
        Kind::Console => stat_bytes(0o020620, 1, 1, 0, (5 << 8) | 1),
        Kind::Null => stat_bytes(0o020666, 2, 1, 0, (1 << 8) | 3),
        Kind::PipeRead(_) | Kind::PipeWrite(_) => stat_bytes(0o010600, 3, 1, 0, 0),
        Kind::Generated(b) => stat_bytes(0o100444, 4, 1, b.len() as u64, 0),
    }
}

fn stat_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, buf: u64, flags: u64) -> Result<i64, i64> {
    let bytes = if flags & AT_EMPTY_PATH != 0 && s.proc(pid).mm.read_cstr(path, 1)?.is_empty() {
        if dirfd as i32 as i64 == AT_FDCWD {
            stat_ino(s.proc(pid).cwd)
        } else {
            stat_desc(&desc(s, pid, dirfd)?)
        }
    } else {
        let path = s.path(pid, path)?;
        let base = s.dirfd(pid, dirfd)?;
        match path.as_str() {
            "/dev/null" => stat_bytes(0o020666, 2, 1, 0, (1 << 8) | 3),
            "/dev/tty" | "/dev/console" => stat_bytes(0o020620, 1, 1, 0, (5 << 8) | 1),
            _ => stat_ino(fs().resolve(base, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?),
        }
    };
    s.proc(pid).mm.write(buf, &bytes)?;
    Ok(0)
}

pub fn stat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(stat_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], 0))
}

pub fn lstat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(stat_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], AT_SYMLINK_NOFOLLOW))
}

pub fn fstat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let b = stat_desc(&desc(s, pid, c.args[0])?);
        s.proc(pid).mm.write(c.args[1], &b)?;
        Ok(0)
    })();
    ret(r)
}

pub fn newfstatat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = s.arg(pid, c, 3);
    ret(stat_at(s, pid, c.args[0], c.args[1], c.args[2], flags))
}

pub fn getdents64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let mut d = d.borrow_mut();
        let Kind::Dir { ino } = d.kind else { return Err(ENOTDIR) };
        let f = fs();
        let Node::Dir { entries, parent } = &f.get(ino).node else { return Err(ENOTDIR) };
        let mut list: Vec<(&str, Ino)> = alloc::vec![(".", ino), ("..", *parent)];
        list.extend(entries.iter().map(|(n, i)| (n.as_str(), *i)));
        let cap = (c.args[2] as usize).min(IO_CHUNK);
        let mut out = Vec::new();
        let mut pos = d.pos as usize;
        while let Some((name, i)) = list.get(pos) {
            let reclen = (19 + name.len() + 1).div_ceil(8) * 8;
            if out.len() + reclen > cap {
                if out.is_empty() {
                    return Err(EINVAL);
                }
                break;
            }
            let ty: u8 = match f.get(*i).node {
                Node::Dir { .. } => 4,
                Node::File(_) => 8,
                Node::Symlink(_) => 10,
            };
            let start = out.len();
            out.extend_from_slice(&(*i as u64 + 2).to_le_bytes());
            out.extend_from_slice(&(pos as u64 + 1).to_le_bytes());
            out.extend_from_slice(&(reclen as u16).to_le_bytes());
            out.push(ty);
            out.extend_from_slice(name.as_bytes());
            out.resize(start + reclen, 0);
            pos += 1;
        }
        drop(list);
        s.proc(pid).mm.write(c.args[1], &out)?;
        d.pos = pos as u64;
        Ok(out.len() as i64)
    })();
    ret(r)
}

fn mkdir_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let umask = s.proc(pid).umask;
    let f = fs();
    let (dir, name) = f.parent(base, &path)?;
    f.mkdir(dir, name, mode as u32 & !umask)?;
    Ok(0)
}

pub fn mkdir(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mkdir_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1]))
}

pub fn mkdirat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mkdir_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

fn unlink_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, flags: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let f = fs();
    let (dir, name) = f.parent(base, &path)?;
    f.unlink(dir, name, flags & AT_REMOVEDIR != 0)?;
    Ok(0)
}

pub fn unlink(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(unlink_at(s, pid, AT_FDCWD as u64, c.args[0], 0))
}

pub fn rmdir(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(unlink_at(s, pid, AT_FDCWD as u64, c.args[0], AT_REMOVEDIR))
}

pub fn unlinkat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(unlink_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

fn rename_at(s: &mut Server, pid: i32, olddir: u64, old: u64, newdir: u64, new: u64) -> Result<i64, i64> {
    let old = s.path(pid, old)?;
    let new = s.path(pid, new)?;
    let ob = s.dirfd(pid, olddir)?;
    let nb = s.dirfd(pid, newdir)?;
    let f = fs();
    let (od, on) = f.parent(ob, &old)?;
    let (nd, nn) = f.parent(nb, &new)?;
    f.rename(od, on, nd, nn)?;
    Ok(0)
}

pub fn rename(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(rename_at(s, pid, AT_FDCWD as u64, c.args[0], AT_FDCWD as u64, c.args[1]))
}

pub fn renameat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let new = s.arg(pid, c, 3);
    ret(rename_at(s, pid, c.args[0], c.args[1], c.args[2], new))
}

pub fn renameat2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let new = s.arg(pid, c, 3);
    if s.arg(pid, c, 4) != 0 {
        return Out::Ret(-EINVAL);
    }
    ret(rename_at(s, pid, c.args[0], c.args[1], c.args[2], new))
}

fn readlink_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, buf: u64, size: u64) -> Result<i64, i64> {
    let raw = s.proc(pid).mm.read_cstr(path, PATH_MAX)?;
    let target = if raw == b"/proc/self/exe" {
        s.proc(pid).exe.clone()
    } else {
        let path = String::from_utf8(raw).map_err(|_| ENOENT)?;
        let base = s.dirfd(pid, dirfd)?;
        let f = fs();
        match &f.get(f.resolve(base, &path, false)?).node {
            Node::Symlink(t) => t.clone(),
            _ => return Err(EINVAL),
        }
    };
    if size == 0 {
        return Err(EINVAL);
    }
    let n = target.len().min(size as usize);
    s.proc(pid).mm.write(buf, &target.as_bytes()[..n])?;
    Ok(n as i64)
}

pub fn readlink(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(readlink_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], c.args[2]))
}

pub fn readlinkat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let size = s.arg(pid, c, 3);
    ret(readlink_at(s, pid, c.args[0], c.args[1], c.args[2], size))
}

fn access_at(s: &mut Server, pid: i32, dirfd: u64, path: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    if path == "/dev/null" || path == "/dev/tty" {
        return Ok(0);
    }
    fs().resolve(base, &path, true)?;
    Ok(0)
}

pub fn access(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(access_at(s, pid, AT_FDCWD as u64, c.args[0]))
}

pub fn faccessat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(access_at(s, pid, c.args[0], c.args[1]))
}

pub fn getcwd(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let p = s.proc(pid);
        let mut path = fs().path_of(p.cwd).into_bytes();
        path.push(0);
        if path.len() > c.args[1] as usize {
            return Err(ERANGE);
        }
        p.mm.write(c.args[0], &path)?;
        Ok(path.len() as i64)
    })();
    ret(r)
}

pub fn chdir(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let path = s.path(pid, c.args[0])?;
        let p = s.proc(pid);
        let ino = fs().resolve(p.cwd, &path, true)?;
        if !fs().is_dir(ino) {
            return Err(ENOTDIR);
        }
        p.cwd = ino;
        Ok(0)
    })();
    ret(r)
}

pub fn fchdir(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let Kind::Dir { ino } = d.borrow().kind else { return Err(ENOTDIR) };
        s.proc(pid).cwd = ino;
        Ok(0)
    })();
    ret(r)
}

pub fn umask(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let old = p.umask;
    p.umask = c.args[0] as u32 & 0o777;
    Out::Ret(old as i64)
}

pub fn dup(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    ret(p.fd(c.args[0]).cloned().and_then(|f| p.install(Fd { desc: f.desc, cloexec: false }, 0)))
}

fn dup_to(s: &mut Server, pid: i32, old: u64, new: u64, cloexec: bool) -> Result<i64, i64> {
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
    const F_DUPFD: u64 = 0;
    const F_GETFD: u64 = 1;
    const F_SETFD: u64 = 2;
    const F_GETFL: u64 = 3;
    const F_SETFL: u64 = 4;
    const F_DUPFD_CLOEXEC: u64 = 1030;
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
        F_SETFL => {
            let mut d = f.desc.borrow_mut();
            d.flags = (d.flags & !(O_APPEND | O_NONBLOCK)) | (arg as u32 & (O_APPEND | O_NONBLOCK));
            Ok(0)
        }
        _ => Err(EINVAL),
    })
}

fn make_pipe(s: &mut Server, pid: i32, fds: u64, flags: u64) -> Result<i64, i64> {
    let flags = flags as u32;
    if flags & !(O_CLOEXEC | O_NONBLOCK) != 0 {
        return Err(EINVAL);
    }
    mem::check_range(fds, 8)?;
    let pipe = alloc::rc::Rc::new(core::cell::RefCell::new(Pipe {
        buf: alloc::collections::VecDeque::new(),
        readers: 0,
        writers: 0,
    }));
    let nb = flags & O_NONBLOCK;
    let r = Description::new(Kind::PipeRead(pipe.clone()), O_RDONLY | nb);
    let w = Description::new(Kind::PipeWrite(pipe), O_WRONLY | nb);
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
    const TCGETS: u64 = 0x5401;
    const TCSETS: u64 = 0x5402;
    const TCSETSF: u64 = 0x5404;
    const TIOCGPGRP: u64 = 0x540f;
    const TIOCSPGRP: u64 = 0x5410;
    const TIOCGWINSZ: u64 = 0x5413;
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        if !matches!(d.borrow().kind, Kind::Console) {
            return Err(ENOTTY);
        }
        let (req, arg) = (c.args[1], c.args[2]);
        let p = s.proc(pid);
        match req {
            TCGETS => p.mm.write(arg, &tty().termios.to_bytes())?,
            TCSETS..=TCSETSF => {
                let mut b = [0u8; 36];
                p.mm.read(arg, &mut b)?;
                tty().termios = Termios::from_bytes(&b);
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

// ---- memory ------------------------------------------------------------------

pub fn brk(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mm = &mut s.proc(pid).mm;
    let want = c.args[0];
    if want < mm.brk_start || want >= mem::MMAP_TOP {
        return Out::Ret(mm.brk as i64);
    }
    let (old_top, new_top) = (mm.brk.next_multiple_of(PAGE), want.next_multiple_of(PAGE));
    if new_top > old_top {
        if mm.areas.range(..new_top).any(|(st, a)| a.end > old_top && *st < new_top)
            || mm.reserved() + (new_top - old_top) > mem::MAX_RESERVED
        {
            return Out::Ret(mm.brk as i64);
        }
        mm.areas.insert(old_top, mem::Area { end: new_top, prot: mem::PROT_READ | PROT_WRITE });
    } else if new_top < old_top {
        mm.unmap(new_top, old_top - new_top);
    }
    mm.brk = want;
    Out::Ret(want as i64)
}

pub fn mmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const MAP_SHARED: u64 = 1;
    const MAP_FIXED: u64 = 0x10;
    const MAP_ANONYMOUS: u64 = 0x20;
    const MAP_FIXED_NOREPLACE: u64 = 0x100000;
    let flags = s.arg(pid, c, 3);
    let fd = s.arg(pid, c, 4);
    let off = s.arg(pid, c, 5);
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32 & 7);
    let r = (|| {
        if len == 0 || off % PAGE != 0 {
            return Err(EINVAL);
        }
        let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
        let file = if flags & MAP_ANONYMOUS == 0 {
            let d = desc(s, pid, fd)?;
            let Kind::File { ino } = d.borrow().kind else { return Err(EACCES) };
            if flags & MAP_SHARED != 0 && prot & PROT_WRITE != 0 {
                return Err(ENODEV);
            }
            Some(ino)
        } else {
            None
        };
        let mm = &mut s.proc(pid).mm;
        if mm.reserved() + len > mem::MAX_RESERVED {
            return Err(ENOMEM);
        }
        let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
        let free = |mm: &mem::Mm, a: u64| {
            a.checked_add(len).is_some_and(|e| e <= mem::MMAP_TOP)
                && !mm.areas.range(..a + len).any(|(st, ar)| ar.end > a && *st < a + len)
        };
        let at = if fixed {
            if addr % PAGE != 0 || addr.checked_add(len).is_none_or(|e| e > mem::MMAP_TOP) {
                return Err(EINVAL);
            }
            if flags & MAP_FIXED_NOREPLACE != 0 && !free(mm, addr) {
                return Err(EEXIST);
            }
            addr
        } else if addr != 0 && addr % PAGE == 0 && free(mm, addr) {
            addr
        } else {
            mm.find_free(len).ok_or(ENOMEM)?
        };
        mm.add_area(at, len, prot);
        if let Some(ino) = file {
            // Private file pages are copied in now (zeros past the end).
            let mut buf = alloc::vec![0u8; PAGE as usize];
            for i in 0..len / PAGE {
                buf.fill(0);
                let n = fs().read(ino, off + i * PAGE, &mut buf)?;
                if n == 0 {
                    break;
                }
                let f = mem::Frame::with(&buf[..n], 0)?;
                mm.put(at + i * PAGE, f, prot)?;
            }
        }
        Ok(at as i64)
    })();
    ret(r)
}

pub fn munmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len) = (c.args[0], c.args[1]);
    if addr % PAGE != 0 || len == 0 || addr.checked_add(len).is_none_or(|e| e > mem::GUEST_TOP) {
        return Out::Ret(-EINVAL);
    }
    s.proc(pid).mm.unmap(addr, len.next_multiple_of(PAGE));
    Out::Ret(0)
}

pub fn mprotect(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32);
    if addr % PAGE != 0 || prot & !7 != 0 || addr.checked_add(len).is_none_or(|e| e > mem::GUEST_TOP) {
        return Out::Ret(-EINVAL);
    }
    if len == 0 {
        return Out::Ret(0);
    }
    ret(s.proc(pid).mm.protect(addr, len.next_multiple_of(PAGE), prot).map(|_| 0))
}

// ---- processes -----------------------------------------------------------------

pub fn getpid(_: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(pid as i64)
}

pub fn getppid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(s.proc(pid).ppid as i64)
}

pub fn getpgrp(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(s.proc(pid).pgid as i64)
}

pub fn getpgid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let target = if c.args[0] == 0 { pid } else { c.args[0] as i32 };
    ret(s.procs.get(&target).map(|p| p.pgid as i64).ok_or(ESRCH))
}

pub fn getsid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let target = if c.args[0] == 0 { pid } else { c.args[0] as i32 };
    ret(s.procs.get(&target).map(|p| p.sid as i64).ok_or(ESRCH))
}

pub fn setpgid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let target = if c.args[0] == 0 { pid } else { c.args[0] as i32 };
    let pgid = if c.args[1] == 0 { target } else { c.args[1] as i32 };
    match s.procs.get_mut(&target) {
        Some(p) if p.pid == pid || p.ppid == pid => {
            p.pgid = pgid;
            Out::Ret(0)
        }
        _ => Out::Ret(-ESRCH),
    }
}

pub fn setsid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    let p = s.proc(pid);
    if p.pgid == pid {
        return Out::Ret(-EPERM);
    }
    p.sid = pid;
    p.pgid = pid;
    Out::Ret(pid as i64)
}

pub fn pause(_: &mut Server, _: i32, _: &mut Call) -> Out {
    Out::Block
}

pub fn zero(_: &mut Server, _: i32, _: &mut Call) -> Out {
    Out::Ret(0)
}

/// Refused on purpose (the table says why): -ENOSYS, counted.
pub fn refused(s: &mut Server, _: i32, c: &mut Call) -> Out {
    *s.refused.entry(c.nr).or_insert(0) += 1;
    Out::Ret(-ENOSYS)
}

pub fn exit(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    s.terminate(pid, process::exited(c.args[0] as i32));
    Out::Gone
}

pub fn set_tid_address(_: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(pid as i64)
}

pub fn arch_prctl(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const ARCH_SET_FS: u64 = 0x1002;
    const ARCH_GET_FS: u64 = 0x1003;
    let p = s.proc(pid);
    match c.args[0] {
        ARCH_SET_FS => {
            if c.args[1] >= mem::GUEST_TOP {
                return Out::Ret(-EPERM);
            }
            // The process sets its own base: it resumes in the trampoline
            // (wrfsbase %r11; jmp *%rcx) with rax = 0, as the system call
            // would have left it (rcx and r11 are the call's to clobber).
            let Some(k) = p.keep.as_ref() else { return Out::Ret(-EINVAL) };
            if k.process.read_regs().is_err() {
                return Out::Ret(-EINVAL);
            }
            let buf = keep_rt::ipc_buffer();
            let mut r = buf.regs();
            r[reg::RCX as usize] = r[reg::RIP as usize];
            r[reg::R11 as usize] = c.args[1];
            r[reg::RIP as usize] = mem::TRAMPOLINE;
            r[reg::RAX as usize] = 0;
            buf.set_regs(&r);
            if k.process.write_regs().is_err() {
                return Out::Ret(-EINVAL);
            }
            p.fs_base = c.args[1];
            Out::Resume
        }
        ARCH_GET_FS => {
            let v = p.fs_base;
            ret(p.mm.write_u64(c.args[1], v).map(|_| 0))
        }
        _ => Out::Ret(-EINVAL),
    }
}

pub fn prctl(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const PR_SET_NAME: u64 = 15;
    const PR_GET_NAME: u64 = 16;
    let p = s.proc(pid);
    let r = match c.args[0] {
        PR_SET_NAME => p.mm.read_cstr(c.args[1], 4096).map(|n| {
            p.name = String::from_utf8_lossy(&n[..n.len().min(15)]).into_owned();
            0
        }),
        PR_GET_NAME => {
            let mut b = [0u8; 16];
            let n = p.name.len().min(15);
            b[..n].copy_from_slice(&p.name.as_bytes()[..n]);
            p.mm.write(c.args[1], &b).map(|_| 0)
        }
        _ => Err(EINVAL),
    };
    ret(r)
}

pub fn rt_sigaction(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (sig, act, old) = (c.args[0] as usize, c.args[1], c.args[2]);
    let r = (|| {
        if sig == 0 || sig > 64 || (act != 0 && (sig == 9 || sig == 19)) {
            return Err(EINVAL);
        }
        let p = s.proc(pid);
        let cur = p.sigactions[sig];
        // struct kernel_sigaction: handler, flags, restorer, mask.
        let new = if act != 0 {
            let mut a = [0u64; 4];
            for (i, w) in a.iter_mut().enumerate() {
                *w = p.mm.read_u64(act + 8 * i as u64)?;
            }
            Some(a)
        } else {
            None
        };
        if old != 0 {
            for (i, w) in cur.iter().enumerate() {
                p.mm.write_u64(old + 8 * i as u64, *w)?;
            }
        }
        if let Some(n) = new {
            p.sigactions[sig] = n;
            // A signal now ignored is dropped if pending.
            if n[0] == process::SIG_IGN {
                p.pending &= !(1 << (sig - 1));
            }
        }
        Ok(0)
    })();
    ret(r)
}

pub fn rt_sigprocmask(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (how, set, old) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        let p = s.proc(pid);
        let cur = p.sigmask;
        let new = if set != 0 { Some(p.mm.read_u64(set)?) } else { None };
        if old != 0 {
            p.mm.write_u64(old, cur)?;
        }
        if let Some(n) = new {
            p.sigmask = match how {
                0 => cur | n,
                1 => cur & !n,
                2 => n,
                _ => return Err(EINVAL),
            } & !((1 << 8) | (1 << 18)); // SIGKILL, SIGSTOP
        }
        Ok(0)
    })();
    ret(r)
}

pub fn kill(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (target, sig) = (c.args[0] as i32, c.args[1] as i32);
    if !(0..=64).contains(&sig) {
        return Out::Ret(-EINVAL);
    }
    let my_pgid = s.proc(pid).pgid;
    let targets: Vec<i32> = s
        .procs
        .values()
        .filter(|p| p.zombie.is_none())
        .filter(|p| match target {
            t if t > 0 => p.pid == t,
            0 => p.pgid == my_pgid,
            -1 => p.pid != pid,
            t => p.pgid == -t,
        })
        .map(|p| p.pid)
        .collect();
    if targets.is_empty() {
        return Out::Ret(-ESRCH);
    }
    if sig == 0 {
        return Out::Ret(0);
    }
    for t in targets {
        if t != pid {
            s.post(t, sig);
        }
    }
    // The caller's own signal is delivered as this call returns.
    if s.procs.get(&pid).is_some_and(|p| p.zombie.is_none()) {
        let me = matches!(target, t if t == pid) || target == 0 || (target < -1 && -target == my_pgid);
        if me {
            s.proc(pid).pending |= 1 << (sig - 1);
        }
        Out::Ret(0)
    } else {
        Out::Gone
    }
}

pub fn wait4(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const WNOHANG: u64 = 1;
    let (want, status, options) = (c.args[0] as i32, c.args[1], c.args[2]);
    let rusage = s.arg(pid, c, 3);
    let my_pgid = s.proc(pid).pgid;
    let matches = |p: &Proc| {
        p.ppid == pid
            && match want {
                -1 => true,
                0 => p.pgid == my_pgid,
                w if w > 0 => p.pid == w,
                w => p.pgid == -w,
            }
    };
    let zombie = s.procs.values().find(|p| matches(p) && p.zombie.is_some()).map(|p| (p.pid, p.zombie.unwrap()));
    if let Some((child, st)) = zombie {
        let p = s.proc(pid);
        if status != 0
            && let Err(e) = p.mm.write_u32(status, st as u32)
        {
            return Out::Ret(-e);
        }
        if rusage != 0
            && let Err(e) = p.mm.write(rusage, &[0u8; 144])
        {
            return Out::Ret(-e);
        }
        s.reap(child);
        return Out::Ret(child as i64);
    }
    if !s.procs.values().any(matches) {
        return Out::Ret(-ECHILD);
    }
    if options & WNOHANG != 0 { Out::Ret(0) } else { Out::Block }
}

/// fork, vfork and clone: a new process with a copy of the caller's memory
/// and descriptors, resuming where the caller does with rax = 0.
fn spawn_child(s: &mut Server, pid: i32, stack: u64, tls: Option<u64>, vfork: bool) -> Result<i32, i64> {
    if s.procs.len() >= MAX_PROCS {
        return Err(EAGAIN);
    }
    let child = s.new_pid();
    let parent = s.proc(pid);
    let keep = Keep::create(child, &parent.name)?;
    let setup = (|| {
        let mm = parent.mm.fork(keep.aspace)?;
        let k = parent.keep.as_ref().ok_or(EINVAL)?;
        k.process.read_regs().map_err(|_| EINVAL)?;
        let buf = keep_rt::ipc_buffer();
        let mut r = buf.regs();
        r[reg::RAX as usize] = 0;
        if stack != 0 {
            r[reg::RSP as usize] = stack;
        }
        let fs_base = tls.unwrap_or(parent.fs_base);
        if fs_base != 0 {
            r[reg::RCX as usize] = r[reg::RIP as usize];
            r[reg::R11 as usize] = fs_base;
            r[reg::RIP as usize] = mem::TRAMPOLINE;
        }
        buf.set_regs(&r);
        keep.process.write_regs().map_err(|_| EINVAL)?;
        let mut c = Proc::new(child, pid)?;
        c.pgid = parent.pgid;
        c.sid = parent.sid;
        c.name = parent.name.clone();
        c.exe = parent.exe.clone();
        c.mm = mm;
        c.fds = parent.fds.clone();
        c.cwd = parent.cwd;
        c.umask = parent.umask;
        c.fs_base = fs_base;
        c.sigactions = parent.sigactions;
        c.sigmask = parent.sigmask;
        Ok(c)
    })();
    let mut c = match setup {
        Ok(c) => c,
        Err(e) => {
            keep.destroy();
            return Err(e);
        }
    };
    let started = keep.process.start();
    c.keep = Some(keep);
    if started.is_err() {
        c.teardown();
        crate::env::env().free_slot(c.ret_slot);
        return Err(ENOMEM);
    }
    s.procs.insert(child, c);
    if vfork {
        s.proc(pid).blocked = Some(Blocked::Vfork(child));
    }
    Ok(child)
}

pub fn fork(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    ret(spawn_child(s, pid, 0, None, false).map(|c| c as i64))
}

pub fn vfork(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    match spawn_child(s, pid, 0, None, true) {
        Ok(_) => Out::Block,
        Err(e) => Out::Ret(-e),
    }
}

pub fn clone(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const CLONE_VM: u64 = 0x100;
    const CLONE_VFORK: u64 = 0x4000;
    const CLONE_THREAD: u64 = 0x10000;
    const CLONE_SETTLS: u64 = 0x80000;
    const CLONE_PARENT_SETTID: u64 = 0x100000;
    const CLONE_CHILD_SETTID: u64 = 0x1000000;
    let (flags, stack, ptid) = (c.args[0], c.args[1], c.args[2]);
    let ctid = s.arg(pid, c, 3);
    let tls = s.arg(pid, c, 4);
    if flags & CLONE_THREAD != 0 || (flags & CLONE_VM != 0 && flags & CLONE_VFORK == 0) {
        return refused(s, pid, c);
    }
    let vfork = flags & CLONE_VFORK != 0;
    let tls = (flags & CLONE_SETTLS != 0).then_some(tls);
    let child = match spawn_child(s, pid, stack, tls, vfork) {
        Ok(c) => c,
        Err(e) => return Out::Ret(-e),
    };
    if flags & CLONE_CHILD_SETTID != 0 {
        let _ = s.proc(child).mm.write_u32(ctid, child as u32);
    }
    if flags & CLONE_PARENT_SETTID != 0 {
        let _ = s.proc(pid).mm.write_u32(ptid, child as u32);
        let _ = s.proc(child).mm.write_u32(ptid, child as u32);
    }
    if vfork { Out::Block } else { Out::Ret(child as i64) }
}

/// A NULL-terminated array of strings in guest memory.
fn string_array(p: &mut Proc, mut va: u64) -> Result<Vec<Vec<u8>>, i64> {
    let mut v = Vec::new();
    if va == 0 {
        return Ok(v);
    }
    loop {
        let ptr = p.mm.read_u64(va)?;
        if ptr == 0 {
            return Ok(v);
        }
        if v.len() >= 4096 {
            return Err(E2BIG);
        }
        v.push(p.mm.read_cstr(ptr, 128 * 1024)?);
        va += 8;
    }
}

pub fn execve(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let path = s.path(pid, c.args[0])?;
        let p = s.proc(pid);
        let argv = string_array(p, c.args[1])?;
        let envp = string_array(p, c.args[2])?;
        let mut p = s.procs.remove(&pid).unwrap();
        let r = crate::exec::exec(s, &mut p, &path, argv, envp);
        s.procs.insert(pid, p);
        r?;
        if s.proc(pid).keep.as_ref().unwrap().process.start().is_err() {
            return Err(ENOMEM);
        }
        s.wake_vfork_parent(pid);
        Ok(0)
    })();
    match r {
        Ok(_) => Out::Gone,
        Err(e) => Out::Ret(-e),
    }
}

// ---- time, identity, limits ------------------------------------------------------

fn now_ns() -> u64 {
    TIMER.now_ms().unwrap_or(0) * 1_000_000
}

pub fn clock_gettime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[0] > 11 {
        return Out::Ret(-EINVAL);
    }
    let ns = now_ns();
    let mm = &mut s.proc(pid).mm;
    ret(mm
        .write_u64(c.args[1], ns / 1_000_000_000)
        .and_then(|_| mm.write_u64(c.args[1] + 8, ns % 1_000_000_000))
        .map(|_| 0))
}

pub fn gettimeofday(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ns = now_ns();
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
    let t = now_ns() / 1_000_000_000;
    if c.args[0] != 0
        && let Err(e) = s.proc(pid).mm.write_u64(c.args[0], t)
    {
        return Out::Ret(-e);
    }
    Out::Ret(t as i64)
}

/// Sleeps until the deadline kept in the call (args[5] once started).
fn sleep(s: &mut Server, pid: i32, c: &mut Call, ts: u64) -> Out {
    if c.args[5] == 0 {
        let p = s.proc(pid);
        let (sec, nsec) = match (p.mm.read_u64(ts), p.mm.read_u64(ts + 8)) {
            (Ok(a), Ok(b)) => (a, b),
            (Err(e), _) | (_, Err(e)) => return Out::Ret(-e),
        };
        if nsec >= 1_000_000_000 || (sec as i64) < 0 {
            return Out::Ret(-EINVAL);
        }
        c.args[5] = now_ns().saturating_add(sec.saturating_mul(1_000_000_000)).saturating_add(nsec).max(1);
        c.have_all = true;
    }
    if now_ns() >= c.args[5] {
        return Out::Ret(0);
    }
    s.proc(pid).waits_tty = true; // polled like the terminal
    Out::Block
}

pub fn nanosleep(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ts = c.args[0];
    sleep(s, pid, c, ts)
}

pub fn clock_nanosleep(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[1] != 0 {
        return Out::Ret(-EINVAL); // TIMER_ABSTIME
    }
    let ts = c.args[2];
    sleep(s, pid, c, ts)
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

fn limit(res: u64) -> Result<(u64, u64), i64> {
    Ok(match res {
        3 => (8 << 20, u64::MAX), // RLIMIT_STACK
        7 => (1024, 1024),        // RLIMIT_NOFILE
        0..=15 => (u64::MAX, u64::MAX),
        _ => return Err(EINVAL),
    })
}

pub fn getrlimit(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = limit(c.args[0]).and_then(|(cur, max)| {
        let mm = &mut s.proc(pid).mm;
        mm.write_u64(c.args[1], cur)?;
        mm.write_u64(c.args[1] + 8, max)?;
        Ok(0)
    });
    ret(r)
}

pub fn prlimit64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let old = s.arg(pid, c, 3);
    let r = limit(c.args[1]).and_then(|(cur, max)| {
        if c.args[0] != 0 && !s.procs.contains_key(&(c.args[0] as i32)) {
            return Err(ESRCH);
        }
        if old != 0 {
            let mm = &mut s.proc(pid).mm;
            mm.write_u64(old, cur)?;
            mm.write_u64(old + 8, max)?;
        }
        Ok(0)
    });
    ret(r)
}

pub fn getrandom(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let n = (c.args[1] as usize).min(IO_CHUNK);
    let mut b = Vec::with_capacity(n + 8);
    while b.len() < n {
        b.extend_from_slice(&s.random().to_le_bytes());
    }
    b.truncate(n);
    ret(s.proc(pid).mm.write(c.args[0], &b).map(|_| n as i64))
}

// ---- /proc, more files, identity, signals to threads, poll -----------------------

/// The few /proc files the server makes when they are opened.
fn proc_file(s: &mut Server, pid: i32, path: &str) -> Option<Vec<u8>> {
    let mib = |frames: u64| frames * 4;
    let text = match path {
        "/proc/mounts" | "/proc/self/mounts" => String::from("rootfs / tmpfs rw 0 0\n"),
        "/proc/cpuinfo" => String::from("processor\t: 0\nvendor_id\t: Keep\nmodel name\t: x86-64 (Keep workhorse)\n\n"),
        "/proc/meminfo" => {
            let free = keep_abi::MEMORY.free().unwrap_or(0);
            let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).map(|b| b / 4096).unwrap_or(free);
            alloc::format!("MemTotal: {} kB\nMemFree: {} kB\nMemAvailable: {} kB\n", mib(total.max(free)), mib(free), mib(free))
        }
        "/proc/uptime" => {
            let ms = TIMER.now_ms().unwrap_or(0);
            alloc::format!("{}.{:02} 0.00\n", ms / 1000, ms % 1000 / 10)
        }
        "/proc/version" => String::from("Linux version 6.1.0-keep-workhorse (Keep workhorse)\n"),
        "/proc/self/cmdline" | "/proc/self/comm" => {
            let p = s.proc(pid);
            alloc::format!("{}\n", p.name)
        }
        _ => return None,
    };
    Some(text.into_bytes())
}

fn truncate_ino(ino: Ino, len: u64) -> Result<i64, i64> {
    if (len as i64) < 0 {
        return Err(EINVAL);
    }
    match fs().get(ino).node {
        Node::File(_) => fs().truncate(ino, len).map(|_| 0),
        Node::Dir { .. } => Err(EISDIR),
        Node::Symlink(_) => Err(EINVAL),
    }
}

pub fn truncate(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let path = s.path(pid, c.args[0])?;
        let ino = fs().resolve(s.proc(pid).cwd, &path, true)?;
        truncate_ino(ino, c.args[1])
    })();
    ret(r)
}

pub fn ftruncate(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let d = d.borrow();
        match d.kind {
            Kind::File { ino } if d.writable() => truncate_ino(ino, c.args[1]),
            _ => Err(EINVAL),
        }
    })();
    ret(r)
}

fn link_at(s: &mut Server, pid: i32, olddir: u64, old: u64, newdir: u64, new: u64) -> Result<i64, i64> {
    let old = s.path(pid, old)?;
    let new = s.path(pid, new)?;
    let ob = s.dirfd(pid, olddir)?;
    let nb = s.dirfd(pid, newdir)?;
    let f = fs();
    let ino = f.resolve(ob, &old, false)?;
    if f.is_dir(ino) {
        return Err(EPERM);
    }
    let (dir, name) = f.parent(nb, &new)?;
    f.link(dir, name, ino)?;
    Ok(0)
}

pub fn link(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(link_at(s, pid, AT_FDCWD as u64, c.args[0], AT_FDCWD as u64, c.args[1]))
}

pub fn linkat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let new = s.arg(pid, c, 3);
    if s.arg(pid, c, 4) != 0 {
        return Out::Ret(-EINVAL);
    }
    ret(link_at(s, pid, c.args[0], c.args[1], c.args[2], new))
}

fn symlink_at(s: &mut Server, pid: i32, target: u64, dirfd: u64, path: u64) -> Result<i64, i64> {
    let target = s.proc(pid).mm.read_cstr(target, PATH_MAX)?;
    let target = String::from_utf8(target).map_err(|_| EINVAL)?;
    if target.is_empty() {
        return Err(ENOENT);
    }
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let f = fs();
    let (dir, name) = f.parent(base, &path)?;
    f.create(dir, name, Node::Symlink(target), vfs::S_IFLNK | 0o777)?;
    Ok(0)
}

pub fn symlink(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(symlink_at(s, pid, c.args[0], AT_FDCWD as u64, c.args[1]))
}

pub fn symlinkat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(symlink_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

fn chmod_ino(ino: Ino, mode: u64) -> Result<i64, i64> {
    let n = fs().get_mut(ino);
    n.mode = (n.mode & !0o7777) | (mode as u32 & 0o7777);
    Ok(0)
}

fn chmod_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    chmod_ino(fs().resolve(base, &path, true)?, mode)
}

pub fn chmod(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(chmod_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1]))
}

pub fn fchmodat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(chmod_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

pub fn fchmod(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let d = d.borrow();
        match d.kind {
            Kind::File { ino } | Kind::Dir { ino } => chmod_ino(ino, c.args[1]),
            _ => Err(EINVAL),
        }
    })();
    ret(r)
}

pub fn getresid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mm = &mut s.proc(pid).mm;
    let r = (0..3).try_for_each(|i| mm.write_u32(c.args[i], 0));
    ret(r.map(|_| 0))
}

pub fn sysinfo(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    // struct sysinfo: uptime, loads[3], totalram, freeram, sharedram,
    // bufferram, totalswap, freeswap (longs), procs (u16), pad, totalhigh,
    // freehigh, mem_unit (u32): 112 bytes.
    let mut b = [0u8; 112];
    let free = keep_abi::MEMORY.free().unwrap_or(0) * 4096;
    let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).unwrap_or(free).max(free);
    let procs = s.procs.len() as u16;
    b[0..8].copy_from_slice(&(TIMER.now_ms().unwrap_or(0) / 1000).to_le_bytes());
    b[32..40].copy_from_slice(&total.to_le_bytes());
    b[40..48].copy_from_slice(&free.to_le_bytes());
    b[80..82].copy_from_slice(&procs.to_le_bytes());
    b[104..108].copy_from_slice(&1u32.to_le_bytes());
    ret(s.proc(pid).mm.write(c.args[0], &b).map(|_| 0))
}

fn statfs_bytes() -> [u8; 120] {
    // struct statfs: type, bsize, blocks, bfree, bavail, files, ffree
    // (longs), fsid (2 ints), namelen, frsize, flags, spare[4].
    let mut b = [0u8; 120];
    let free = keep_abi::MEMORY.free().unwrap_or(0);
    let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).map(|v| v / 4096).unwrap_or(free).max(free);
    let words = [0x0102_1994u64, 4096, total, free, free, 1 << 20, 1 << 20];
    for (i, w) in words.iter().enumerate() {
        b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
    }
    b[64..72].copy_from_slice(&255u64.to_le_bytes());
    b[72..80].copy_from_slice(&4096u64.to_le_bytes());
    b
}

pub fn statfs(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let path = s.path(pid, c.args[0])?;
        fs().resolve(s.proc(pid).cwd, &path, true)?;
        s.proc(pid).mm.write(c.args[1], &statfs_bytes()).map(|_| 0)
    })();
    ret(r)
}

pub fn fstatfs(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        desc(s, pid, c.args[0])?;
        s.proc(pid).mm.write(c.args[1], &statfs_bytes()).map(|_| 0)
    })();
    ret(r)
}

pub fn tkill(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if (c.args[0] as i32) <= 0 {
        return Out::Ret(-EINVAL);
    }
    kill(s, pid, c)
}

pub fn tgkill(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if (c.args[1] as i32) <= 0 || c.args[0] != c.args[1] {
        return Out::Ret(-if (c.args[1] as i32) <= 0 { EINVAL } else { ESRCH });
    }
    let mut k = Call { nr: c.nr, args: [c.args[1], c.args[2], 0, 0, 0, 0], have_all: true };
    kill(s, pid, &mut k)
}

const POLLIN: u16 = 1;
const POLLOUT: u16 = 4;
const POLLERR: u16 = 8;
const POLLHUP: u16 = 0x10;
const POLLNVAL: u16 = 0x20;

/// What is ready of `events` on descriptor `fd`.
fn poll_one(s: &mut Server, pid: i32, fd: i32, events: u16) -> u16 {
    if fd < 0 {
        return 0;
    }
    let Ok(d) = desc(s, pid, fd as u64) else { return POLLNVAL };
    let d = d.borrow();
    let ready = match &d.kind {
        Kind::Console => {
            (if tty().has_input() { POLLIN } else { 0 }) | POLLOUT
        }
        Kind::PipeRead(p) => {
            let p = p.borrow();
            (if p.buf.is_empty() { 0 } else { POLLIN }) | if p.writers == 0 { POLLHUP } else { 0 }
        }
        Kind::PipeWrite(p) => {
            let p = p.borrow();
            if p.readers == 0 {
                POLLERR
            } else if p.buf.len() < PIPE_SIZE {
                POLLOUT
            } else {
                0
            }
        }
        _ => POLLIN | POLLOUT,
    };
    ready & (events | POLLERR | POLLHUP | POLLNVAL)
}

/// poll and ppoll: `timeout_ms` < 0 waits for ever; the deadline is kept in
/// the call's last argument while it waits.
fn do_poll(s: &mut Server, pid: i32, c: &mut Call, fds: u64, n: u64, timeout_ms: i64) -> Out {
    if n > 1024 {
        return Out::Ret(-EINVAL);
    }
    let mut entries = match s.proc(pid).mm.read_vec(fds, n as usize * 8) {
        Ok(v) => v,
        Err(e) => return Out::Ret(-e),
    };
    let mut count = 0;
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
    s.proc(pid).waits_tty = true; // polled with the terminal
    Out::Block
}

pub fn poll(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fds, n, t) = (c.args[0], c.args[1], c.args[2] as i32 as i64);
    do_poll(s, pid, c, fds, n, t)
}

pub fn ppoll(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (fds, n, ts) = (c.args[0], c.args[1], c.args[2]);
    let t = if ts == 0 {
        -1
    } else if c.args[5] != 0 {
        1 // waiting: the deadline is set
    } else {
        let p = s.proc(pid);
        match (p.mm.read_u64(ts), p.mm.read_u64(ts + 8)) {
            (Ok(sec), Ok(ns)) if (sec as i64) >= 0 && ns < 1_000_000_000 => {
                (sec * 1000 + ns.div_ceil(1_000_000)) as i64
            }
            (Err(e), _) | (_, Err(e)) => return Out::Ret(-e),
            _ => return Out::Ret(-EINVAL),
        }
    };
    do_poll(s, pid, c, fds, n, t)
}

pub fn utime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(access_at(s, pid, AT_FDCWD as u64, c.args[0]))
}

/// utimensat: the file must exist (touch creates it when it does not);
/// no times are kept.  A null path names the descriptor (futimens).
pub fn utimensat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[1] == 0 {
        return ret(desc(s, pid, c.args[0]).map(|_| 0));
    }
    ret(access_at(s, pid, c.args[0], c.args[1]))
}
