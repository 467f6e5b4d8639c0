//! Files and directories: open, stat, directories, links, names, modes,
//! the few /proc files.

use super::*;
use keep_workhorse::perm::{self, Cred};
use crate::linux::fs::AT_EACCESS;

pub(crate) fn open_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, flags: u64, mode: u64) -> Result<i64, i64> {
    let flags = flags as u32;
    let mut path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    // The pseudo-terminals (sys/pty.rs), /proc and the devices
    // (sys/procfs.rs, sys/devices.rs).
    if let Some(d) = super::pty::open(s, pid, &path, flags) {
        return s.proc(pid).install(Fd { desc: d?, cloexec: flags & O_CLOEXEC != 0 }, 0);
    }
    match super::procfs::open(s, pid, &path, flags) {
        Some(Ok(super::procfs::Opened::Desc(d))) => {
            return s.proc(pid).install(Fd { desc: d, cloexec: flags & O_CLOEXEC != 0 }, 0);
        }
        Some(Ok(super::procfs::Opened::Path(p))) => path = p,
        Some(Err(e)) => return Err(e),
        None => {}
    }
    let kind = match path.as_str() {
        "/dev/null" => Some(Kind::Null),
        "/dev/tty" | "/dev/console" => Some(Kind::Console),
        _ => None,
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
                    // What the open asks of a file that was there.
                    let want = match flags & O_ACCMODE {
                        O_RDONLY => perm::MAY_READ,
                        O_WRONLY => perm::MAY_WRITE,
                        _ => perm::MAY_READ | perm::MAY_WRITE,
                    } | if flags & O_TRUNC != 0 { perm::MAY_WRITE } else { 0 };
                    if !matches!(f.get(ino).node, Node::Symlink(_)) {
                        f.may(ino, want)?;
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
                    match f.get(ino).mode & vfs::S_IFMT {
                        vfs::S_IFREG => {
                            if flags & O_TRUNC != 0 && flags & O_ACCMODE != O_RDONLY {
                                f.truncate(ino, 0)?;
                            }
                            Kind::File { ino }
                        }
                        vfs::S_IFIFO => super::fifo::open(s, pid, ino, flags)?,
                        _ => return Err(ENXIO), // a socket file
                    }
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

/// creat: open(path, O_CREAT | O_WRONLY | O_TRUNC, mode).
pub fn creat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = (O_CREAT | O_WRONLY | O_TRUNC) as u64;
    ret(open_at(s, pid, AT_FDCWD as u64, c.args[0], flags, c.args[1]))
}

/// The extended-attribute calls by path (the l* forms do not follow a
/// last symlink): the in-memory tree keeps them (keep_workhorse::xattr's
/// rules, as tmpfs); the store under /data does not (ENOTSUP, as a file
/// system without them).
pub fn xattr_path(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let path = s.path(pid, c.args[0])?;
        let cwd = s.proc(pid).cwd;
        let ino = fs().resolve(cwd, &path, c.nr != 189 && c.nr != 192 && c.nr != 195 && c.nr != 198)?;
        xattr_of(s, pid, c, ino)
    })();
    ret(r)
}

/// The f*xattr calls: a file's or directory's descriptor as `xattr_path`;
/// other descriptors ENOTSUP, a closed one EBADF.
pub fn xattr_fd(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        let ino = match d.borrow().kind {
            Kind::File { ino } | Kind::Dir { ino } | Kind::Pipe(_, Some(ino)) => ino,
            _ => return Err(EOPNOTSUPP),
        };
        xattr_of(s, pid, c, ino)
    })();
    ret(r)
}

/// One *xattr call (by its number: set 188-190, get 191-193, list
/// 194-196, remove 197-199) on `ino`; arguments from the second on.
fn xattr_of(s: &mut Server, pid: i32, c: &mut Call, ino: Ino) -> Result<i64, i64> {
    use keep_workhorse::xattr;
    let op = (c.nr - 188) / 3;
    let (name_va, a2, a3) = (c.args[1], c.args[2], s.arg(pid, c, 3));
    let f = fs();
    if f.get(ino).stored.is_some() {
        return Err(EOPNOTSUPP);
    }
    let name = if op == 2 {
        Vec::new()
    } else {
        match s.proc(pid).mm.read_cstr(name_va, xattr::NAME_MAX) {
            Err(ENAMETOOLONG) => return Err(ERANGE),
            r => r?,
        }
    };
    let n = f.get(ino);
    let cred = &s.proc(pid).cred;
    let access = xattr::Access {
        root: cred.root(),
        plain: matches!(n.mode & vfs::S_IFMT, vfs::S_IFREG | vfs::S_IFDIR),
        may_read: cred.may(n.uid, n.gid, n.mode, perm::MAY_READ, false),
        may_write: cred.may(n.uid, n.gid, n.mode, perm::MAY_WRITE, false),
    };
    let empty = xattr::Xattrs::default();
    match op {
        0 => {
            let flags = s.arg(pid, c, 4) as u32;
            xattr::space(&name)?;
            if a3 as usize > xattr::SIZE_MAX {
                return Err(E2BIG);
            }
            let mut value = alloc::vec![0u8; a3 as usize];
            s.proc(pid).mm.read(a2, &mut value)?;
            let budget = vfs::XATTR_BUDGET.saturating_sub(f.xattr_bytes);
            let x = f.get_mut(ino).xattrs.get_or_insert_with(Default::default);
            let grew = x.set(&name, &value, flags, access, budget)?;
            f.xattr_bytes = (f.xattr_bytes as isize + grew) as usize;
            f.changed(ino, false, crate::sys::realtime_ns());
            Ok(0)
        }
        1 => {
            let x = f.get(ino).xattrs.as_deref().unwrap_or(&empty);
            let v = x.get(&name, access, a3 as usize)?;
            if a3 != 0 {
                s.proc(pid).mm.write(a2, v)?;
            }
            Ok(v.len() as i64)
        }
        2 => {
            let x = f.get(ino).xattrs.as_deref().unwrap_or(&empty);
            let v = x.list(access, a2 as usize)?;
            if a2 != 0 {
                s.proc(pid).mm.write(name_va, &v)?;
            }
            Ok(v.len() as i64)
        }
        _ => {
            let mut none = xattr::Xattrs::default();
            let x = f.get_mut(ino).xattrs.as_deref_mut().unwrap_or(&mut none);
            let freed = x.remove(&name, access)?;
            f.xattr_bytes -= freed;
            f.changed(ino, false, crate::sys::realtime_ns());
            Ok(0)
        }
    }
}

pub fn openat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mode = s.arg(pid, c, 3);
    ret(open_at(s, pid, c.args[0], c.args[1], c.args[2], mode))
}

/// st_dev of what is under /data on the disk (the rest is device 1): df
/// and find tell file systems apart by it.
const DATA_DEV: u64 = 0x0802;

pub(crate) fn stat_ino(ino: Ino) -> [u8; Stat::BYTES] {
    let f = fs();
    let n = f.get(ino);
    Stat {
        dev: if n.stored.is_some() { DATA_DEV } else { 1 },
        uid: n.uid,
        gid: n.gid,
        atime: n.times.atime,
        mtime: n.times.mtime,
        ctime: n.times.ctime,
        ..Stat::new(n.mode, ino as u64 + 2, n.nlink as u64, f.size(ino), 0)
    }
    .to_bytes()
}

pub(crate) fn stat_desc(d: &Desc) -> [u8; Stat::BYTES] {
    match &d.borrow().kind {
        Kind::File { ino } | Kind::Dir { ino } => stat_ino(*ino),
        Kind::Console => Stat::new(0o020620, 1, 1, 0, makedev(5, 1)).to_bytes(),
        Kind::Null => Stat::new(0o020666, 2, 1, 0, makedev(1, 3)).to_bytes(),
        Kind::Pipe(_, Some(ino)) => stat_ino(*ino),
        Kind::Pipe(_, None) => Stat::new(0o010600, 3, 1, 0, 0).to_bytes(),
        Kind::Generated(b) => Stat::new(0o100444, 4, 1, b.len() as u64, 0).to_bytes(),
        Kind::Object(o) => {
            let (mode, rdev) = o.borrow().stat();
            Stat::new(mode, 5, 1, 0, rdev).to_bytes()
        }
    }
}

pub(crate) fn stat_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, buf: u64, flags: u64) -> Result<i64, i64> {
    let bytes = if flags & AT_EMPTY_PATH != 0 && s.proc(pid).mm.read_cstr(path, 1)?.is_empty() {
        if dirfd as i32 as i64 == AT_FDCWD {
            stat_ino(s.proc(pid).cwd)
        } else {
            stat_desc(&desc(s, pid, dirfd)?)
        }
    } else {
        let path = s.path(pid, path)?;
        let base = s.dirfd(pid, dirfd)?;
        if let Some(r) = super::procfs::stat(s, pid, &path, flags & AT_SYMLINK_NOFOLLOW == 0) {
            s.proc(pid).mm.write(buf, &r?)?;
            return Ok(0);
        }
        if let Some(r) = super::pty::stat(&path) {
            s.proc(pid).mm.write(buf, &r?)?;
            return Ok(0);
        }
        match path.as_str() {
            "/dev/null" => Stat::new(0o020666, 2, 1, 0, makedev(1, 3)).to_bytes(),
            "/dev/tty" | "/dev/console" => Stat::new(0o020620, 1, 1, 0, makedev(5, 1)).to_bytes(),
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
        // (name, inode number, d_type)
        let list: Vec<(String, u64, u8)> = match &d.kind {
            Kind::Dir { ino } => {
                let ino = *ino;
                let f = fs();
                let Node::Dir { entries, parent } = &f.get(ino).node else { return Err(ENOTDIR) };
                // DT_* is the file type's S_IF* bits (a FIFO 1, a socket 12).
                let ty = |i: Ino| ((f.get(i).mode & vfs::S_IFMT) >> 12) as u8;
                let mut list = alloc::vec![(String::from("."), ino as u64 + 2, 4), (String::from(".."), *parent as u64 + 2, 4)];
                list.extend(entries.iter().map(|(n, i)| (n.clone(), *i as u64 + 2, ty(*i))));
                list
            }
            Kind::Object(o) => {
                let mut list = alloc::vec![(String::from("."), 1, 4), (String::from(".."), 1, 4)];
                list.extend(o.borrow().entries().ok_or(ENOTDIR)?);
                list
            }
            _ => return Err(ENOTDIR),
        };
        let cap = (c.args[2] as usize).min(IO_CHUNK);
        let mut out = Vec::new();
        let mut pos = d.pos as usize;
        while let Some((name, i, ty)) = list.get(pos) {
            let name = keep_workhorse::bytenames::to_bytes(name);
            let reclen = (19 + name.len() + 1).div_ceil(8) * 8;
            if out.len() + reclen > cap {
                if out.is_empty() {
                    return Err(EINVAL);
                }
                break;
            }
            let ty = *ty;
            let start = out.len();
            out.extend_from_slice(&i.to_le_bytes());
            out.extend_from_slice(&(pos as u64 + 1).to_le_bytes());
            out.extend_from_slice(&(reclen as u16).to_le_bytes());
            out.push(ty);
            out.extend_from_slice(&name);
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

pub(crate) fn mkdir_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let umask = s.proc(pid).umask;
    let f = fs();
    let (dir, name) = f.parent(base, &path)?;
    f.mkdir(dir, name, mode as u32 & !umask)?;
    Ok(0)
}

/// mknod and mknodat: a regular file or a FIFO (a named pipe: fifo.rs).
/// Devices and sockets are not made this way here (EPERM).
pub(crate) fn mknod_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let umask = s.proc(pid).umask;
    let ty = match mode as u32 & vfs::S_IFMT {
        0 | vfs::S_IFREG => vfs::S_IFREG,
        vfs::S_IFIFO => vfs::S_IFIFO,
        0o020000 | 0o060000 | 0o140000 => return Err(EPERM), // character, block, socket
        _ => return Err(EINVAL),
    };
    let f = fs();
    let (dir, name) = f.parent(base, &path)?;
    f.create(dir, name, Node::File(Data::Pages(Vec::new(), 0)), ty | (mode as u32 & 0o7777 & !umask))?;
    Ok(0)
}

pub fn mknod(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mknod_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1]))
}

pub fn mknodat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mknod_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

pub fn mkdir(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mkdir_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1]))
}

pub fn mkdirat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(mkdir_at(s, pid, c.args[0], c.args[1], c.args[2]))
}

pub(crate) fn unlink_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, flags: u64) -> Result<i64, i64> {
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

pub(crate) fn rename_at(s: &mut Server, pid: i32, olddir: u64, old: u64, newdir: u64, new: u64) -> Result<i64, i64> {
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

pub(crate) fn readlink_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, buf: u64, size: u64) -> Result<i64, i64> {
    let raw = s.proc(pid).mm.read_cstr(path, PATH_MAX)?;
    let proc_link = core::str::from_utf8(&raw).ok().and_then(|p| {
        super::procfs::readlink_self(s, pid, p).map(Ok).or_else(|| super::procfs::readlink(s, pid, p))
    });
    let target = if raw == b"/proc/self/exe" {
        s.proc(pid).exe.clone()
    } else if let Some(t) = proc_link {
        t?
    } else {
        let path = keep_workhorse::bytenames::from_bytes(&raw);
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
    let target = keep_workhorse::bytenames::to_bytes(&target);
    let n = target.len().min(size as usize);
    s.proc(pid).mm.write(buf, &target[..n])?;
    Ok(n as i64)
}

pub fn readlink(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(readlink_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], c.args[2]))
}

pub fn readlinkat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let size = s.arg(pid, c, 3);
    ret(readlink_at(s, pid, c.args[0], c.args[1], c.args[2], size))
}

/// access and faccessat: `mode` (R_OK 4, W_OK 2, X_OK 1; F_OK 0) judged by
/// the real ids, or with AT_EACCESS (0x200) the effective ones.
pub(crate) fn access_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64, flags: u64) -> Result<i64, i64> {
    if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    if path == "/dev/null" || path == "/dev/tty" {
        return Ok(0);
    }
    if let Some(r) = super::procfs::stat(s, pid, &path, true) {
        return r.map(|_| 0);
    }
    let f = fs();
    let ino = f.resolve(base, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?;
    let n = f.get(ino);
    let cred: &Cred = &s.proc(pid).cred;
    if mode != 0 && !cred.may(n.uid, n.gid, n.mode, mode as u32, flags & AT_EACCESS == 0) {
        return Err(EACCES);
    }
    Ok(0)
}

pub fn access(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(access_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], 0))
}

pub fn faccessat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = if c.nr == 439 { s.arg(pid, c, 3) } else { 0 };
    ret(access_at(s, pid, c.args[0], c.args[1], c.args[2], flags))
}

pub fn getcwd(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let p = s.proc(pid);
        let mut path = keep_workhorse::bytenames::to_bytes(&fs().path_of(p.cwd));
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

pub(crate) fn truncate_ino(ino: Ino, len: u64) -> Result<i64, i64> {
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
        if fs().is_dir(ino) {
            return Err(EISDIR);
        }
        fs().may(ino, perm::MAY_WRITE)?;
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

pub(crate) fn link_at(s: &mut Server, pid: i32, olddir: u64, old: u64, newdir: u64, new: u64) -> Result<i64, i64> {
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
    if f.lookup(dir, name).is_ok() {
        return Err(EEXIST);
    }
    let n = f.get(ino);
    if !s.proc(pid).cred.may_hardlink(n.uid, n.gid, n.mode) {
        return Err(EPERM);
    }
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

pub(crate) fn symlink_at(s: &mut Server, pid: i32, target: u64, dirfd: u64, path: u64) -> Result<i64, i64> {
    let target = s.proc(pid).mm.read_cstr(target, PATH_MAX)?;
    let target = keep_workhorse::bytenames::from_bytes(&target);
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

/// chmod of `ino` by `cred`: its owner or root (EPERM), the bits
/// perm::Cred::chmod keeps.
pub(crate) fn chmod_ino(cred: &Cred, ino: Ino, mode: u64) -> Result<i64, i64> {
    let f = fs();
    let n = f.get(ino);
    let mode = cred.chmod(n.uid, n.gid, mode as u32).map_err(|_| EPERM)?;
    f.chmod(ino, mode).map(|_| 0)
}

pub(crate) fn chmod_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, mode: u64) -> Result<i64, i64> {
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let ino = fs().resolve(base, &path, true)?;
    chmod_ino(&s.proc(pid).cred, ino, mode)
}

/// chown of `ino` (uid, gid: -1 leaves it) by `cred`: perm::Cred::chown's
/// rules (EPERM).
fn chown_ino(cred: &Cred, ino: Ino, uid: u64, gid: u64) -> Result<i64, i64> {
    let f = fs();
    let n = f.get(ino);
    let (u, g, m) = cred.chown(n.uid, n.gid, n.mode, uid as u32, gid as u32).map_err(|_| EPERM)?;
    f.chown(ino, u, g, m);
    Ok(0)
}

/// chown, lchown and fchownat (AT_SYMLINK_NOFOLLOW; AT_EMPTY_PATH with an
/// empty path: the descriptor's file).
pub(crate) fn chown_at(s: &mut Server, pid: i32, dirfd: u64, path: u64, uid: u64, gid: u64, flags: u64) -> Result<i64, i64> {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(EINVAL);
    }
    if flags & AT_EMPTY_PATH != 0 && matches!(s.proc(pid).mm.read_cstr(path, 1), Ok(v) if v.is_empty()) {
        return fchown_fd(s, pid, dirfd, uid, gid);
    }
    let path = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    let ino = fs().resolve(base, &path, flags & AT_SYMLINK_NOFOLLOW == 0)?;
    chown_ino(&s.proc(pid).cred, ino, uid, gid)
}

fn fchown_fd(s: &mut Server, pid: i32, fd: u64, uid: u64, gid: u64) -> Result<i64, i64> {
    let d = desc(s, pid, fd)?;
    let ino = match d.borrow().kind {
        Kind::File { ino } | Kind::Dir { ino } | Kind::Pipe(_, Some(ino)) => ino,
        _ => return Err(EINVAL),
    };
    chown_ino(&s.proc(pid).cred, ino, uid, gid)
}

pub fn chown(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = if c.nr == 94 { AT_SYMLINK_NOFOLLOW } else { 0 };
    ret(chown_at(s, pid, AT_FDCWD as u64, c.args[0], c.args[1], c.args[2], flags))
}

pub fn fchownat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let gid = s.arg(pid, c, 3);
    let flags = s.arg(pid, c, 4);
    ret(chown_at(s, pid, c.args[0], c.args[1], c.args[2], gid, flags))
}

pub fn fchown(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    ret(fchown_fd(s, pid, c.args[0], c.args[1], c.args[2]))
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
            Kind::File { ino } | Kind::Dir { ino } => chmod_ino(&s.proc(pid).cred, ino, c.args[1]),
            _ => Err(EINVAL),
        }
    })();
    ret(r)
}

/// struct statfs of `ino`'s file system: the store on the disk for what is
/// under /data (its capacity and what is free of it), else memory.
pub(crate) fn statfs_bytes(ino: Option<Ino>) -> [u8; 120] {
    // struct statfs: type, bsize, blocks, bfree, bavail, files, ffree
    // (longs), fsid (2 ints), namelen, frsize, flags, spare[4].
    let mut b = [0u8; 120];
    let words = match ino.and_then(|i| fs().statfs(i)) {
        // (EXT2_SUPER_MAGIC: it is a disk file system.)
        Some((total, free)) => [0xef53u64, 4096, total, free, free, 1 << 16, 1 << 16],
        None => {
            let free = crate::frames::available();
            let total = keep_abi::KERNEL.info(keep_abi::info::MEM_TOTAL).map(|v| v / 4096).unwrap_or(free).max(free);
            [0x0102_1994u64, 4096, total, free, free, 1 << 20, 1 << 20]
        }
    };
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
        let ino = fs().resolve(s.proc(pid).cwd, &path, true)?;
        s.proc(pid).mm.write(c.args[1], &statfs_bytes(Some(ino))).map(|_| 0)
    })();
    ret(r)
}

pub fn fstatfs(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let ino = match desc(s, pid, c.args[0])?.borrow().kind {
            Kind::File { ino } | Kind::Dir { ino } => Some(ino),
            _ => None,
        };
        s.proc(pid).mm.write(c.args[1], &statfs_bytes(ino)).map(|_| 0)
    })();
    ret(r)
}

/// The inode a utime-like call names: `path` from `dirfd`, or with a null
/// path the descriptor `dirfd` itself (futimens).  The devices and /proc
/// keep no times: Ok(None), and the call succeeds as on a file system
/// that ignores them.
fn times_target(s: &mut Server, pid: i32, dirfd: u64, path: u64, follow: bool) -> Result<Option<Ino>, i64> {
    if path == 0 {
        return Ok(match desc(s, pid, dirfd)?.borrow().kind {
            Kind::File { ino } | Kind::Dir { ino } | Kind::Pipe(_, Some(ino)) => Some(ino),
            _ => None,
        });
    }
    let p = s.path(pid, path)?;
    let base = s.dirfd(pid, dirfd)?;
    if matches!(p.as_str(), "/dev/null" | "/dev/tty" | "/dev/console") {
        return Ok(None);
    }
    if let Some(r) = super::procfs::stat(s, pid, &p, follow) {
        return r.map(|_| None);
    }
    fs().resolve(base, &p, follow).map(Some)
}

/// Sets the times of `ino` (None: now); ctime becomes now.  Under /data
/// they are written to the store at once (EIO if it fails; the times in
/// memory are set either way, as the store's).
fn set_times(ino: Option<Ino>, atime: Option<u64>, mtime: Option<u64>, omit: (bool, bool)) -> Result<(), i64> {
    let Some(ino) = ino else { return Ok(()) };
    let f = fs();
    let now = super::misc::realtime_ns();
    let t = &mut f.get_mut(ino).times;
    if !omit.0 {
        t.atime = atime.unwrap_or(now);
    }
    if !omit.1 {
        t.mtime = mtime.unwrap_or(now);
    }
    t.ctime = now;
    f.store_times(ino, true)
}

/// utime(path, {actime, modtime} in seconds, or null for now).
pub fn utime(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let (a, m) = if c.args[1] == 0 {
            (None, None)
        } else {
            let mm = &mut s.proc(pid).mm;
            let (a, m) = (mm.read_u64(c.args[1])?, mm.read_u64(c.args[1] + 8)?);
            (Some(a.saturating_mul(1_000_000_000)), Some(m.saturating_mul(1_000_000_000)))
        };
        let ino = times_target(s, pid, AT_FDCWD as u64, c.args[0], true)?;
        set_times(ino, a, m, (false, false))?;
        Ok(0)
    })();
    ret(r)
}

/// utimes(path, two struct timeval, or null for now).
pub fn utimes(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let mut t = [None, None];
        if c.args[1] != 0 {
            for (i, v) in t.iter_mut().enumerate() {
                let mm = &mut s.proc(pid).mm;
                let (sec, usec) = (mm.read_u64(c.args[1] + i as u64 * 16)?, mm.read_u64(c.args[1] + i as u64 * 16 + 8)?);
                if usec >= 1_000_000 || (sec as i64) < 0 {
                    return Err(EINVAL);
                }
                *v = Some(sec.saturating_mul(1_000_000_000) + usec * 1000);
            }
        }
        let ino = times_target(s, pid, AT_FDCWD as u64, c.args[0], true)?;
        set_times(ino, t[0], t[1], (false, false))?;
        Ok(0)
    })();
    ret(r)
}

/// utimensat(dirfd, path, two struct timespec or null, flags): each time
/// may be UTIME_NOW or UTIME_OMIT; a null path names the descriptor
/// (futimens).  Times before 1970 are refused (EINVAL): the server keeps
/// them unsigned.
pub fn utimensat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const UTIME_NOW: u64 = (1 << 30) - 1;
    const UTIME_OMIT: u64 = (1 << 30) - 2;
    let flags = s.arg(pid, c, 3);
    let r = (|| {
        if flags & !AT_SYMLINK_NOFOLLOW != 0 {
            return Err(EINVAL);
        }
        let mut t = [None, None];
        let mut omit = [false, false];
        if c.args[2] != 0 {
            for i in 0..2 {
                let mm = &mut s.proc(pid).mm;
                let at = c.args[2] + i as u64 * 16;
                let (sec, nsec) = (mm.read_u64(at)?, mm.read_u64(at + 8)?);
                match nsec {
                    UTIME_NOW => {}
                    UTIME_OMIT => omit[i] = true,
                    n if n < 1_000_000_000 && (sec as i64) >= 0 => t[i] = Some(sec.saturating_mul(1_000_000_000) + n),
                    _ => return Err(EINVAL),
                }
            }
        }
        let ino = times_target(s, pid, c.args[0], c.args[1], flags & AT_SYMLINK_NOFOLLOW == 0)?;
        if !(omit[0] && omit[1]) {
            set_times(ino, t[0], t[1], (omit[0], omit[1]))?;
        }
        Ok(0)
    })();
    ret(r)
}

/// fsync, fdatasync, syncfs: a file or directory under /data has the block
/// server FLUSH (every change was already acknowledged by the disk; FLUSH
/// makes it durable past the device's cache); anything else is in memory.
pub fn fsync(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let ino = match desc(s, pid, c.args[0])?.borrow().kind {
            Kind::File { ino } | Kind::Dir { ino } => Some(ino),
            _ => return Ok(0),
        };
        fs().flush(ino).map(|_| 0)
    })();
    ret(r)
}

/// sync: FLUSH of the store, if there is one.
pub fn sync(_s: &mut Server, _pid: i32, _c: &mut Call) -> Out {
    let _ = fs().flush(None);
    Out::Ret(0)
}

/// posix_fadvise (fadvise64): the advice is checked and has nothing to do
/// (the files are in memory or the store's cache already): EBADF for a
/// closed descriptor, ESPIPE for a pipe, EINVAL for advice outside
/// POSIX_FADV_NORMAL..POSIX_FADV_NOREUSE (0..5) or a negative length.
pub fn fadvise64(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let d = desc(s, pid, c.args[0])?;
        if matches!(d.borrow().kind, Kind::Pipe(..)) {
            return Err(ESPIPE);
        }
        let advice = s.arg(pid, c, 3);
        if advice > 5 || (c.args[2] as i64) < 0 {
            return Err(EINVAL);
        }
        Ok(0)
    })();
    ret(r)
}

/// fallocate(fd, mode, offset, len): mode 0 makes the file at least
/// offset + len bytes long (the new bytes read as zeros); keeping the size
/// (FALLOC_FL_KEEP_SIZE) has nothing to reserve and succeeds; punching or
/// collapsing holes is EOPNOTSUPP.  EBADF without write access, ESPIPE for
/// a pipe, ENODEV for anything but a regular file, EINVAL for a negative
/// offset or a length of 0 or less, EFBIG past the largest file offset.
pub fn fallocate(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const FALLOC_FL_KEEP_SIZE: u64 = 1;
    let r = (|| {
        let (mode, off, len) = (c.args[1], c.args[2] as i64, s.arg(pid, c, 3) as i64);
        let d = desc(s, pid, c.args[0])?;
        let d = d.borrow();
        if off < 0 || len <= 0 {
            return Err(EINVAL);
        }
        if !d.writable() {
            return Err(EBADF);
        }
        let ino = match d.kind {
            Kind::File { ino } => ino,
            Kind::Pipe(..) => return Err(ESPIPE),
            Kind::Dir { .. } => return Err(EISDIR),
            _ => return Err(ENODEV),
        };
        if mode & !FALLOC_FL_KEEP_SIZE != 0 {
            return Err(EOPNOTSUPP);
        }
        let end = off.checked_add(len).ok_or(EFBIG)? as u64;
        if mode == 0 && end > fs().size(ino) {
            truncate_ino(ino, end)?;
        }
        Ok(0)
    })();
    ret(r)
}
