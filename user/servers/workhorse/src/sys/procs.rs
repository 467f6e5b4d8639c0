//! Processes and signals: ids, fork/vfork/clone, execve, wait4, exit,
//! kill, signal actions and masks, arch_prctl, prctl.

use super::*;
use crate::linux::signal::SIGCHLD;
use crate::linux::wait::{WALL_CLONE_NOTHREAD, WCONTINUED, WEXITED, WNOHANG, WNOWAIT, WSTOPPED, WUNTRACED};

pub fn getpid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(s.proc(pid).tgid as i64)
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
    let me = s.proc(pid).tgid;
    let my_sid = s.proc(pid).sid;
    if pgid < 0 {
        return Out::Ret(-EINVAL);
    }
    match s.procs.get(&target) {
        Some(p) if p.tgid == p.pid && (p.pid == me || p.ppid == me) => {
            // As Linux: a session leader keeps its group, a child of
            // another session is not the caller's to move, and the group
            // is the target's own or one already in the caller's session
            // (else a process could join any group, and leave the one its
            // session's signals reach).
            if p.sid == p.pid || p.sid != my_sid {
                return Out::Ret(-EPERM);
            }
            let exists = s.procs.values().any(|q| q.zombie.is_none() && q.pgid == pgid && q.sid == my_sid);
            if pgid != target && !exists {
                return Out::Ret(-EPERM);
            }
            for t in s.threads_of(target) {
                s.proc(t).pgid = pgid;
            }
            Out::Ret(0)
        }
        _ => Out::Ret(-ESRCH),
    }
}

pub fn setsid(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    let tgid = s.proc(pid).tgid;
    if s.proc(pid).pgid == tgid {
        return Out::Ret(-EPERM);
    }
    for t in s.threads_of(pid) {
        let p = s.proc(t);
        p.sid = tgid;
        p.pgid = tgid;
    }
    Out::Ret(tgid as i64)
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

/// exit_group: the whole process (every thread) ends.
pub fn exit(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    s.terminate(pid, process::exited(c.args[0] as i32));
    Out::Gone
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
    const PR_SET_CHILD_SUBREAPER: u64 = 36;
    const PR_GET_CHILD_SUBREAPER: u64 = 37;
    match c.args[0] {
        // The process's (every thread's copy).
        PR_SET_CHILD_SUBREAPER => {
            let on = c.args[1] != 0;
            for t in s.threads_of(pid) {
                s.proc(t).subreaper = on;
            }
            return Out::Ret(0);
        }
        PR_GET_CHILD_SUBREAPER => {
            let tgid = s.proc(pid).tgid;
            let on = s.proc(tgid).subreaper;
            return ret(s.proc(pid).mm.write_u32(c.args[1], on as u32).map(|_| 0));
        }
        _ => {}
    }
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
    // Process 1 is the server: as Linux's init, it takes no signal it has
    // no handler for (and it has none).
    if target == crate::INIT_PID {
        return Out::Ret(0);
    }
    let my_pgid = s.proc(pid).pgid;
    let me = s.proc(pid).tgid;
    // A thread's id names its process, as in Linux.
    let target = match s.procs.get(&target) {
        Some(p) if target > 0 => p.tgid,
        _ => target,
    };
    let targets: Vec<i32> = s
        .procs
        .values()
        .filter(|p| p.zombie.is_none() && p.pid == p.tgid)
        .filter(|p| match target {
            t if t > 0 => p.pid == t,
            0 => p.pgid == my_pgid,
            -1 => p.pid != me,
            t => p.pgid == -t,
        })
        .map(|p| p.pid)
        .collect();
    if targets.is_empty() {
        return Out::Ret(-ESRCH);
    }
    // Those the caller may signal (perm::Cred::may_signal; SIGCONT within
    // its session): EPERM when there is none.
    let (cred, my_sid) = (&s.procs[&pid].cred, s.procs[&pid].sid);
    if !cred.root() {
        let targets_before = targets.len();
        let allowed: Vec<i32> = targets
            .iter()
            .copied()
            .filter(|t| {
                let q = &s.procs[t];
                cred.may_signal(&q.cred) || (sig == process::SIGCONT && q.sid == my_sid)
            })
            .collect();
        if allowed.is_empty() {
            return Out::Ret(-EPERM);
        }
        if allowed.len() != targets_before {
            return kill_some(s, pid, allowed, sig, target, me, my_pgid);
        }
    }
    kill_some(s, pid, targets, sig, target, me, my_pgid)
}

/// kill's signal to `targets` (all of them permitted).
fn kill_some(s: &mut Server, pid: i32, targets: Vec<i32>, sig: i32, target: i32, me: i32, my_pgid: i32) -> Out {
    if sig == 0 {
        return Out::Ret(0);
    }
    let mine = targets.contains(&me);
    for t in targets {
        if t != me {
            s.post_process(t, sig);
        }
    }
    // The caller's own signal is delivered as this call returns.
    if s.procs.get(&pid).is_some_and(|p| p.keep.is_some()) {
        let me = mine && (target == me || target == 0 || (target < -1 && -target == my_pgid));
        if me {
            s.proc(pid).pending |= 1 << (sig - 1);
        }
        Out::Ret(0)
    } else {
        Out::Gone
    }
}

/// Whether `p` is a child (a process, not a thread) of the thread group
/// `me` (in group `my_pgid`) that a wait for `want` takes: wait4's pid
/// argument (-1 any, 0 the caller's group, N > 0 that child, -G group G).
fn waits_for(p: &Proc, me: i32, my_pgid: i32, want: i32) -> bool {
    p.ppid == me
        && p.pid == p.tgid
        && match want {
            -1 => true,
            0 => p.pgid == my_pgid,
            w if w > 0 => p.pid == w,
            w => p.pgid == -w,
        }
}

/// An ended child's CPU time with that of the children it waited for
/// (what wait4's rusage tells, as Linux's RUSAGE_BOTH).
fn children_cpu(s: &Server, child: i32) -> u64 {
    super::misc::process_cpu(s, child) + s.procs.get(&child).map_or(0, |c| c.cpu_children)
}

/// Reaps a child waited for: its CPU time goes to its parent's children's.
fn reap_child(s: &mut Server, me: i32, child: i32, used: u64) {
    if let Some(l) = s.procs.get_mut(&me) {
        l.cpu_children += used;
    }
    s.reap(child);
}

/// A child matching `matches` with a stop or continue report that
/// `stopped` / `continued` asks for: (pid, wait status).
fn stop_report(s: &Server, matches: impl Fn(&Proc) -> bool, stopped: bool, continued: bool) -> Option<(i32, i32)> {
    s.procs
        .values()
        .filter(|p| matches(p) && p.zombie.is_none())
        .find_map(|p| match p.stop_report {
            Some(st) if st == process::CONTINUED && continued => Some((p.pid, st)),
            Some(st) if st != process::CONTINUED && stopped => Some((p.pid, st)),
            _ => None,
        })
}

/// wait4(pid, status, options, rusage): an ended child (reaped), or with
/// WUNTRACED one that stopped, with WCONTINUED one that continued (each
/// told once).
pub fn wait4(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (want, status, options) = (c.args[0] as i32, c.args[1], c.args[2]);
    let rusage = s.arg(pid, c, 3);
    let my_pgid = s.proc(pid).pgid;
    let me = s.proc(pid).tgid;
    let matches = |p: &Proc| waits_for(p, me, my_pgid, want);
    let zombie = s.procs.values().find(|p| matches(p) && p.zombie.is_some()).map(|p| (p.pid, p.zombie.unwrap()));
    if let Some((child, st)) = zombie {
        let p = s.proc(pid);
        if status != 0
            && let Err(e) = p.mm.write_u32(status, st as u32)
        {
            return Out::Ret(-e);
        }
        let used = children_cpu(s, child);
        let p = s.proc(pid);
        if rusage != 0
            && let Err(e) = p.mm.write(rusage, &super::misc::rusage(used))
        {
            return Out::Ret(-e);
        }
        reap_child(s, me, child, used);
        return Out::Ret(child as i64);
    }
    if let Some((child, st)) = stop_report(s, matches, options & WUNTRACED != 0, options & WCONTINUED != 0) {
        let used = children_cpu(s, child);
        let p = s.proc(pid);
        if status != 0
            && let Err(e) = p.mm.write_u32(status, st as u32)
        {
            return Out::Ret(-e);
        }
        if rusage != 0
            && let Err(e) = p.mm.write(rusage, &super::misc::rusage(used))
        {
            return Out::Ret(-e);
        }
        s.proc(child).stop_report = None;
        return Out::Ret(child as i64);
    }
    if !s.procs.values().any(matches) {
        return Out::Ret(-ECHILD);
    }
    if options & WNOHANG != 0 { Out::Ret(0) } else { Out::Block }
}

/// waitid(idtype, id, infop, options, rusage): as wait4, with the child's
/// end told in a siginfo (SIGCHLD; CLD_EXITED with the exit code, or
/// CLD_KILLED / CLD_DUMPED with the signal); returns 0.  P_ALL, P_PID (id >
/// 0), P_PGID (0: the caller's group) and P_PIDFD (the process a pidfd
/// names; EAGAIN instead of waiting when the pidfd is PIDFD_NONBLOCK).
/// WEXITED finds ended children, WSTOPPED stopped ones (CLD_STOPPED with
/// the signal), WCONTINUED continued ones (CLD_CONTINUED, SIGCONT); WNOWAIT
/// leaves the child (or its stop or continue) to be waited for again; WNOHANG with none ready returns 0 with
/// the siginfo's signo, code, pid, uid and status 0, as Linux writes it.
/// Options outside these, or none of WEXITED, WSTOPPED and WCONTINUED, are
/// EINVAL.
pub fn waitid(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (idtype, id, infop) = (c.args[0], c.args[1] as i32, c.args[2]);
    let options = s.arg(pid, c, 3);
    let rusage = s.arg(pid, c, 4);
    if options & !(WNOHANG | WSTOPPED | WEXITED | WCONTINUED | WNOWAIT | WALL_CLONE_NOTHREAD) != 0
        || options & (WEXITED | WSTOPPED | WCONTINUED) == 0
    {
        return Out::Ret(-EINVAL);
    }
    let my_pgid = s.proc(pid).pgid;
    let me = s.proc(pid).tgid;
    // As wait4's pid argument: -1 any child, N > 0 that one, -G group G.
    let want: i32 = match idtype {
        0 => -1,
        1 if id > 0 => id,
        2 if id >= 0 => -(if id == 0 { my_pgid } else { id }),
        3 if id < 0 => return Out::Ret(-EINVAL),
        3 => match super::pidfd::pidfd_target(s, pid, id as u64) {
            // A pidfd opened PIDFD_NONBLOCK makes a wait for a process
            // still running EAGAIN, as Linux.
            Ok((target, ended, nonblock)) => {
                if nonblock && !ended && options & WNOHANG == 0 && s.procs.get(&target).is_some_and(|p| p.ppid == me) {
                    return Out::Ret(-EAGAIN);
                }
                target
            }
            Err(e) => return Out::Ret(-e),
        },
        _ => return Out::Ret(-EINVAL),
    };
    let matches = |p: &Proc| waits_for(p, me, my_pgid, want);
    if !s.procs.values().any(matches) {
        return Out::Ret(-ECHILD);
    }
    let ended = if options & WEXITED != 0 {
        s.procs.values().find(|p| matches(p) && p.zombie.is_some()).map(|p| (p.pid, p.zombie.unwrap()))
    } else {
        None
    };
    let report = if ended.is_none() {
        stop_report(s, matches, options & WSTOPPED != 0, options & WCONTINUED != 0)
    } else {
        None
    };
    if ended.is_none() && report.is_none() && options & WNOHANG == 0 {
        return Out::Block;
    }
    // si_signo, si_errno, si_code, (padding), si_pid, si_uid, si_status:
    // what Linux's waitid writes.
    let mut info = [0u32; 7];
    if let Some((child, st)) = ended {
        let (code, status) = match (st & 0x7f, st & 0x80) {
            (0, _) => (1, (st >> 8) & 0xff),   // CLD_EXITED
            (sig, 0) => (2, sig),              // CLD_KILLED
            (sig, _) => (3, sig),              // CLD_DUMPED
        };
        info = [SIGCHLD as u32, 0, code as u32, 0, child as u32, 0, status as u32];
    }
    if let Some((child, st)) = report {
        let (code, sig) = if st == process::CONTINUED {
            (process::CLD_CONTINUED, process::SIGCONT)
        } else {
            (process::CLD_STOPPED, (st >> 8) & 0xff)
        };
        info = [SIGCHLD as u32, 0, code as u32, 0, child as u32, 0, sig as u32];
    }
    let p = s.proc(pid);
    if infop != 0 {
        let mut bytes = [0u8; 28];
        for (i, w) in info.iter().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        if let Err(e) = p.mm.write(infop, &bytes) {
            return Out::Ret(-e);
        }
    }
    let used = ended.or(report).map_or(0, |(child, _)| children_cpu(s, child));
    let p = s.proc(pid);
    if rusage != 0
        && let Err(e) = p.mm.write(rusage, &super::misc::rusage(used))
    {
        return Out::Ret(-e);
    }
    if let Some((child, _)) = ended
        && options & WNOWAIT == 0
    {
        reap_child(s, me, child, used);
    }
    if let Some((child, _)) = report
        && options & WNOWAIT == 0
    {
        s.proc(child).stop_report = None;
    }
    Out::Ret(0)
}

/// fork, vfork and clone: a new process with a copy of the caller's memory
/// and descriptors, resuming where the caller does with rax = 0.
pub(crate) fn spawn_child(s: &mut Server, pid: i32, stack: u64, tls: Option<u64>, vfork: bool) -> Result<i32, i64> {
    if s.procs.len() >= MAX_PROCS {
        return Err(EAGAIN);
    }
    let child = s.new_pid();
    let parent = s.proc(pid);
    let keep = Keep::create(child, &parent.name)?;
    let setup = (|| {
        let mm = crate::shared::Shared::new(parent.mm.fork(keep.aspace)?);
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
        // A copy of the memory, descriptors, signal actions and alternate
        // signal stack.
        let mut c = Proc::inherit(child, parent.tgid, parent, fs_base)?;
        c.mm = mm;
        c.fds = crate::shared::Shared::new((*parent.fds).clone());
        c.sigactions = crate::shared::Shared::new(*parent.sigactions);
        c.altstack = parent.altstack;
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
        let p = s.proc(pid);
        p.blocked = Some(Blocked::Vfork(child));
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

/// clone (and clone3) without CLONE_VM, or with CLONE_VFORK: a copied
/// address space (threads.rs does the rest).
pub(crate) fn fork_like(s: &mut Server, pid: i32, _: &mut Call, a: &super::threads::CloneArgs) -> Out {
    use super::threads::{CLONE_CHILD_SETTID, CLONE_PARENT, CLONE_PARENT_SETTID, CLONE_SETTLS, CLONE_VFORK};
    let (flags, stack, ptid, ctid, tls) = (a.flags, a.sp, a.ptid, a.ctid, a.tls);
    let vfork = flags & CLONE_VFORK != 0;
    let tls = (flags & CLONE_SETTLS != 0).then_some(tls);
    let child = match spawn_child(s, pid, stack, tls, vfork) {
        Ok(c) => c,
        Err(e) => return Out::Ret(-e),
    };
    if flags & CLONE_PARENT != 0 {
        // The caller's sibling: its parent waits for it.
        let ppid = s.proc(pid).ppid;
        s.proc(child).ppid = ppid;
    }
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
pub(crate) fn string_array(p: &mut Proc, mut va: u64) -> Result<Vec<Vec<u8>>, i64> {
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
    let dir = s.proc(pid).cwd;
    match s.path(pid, c.args[0]) {
        Ok(path) => exec_common(s, pid, dir, path, None, c.args[1], c.args[2]),
        Err(e) => Out::Ret(-e),
    }
}

/// execveat(dirfd, path, argv, envp, flags): execve of `path` from
/// directory `dirfd` (AT_FDCWD: the working directory; an absolute path
/// ignores it), or with AT_EMPTY_PATH and an empty path of the file open as
/// `dirfd` (fexecve; anything but a regular file is EACCES).
/// AT_SYMLINK_NOFOLLOW: a symbolic link as the last component is ELOOP.
/// Other flags EINVAL; an empty path without AT_EMPTY_PATH ENOENT.
pub fn execveat(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (dirfd, pathp, argv) = (c.args[0], c.args[1], c.args[2]);
    let envp = s.arg(pid, c, 3);
    let flags = s.arg(pid, c, 4);
    let r = (|| {
        if flags & !(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0 {
            return Err(EINVAL);
        }
        let raw = s.proc(pid).mm.read_cstr(pathp, PATH_MAX)?;
        if raw.is_empty() {
            if flags & AT_EMPTY_PATH == 0 {
                return Err(ENOENT);
            }
            let fd = dirfd as i32;
            if fd as i64 == AT_FDCWD {
                return Err(EACCES); // the working directory: not a file
            }
            let d = super::io::desc(s, pid, fd as u64)?;
            let ino = match d.borrow().kind {
                Kind::File { ino } => ino,
                _ => return Err(EACCES),
            };
            let exe = super::procfs::fd_name(&d);
            let dir = s.proc(pid).cwd;
            return Ok((dir, alloc::format!("/dev/fd/{fd}"), Some((ino, exe))));
        }
        let path = s.path(pid, pathp)?;
        let dir = if path.starts_with('/') { vfs::ROOT } else { s.dirfd(pid, dirfd)? };
        if flags & AT_SYMLINK_NOFOLLOW != 0 {
            let f = fs();
            if matches!(f.get(f.resolve(dir, &path, false)?).node, Node::Symlink(_)) {
                return Err(ELOOP);
            }
        }
        Ok((dir, path, None))
    })();
    match r {
        Ok((dir, path, file)) => exec_common(s, pid, dir, path, file, argv, envp),
        Err(e) => Out::Ret(-e),
    }
}

/// execve and execveat once the program is named (exec::exec_at).
fn exec_common(s: &mut Server, pid: i32, dir: Ino, path: String, file: Option<(Ino, String)>, argv: u64, envp: u64) -> Out {
    let r = (|| {
        let p = s.proc(pid);
        let argv = string_array(p, argv)?;
        let envp = string_array(p, envp)?;
        let cmdline: Vec<u8> = argv.iter().flat_map(|a| a.iter().copied().chain([0])).collect();
        // The other threads end first (Linux waits until the new program
        // is loaded: here a failed execve has ended them too), and a thread
        // takes its process's pid (the new Keep process's messages carry it).
        let tgid = s.proc(pid).tgid;
        for t in s.threads_of(pid) {
            if t != pid && t != tgid {
                s.remove_thread(t);
            }
        }
        if tgid != pid {
            s.end_thread(tgid);
        }
        let mut p = s.procs.remove(&pid).unwrap();
        p.pid = tgid;
        let r = crate::exec::exec_at(s, &mut p, dir, &path, file, argv, envp);
        let at = if r.is_ok() { tgid } else { pid };
        p.pid = at;
        if at != pid {
            // The leader's place: its slot goes, the process is the caller.
            if let Some(leader) = s.procs.remove(&tgid) {
                crate::env::env().free_slot(leader.ret_slot);
                p.cpu_done += leader.cpu_done + leader.cpu_ns();
                p.cpu_children += leader.cpu_children;
                p.pidfd_state = leader.pidfd_state.clone();
            }
        }
        s.procs.insert(at, p);
        r?;
        s.proc(at).cmdline = cmdline;
        if s.proc(at).keep.as_ref().unwrap().process.start().is_err() {
            return Err(ENOMEM);
        }
        s.wake_vfork_parent(at);
        Ok(0)
    })();
    match r {
        Ok(_) => Out::Gone,
        Err(e) => Out::Ret(-e),
    }
}
