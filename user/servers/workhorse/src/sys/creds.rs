//! A process's user and group ids: the get*, set* and groups calls, by
//! keep_workhorse::perm's rules (EPERM for what a non-root caller may not
//! set).  Each thread's own, as the Linux system calls are; glibc makes a
//! change every thread's (it signals them to make it too).

use super::*;
use keep_workhorse::perm::Cred;

/// The most supplementary groups setgroups keeps (Linux's NGROUPS_MAX is
/// 65536; the server bounds what it holds per thread).
const MAX_GROUPS: usize = 256;

fn cred(s: &mut Server, pid: i32) -> &mut Cred {
    &mut s.proc(pid).cred
}

fn set(r: Result<(), ()>) -> Out {
    Out::Ret(if r.is_ok() { 0 } else { -EPERM })
}

pub fn getuid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(cred(s, pid).ruid as i64)
}

pub fn geteuid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(cred(s, pid).euid as i64)
}

pub fn getgid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(cred(s, pid).rgid as i64)
}

pub fn getegid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(cred(s, pid).egid as i64)
}

pub fn setuid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setuid(c.args[0] as u32))
}

pub fn setgid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setgid(c.args[0] as u32))
}

pub fn setreuid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setreuid(c.args[0] as u32, c.args[1] as u32))
}

pub fn setregid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setregid(c.args[0] as u32, c.args[1] as u32))
}

pub fn setresuid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setresuid(c.args[0] as u32, c.args[1] as u32, c.args[2] as u32))
}

pub fn setresgid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    set(cred(s, pid).setresgid(c.args[0] as u32, c.args[1] as u32, c.args[2] as u32))
}

/// getresuid and getresgid (nr 120): the three ids written to the three
/// pointers.
pub fn getresid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let ids = if c.nr == 120 { [p.cred.rgid, p.cred.egid, p.cred.sgid] } else { [p.cred.ruid, p.cred.euid, p.cred.suid] };
    let mm = &mut p.mm;
    let r = (0..3).try_for_each(|i| mm.write_u32(c.args[i], ids[i]));
    ret(r.map(|_| 0))
}

/// getgroups(size, list): the count with size 0, EINVAL when size is too
/// small.
pub fn getgroups(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let n = p.cred.groups.len();
    let size = c.args[0] as i32;
    if size < 0 {
        return Out::Ret(-EINVAL);
    }
    if size == 0 {
        return Out::Ret(n as i64);
    }
    if (size as usize) < n {
        return Out::Ret(-EINVAL);
    }
    let bytes: Vec<u8> = p.cred.groups.iter().flat_map(|g| g.to_le_bytes()).collect();
    ret(p.mm.write(c.args[1], &bytes).map(|_| n as i64))
}

/// setgroups(size, list): root only (EPERM), at most MAX_GROUPS (EINVAL).
pub fn setgroups(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let n = c.args[0] as i32;
        if n < 0 || n as usize > MAX_GROUPS {
            return Err(EINVAL);
        }
        let p = s.proc(pid);
        if !p.cred.root() {
            return Err(EPERM);
        }
        let mut b = alloc::vec![0u8; n as usize * 4];
        p.mm.read(c.args[1], &mut b)?;
        p.cred.groups = b.chunks(4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]])).collect();
        Ok(0)
    })();
    ret(r)
}
