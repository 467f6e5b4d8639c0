//! Threads: clone with CLONE_VM (a thread, or a process sharing the
//! caller's memory), clone3, gettid, set_tid_address, exit of one thread,
//! tkill and tgkill.  A thread is a Keep process in its group's address
//! space; its `Proc` shares the group's memory, descriptors (CLONE_FILES)
//! and signal actions (CLONE_SIGHAND) through `Shared` handles.

use super::*;
use crate::shared::Shared;
use crate::linux::sched::{PRIO_PGRP, PRIO_PROCESS, PRIO_USER, SCHED_BATCH, SCHED_DEADLINE, SCHED_FIFO, SCHED_IDLE, SCHED_OTHER, SCHED_RESET_ON_FORK, SCHED_RR};
pub(crate) use crate::linux::clone::{CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_FILES, CLONE_PARENT, CLONE_PARENT_SETTID, CLONE_SETTLS, CLONE_SIGHAND, CLONE_THREAD, CLONE_VFORK, CLONE_VM};


/// What a clone or clone3 asked for.
pub(crate) struct CloneArgs {
    pub flags: u64,
    /// The new thread's stack pointer (0: the caller's).
    pub sp: u64,
    pub ptid: u64,
    pub ctid: u64,
    pub tls: u64,
}

/// clone with CLONE_VM and without CLONE_VFORK: a new Keep process in the
/// caller's address space, resuming where the caller does with rax = 0 on
/// its own stack.  With CLONE_THREAD it joins the caller's process.
pub(crate) fn clone_vm(s: &mut Server, pid: i32, a: &CloneArgs) -> Result<i32, i64> {
    let thread = a.flags & CLONE_THREAD != 0;
    // Linux's rules: a thread shares the signal actions, which need the
    // memory.
    if (thread && a.flags & CLONE_SIGHAND == 0) || (a.flags & CLONE_SIGHAND != 0 && a.flags & CLONE_VM == 0) {
        return Err(EINVAL);
    }
    if s.procs.len() >= MAX_PROCS {
        return Err(EAGAIN);
    }
    let tid = s.new_pid();
    let parent = s.proc(pid);
    let keep = Keep::create_thread(tid, &parent.name, parent.mm.aspace)?;
    let setup = (|| {
        let k = parent.keep.as_ref().ok_or(EINVAL)?;
        k.process.read_regs().map_err(|_| EINVAL)?;
        let buf = keep_rt::ipc_buffer();
        let mut r = buf.regs();
        r[reg::RAX as usize] = 0;
        if a.sp != 0 {
            r[reg::RSP as usize] = a.sp;
        }
        let fs_base = if a.flags & CLONE_SETTLS != 0 { a.tls } else { parent.fs_base };
        if fs_base >= mem::GUEST_TOP {
            return Err(EPERM);
        }
        if fs_base != 0 {
            // Through the trampoline, as arch_prctl (docs/workhorse.md).
            r[reg::RCX as usize] = r[reg::RIP as usize];
            r[reg::R11 as usize] = fs_base;
            r[reg::RIP as usize] = mem::TRAMPOLINE;
        }
        buf.set_regs(&r);
        keep.process.write_regs().map_err(|_| EINVAL)?;
        let ppid = if thread || a.flags & CLONE_PARENT != 0 { parent.ppid } else { parent.tgid };
        // The same memory; descriptors and signal actions shared or copied
        // as the flags say; no alternate signal stack (Linux clears it for
        // CLONE_VM without CLONE_VFORK).
        let mut t = Proc::inherit(tid, ppid, parent, fs_base)?;
        t.tgid = if thread { parent.tgid } else { tid };
        t.mm = parent.mm.share();
        t.fds = if a.flags & CLONE_FILES != 0 { parent.fds.share() } else { Shared::new((*parent.fds).clone()) };
        t.sigactions =
            if a.flags & CLONE_SIGHAND != 0 { parent.sigactions.share() } else { Shared::new(*parent.sigactions) };
        if a.flags & CLONE_CHILD_CLEARTID != 0 {
            t.clear_child_tid = a.ctid;
        }
        Ok(t)
    })();
    let mut t = match setup {
        Ok(t) => t,
        Err(e) => {
            keep.destroy_thread();
            return Err(e);
        }
    };
    // The ids are written before the thread runs (it may read them).
    let mm = &mut t.mm;
    if a.flags & CLONE_PARENT_SETTID != 0 {
        let _ = mm.write_u32(a.ptid, tid as u32);
    }
    if a.flags & CLONE_CHILD_SETTID != 0 {
        let _ = mm.write_u32(a.ctid, tid as u32);
    }
    let started = keep.process.start();
    t.keep = Some(keep);
    if started.is_err() {
        t.teardown();
        crate::env::env().free_slot(t.ret_slot);
        return Err(ENOMEM);
    }
    s.procs.insert(tid, t);
    Ok(tid)
}

/// clone3(args, size): struct clone_args { flags, pidfd, child_tid,
/// parent_tid, exit_signal, stack, stack_size, tls, ... }.
pub fn clone3(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (va, size) = (c.args[0], c.args[1]);
    if !(64..=4096).contains(&size) {
        return Out::Ret(-EINVAL);
    }
    let mut w = [0u64; 8];
    for (i, x) in w.iter_mut().enumerate() {
        match s.proc(pid).mm.read_u64(va + 8 * i as u64) {
            Ok(v) => *x = v,
            Err(e) => return Out::Ret(-e),
        }
    }
    let [flags, pidfd, ctid, ptid, exit_signal, stack, stack_size, tls] = w;
    if flags >> 32 != 0 || flags & 0xff != 0 || exit_signal > 64 || pidfd != 0 && flags & 0x1000 != 0 {
        return Out::Ret(-EINVAL);
    }
    let sp = if stack != 0 { stack + stack_size } else { 0 };
    let a = CloneArgs { flags: flags | exit_signal, sp, ptid, ctid, tls };
    clone_with(s, pid, c, a)
}

/// clone(flags, stack, ptid, ctid, tls): threads and shared-memory
/// children here, the rest (fork-like, vfork) in procs.rs.
pub fn clone(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let ctid = s.arg(pid, c, 3);
    let tls = s.arg(pid, c, 4);
    let a = CloneArgs { flags: c.args[0], sp: c.args[1], ptid: c.args[2], ctid, tls };
    clone_with(s, pid, c, a)
}

fn clone_with(s: &mut Server, pid: i32, c: &mut Call, a: CloneArgs) -> Out {
    if a.flags & CLONE_VM != 0 && a.flags & CLONE_VFORK == 0 {
        return ret(clone_vm(s, pid, &a).map(|t| t as i64));
    }
    if a.flags & CLONE_THREAD != 0 {
        return Out::Ret(-EINVAL);
    }
    super::procs::fork_like(s, pid, c, &a)
}

/// sched_yield: the server gives up its own time slice before it answers.
/// Keep's IPC hands the caller's place in the run queue to the server and
/// back with a fresh slice each time, so a thread that loops on system calls
/// would otherwise keep the CPU from the other threads of its priority.
pub fn sched_yield(_: &mut Server, _: i32, _: &mut Call) -> Out {
    let _ = keep_abi::SELF_PROCESS.yield_now();
    Out::Ret(0)
}

/// The thread a sched_*affinity call names (0: the caller).
fn affinity_target(s: &Server, pid: i32, target: u64) -> Result<i32, i64> {
    let t = target as i32;
    match t {
        0 => Ok(pid),
        t if t > 0 && s.procs.contains_key(&t) => Ok(t),
        _ => Err(ESRCH),
    }
}

/// sched_getaffinity(pid, len, mask): Keep gives the workhorse one CPU, so
/// every thread's mask is CPU 0.  The raw call answers the bytes written
/// (a long's worth).
pub fn sched_getaffinity(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (len, mask) = (c.args[1], c.args[2]);
    let r = (|| {
        // Process 1, the server (docs/workhorse.md), runs on CPU 0 too.
        if c.args[0] as i32 != crate::INIT_PID {
            affinity_target(s, pid, c.args[0])?;
        }
        if len < 8 || len % 8 != 0 {
            return Err(EINVAL);
        }
        s.proc(pid).mm.write_u64(mask, 1)?;
        Ok(8)
    })();
    ret(r)
}

/// sched_setaffinity(pid, len, mask): a mask with CPU 0 is accepted (the
/// thread runs there anyway), one without it is EINVAL.
pub fn sched_setaffinity(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (len, mask) = (c.args[1], c.args[2]);
    let r = (|| {
        // Process 1, the server (docs/workhorse.md), runs on CPU 0 too.
        if c.args[0] as i32 != crate::INIT_PID {
            affinity_target(s, pid, c.args[0])?;
        }
        if len == 0 {
            return Err(EINVAL);
        }
        let mut first = [0u8; 1];
        s.proc(pid).mm.read(mask, &mut first)?;
        if first[0] & 1 == 0 {
            return Err(EINVAL);
        }
        Ok(0)
    })();
    ret(r)
}

pub fn gettid(_: &mut Server, pid: i32, _: &mut Call) -> Out {
    Out::Ret(pid as i64)
}

pub fn set_tid_address(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    s.proc(pid).clear_child_tid = c.args[0];
    Out::Ret(pid as i64)
}

/// exit: this thread ends; the process ends with its last thread.
pub fn exit_thread(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let tgid = s.proc(pid).tgid;
    let live = s.procs.values().filter(|p| p.tgid == tgid && p.keep.is_some()).count();
    if live <= 1 {
        s.terminate(pid, process::exited(c.args[0] as i32));
        return Out::Gone;
    }
    s.end_thread(pid);
    Out::Gone
}

impl Server {
    /// Thread `tid` ends while its process goes on: its clear-child-tid
    /// word is zeroed and woken (how pthread_join learns of it), its Keep
    /// process goes; a leader stays (without one) until the process ends.
    pub fn end_thread(&mut self, tid: i32) {
        let Some(p) = self.procs.get_mut(&tid) else { return };
        let ctid = core::mem::take(&mut p.clear_child_tid);
        if ctid != 0 && p.mm.write_u32(ctid, 0).is_ok()
            && let Ok(key) = super::futex::key(self, tid, ctid)
        {
            super::futex::wake(self, key, u32::MAX, 1);
        }
        let p = self.proc(tid);
        if p.pid == p.tgid {
            if let Some(k) = p.keep.take() {
                p.cpu.keep_gone(&k);
                k.destroy_thread();
            }
            p.thread_done = true;
            p.blocked = None;
            p.waits_tty = false;
            p.futex = None;
            let _ = keep_abi::SELF_ASPACE.delete_cap(p.ret_slot);
        } else {
            self.remove_thread(tid);
        }
    }

    /// Removes thread `tid` (not a leader) for good.
    pub fn remove_thread(&mut self, tid: i32) {
        if let Some(mut p) = self.procs.remove(&tid) {
            p.teardown();
            crate::env::env().free_slot(p.ret_slot);
            // Its CPU time stays with the process's.
            if let Some(l) = self.procs.get_mut(&p.tgid) {
                l.cpu_done += p.cpu_ns();
            }
        }
    }

    /// The threads of `tid`'s process, leader first.
    pub fn threads_of(&self, tid: i32) -> Vec<i32> {
        let Some(tgid) = self.procs.get(&tid).map(|p| p.tgid) else { return Vec::new() };
        self.procs.values().filter(|p| p.tgid == tgid).map(|p| p.pid).collect()
    }
}

/// tgkill(tgid, tid, sig): to one thread of one process.
pub fn tgkill(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (tgid, tid, sig) = (c.args[0] as i32, c.args[1] as i32, c.args[2] as i32);
    if tgid <= 0 || tid <= 0 || !(0..=64).contains(&sig) {
        return Out::Ret(-EINVAL);
    }
    match s.procs.get(&tid) {
        Some(p) if p.tgid == tgid && p.keep.is_some() => signal_thread(s, pid, tid, sig),
        _ => Out::Ret(-ESRCH),
    }
}

/// tkill(tid, sig).
pub fn tkill(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (tid, sig) = (c.args[0] as i32, c.args[1] as i32);
    if tid <= 0 || !(0..=64).contains(&sig) {
        return Out::Ret(-EINVAL);
    }
    match s.procs.get(&tid) {
        Some(p) if p.keep.is_some() => signal_thread(s, pid, tid, sig),
        _ => Out::Ret(-ESRCH),
    }
}

fn signal_thread(s: &mut Server, pid: i32, tid: i32, sig: i32) -> Out {
    if sig == 0 {
        return Out::Ret(0);
    }
    if tid == pid {
        // Delivered as this call returns.
        s.proc(pid).pending |= 1 << (sig - 1);
        return Out::Ret(0);
    }
    s.post(tid, sig);
    if s.procs.get(&pid).is_some_and(|p| p.keep.is_some()) { Out::Ret(0) } else { Out::Gone }
}


/// The thread a sched_* call names: 0 the caller; a negative pid EINVAL,
/// one that does not exist ESRCH.
fn sched_target(s: &Server, pid: i32, target: u64) -> Result<i32, i64> {
    match target as i64 {
        t if t < 0 || t > i32::MAX as i64 => Err(EINVAL),
        _ => affinity_target(s, pid, target),
    }
}

/// The priority range of a policy: 1..99 for the real-time ones, 0 for the
/// others (Linux's); None for an unknown policy.
fn priority_range(policy: u64) -> Option<(u64, u64)> {
    match policy {
        SCHED_FIFO | SCHED_RR => Some((1, 99)),
        SCHED_OTHER | SCHED_BATCH | SCHED_IDLE | SCHED_DEADLINE => Some((0, 0)),
        _ => None,
    }
}

pub fn sched_get_priority_max(_: &mut Server, _: i32, c: &mut Call) -> Out {
    ret(priority_range(c.args[0]).map(|r| r.1 as i64).ok_or(EINVAL))
}

pub fn sched_get_priority_min(_: &mut Server, _: i32, c: &mut Call) -> Out {
    ret(priority_range(c.args[0]).map(|r| r.0 as i64).ok_or(EINVAL))
}

pub fn sched_getscheduler(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = sched_target(s, pid, c.args[0]).map(|t| s.proc(t).policy as i64);
    ret(r)
}

/// sched_getparam(pid, param): the priority, 0 under every policy the
/// workhorse takes.
pub fn sched_getparam(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        if c.args[1] == 0 {
            return Err(EINVAL);
        }
        sched_target(s, pid, c.args[0])?;
        s.proc(pid).mm.write_u32(c.args[1], 0)?;
        Ok(0)
    })();
    ret(r)
}

/// A policy and the priority at `param` checked: the normal policies with
/// priority 0 are taken; the real-time ones (with a priority in 1..99) are
/// EPERM: a Linux program gets no real-time guarantee from the workhorse,
/// whose threads all run at one Keep priority; anything else EINVAL.
fn checked_policy(s: &mut Server, pid: i32, policy: u64, param: u64) -> Result<u32, i64> {
    // SCHED_DEADLINE is set by sched_setattr only.
    if param == 0 || policy == SCHED_DEADLINE {
        return Err(EINVAL);
    }
    let (lo, hi) = priority_range(policy).ok_or(EINVAL)?;
    let prio = s.proc(pid).mm.read_u32(param)? as i32 as i64;
    if prio < lo as i64 || prio > hi as i64 {
        return Err(EINVAL);
    }
    if policy == SCHED_FIFO || policy == SCHED_RR {
        return Err(EPERM);
    }
    Ok(policy as u32)
}

pub fn sched_setscheduler(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let t = sched_target(s, pid, c.args[0])?;
        let policy = checked_policy(s, pid, c.args[1] & !SCHED_RESET_ON_FORK, c.args[2])?;
        s.proc(t).policy = policy;
        Ok(0)
    })();
    ret(r)
}

pub fn sched_setparam(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = (|| {
        let t = sched_target(s, pid, c.args[0])?;
        let policy = s.proc(t).policy as u64;
        checked_policy(s, pid, policy, c.args[1])?;
        Ok(0)
    })();
    ret(r)
}


/// The threads getpriority and setpriority name: one (PRIO_PROCESS), a
/// process group (PRIO_PGRP; 0 the caller's) or a user's (PRIO_USER: every
/// Linux process is root's, uid 0); EINVAL for another `which`, ESRCH if
/// none matches.
fn priority_targets(s: &mut Server, pid: i32, which: u64, who: u64) -> Result<Vec<i32>, i64> {
    let who = who as i32;
    let me = s.proc(pid).pgid;
    let v: Vec<i32> = match which {
        PRIO_PROCESS => alloc::vec![if who == 0 { pid } else { who }],
        PRIO_PGRP => {
            let g = if who == 0 { me } else { who };
            s.procs.values().filter(|p| p.pgid == g && p.zombie.is_none()).map(|p| p.pid).collect()
        }
        PRIO_USER if who == 0 => s.procs.values().filter(|p| p.zombie.is_none()).map(|p| p.pid).collect(),
        PRIO_USER => Vec::new(),
        _ => return Err(EINVAL),
    };
    let v: Vec<i32> = v.into_iter().filter(|t| s.procs.get(t).is_some_and(|p| p.zombie.is_none())).collect();
    if v.is_empty() { Err(ESRCH) } else { Ok(v) }
}

/// getpriority(which, who): the raw call's 20 - nice of the best (lowest)
/// nice value among the threads named (glibc turns it back into the nice).
pub fn getpriority(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = priority_targets(s, pid, c.args[0], c.args[1])
        .map(|v| 20 - v.iter().map(|t| s.procs[t].nice).min().unwrap_or(0) as i64);
    ret(r)
}

/// setpriority(which, who, nice): every thread named gets the nice value,
/// clamped to -20..19 as Linux clamps it.
pub fn setpriority(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let r = priority_targets(s, pid, c.args[0], c.args[1]).map(|v| {
        let nice = (c.args[2] as i32).clamp(-20, 19);
        for t in v {
            s.proc(t).nice = nice;
        }
        0
    });
    ret(r)
}
