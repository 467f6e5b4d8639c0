//! A Linux thread (a process is a group of them, most often one): its Keep
//! process, and the memory, file descriptors and signal actions its group
//! shares (`Shared`), its working directory, signal mask and wait state.
//! The server keeps one `Proc` per thread, by thread id; the group's first
//! thread (tid = pid = tgid) is the process's leader, which stays (as a
//! zombie) for its parent's wait4.

use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Aspace, Process, SELF_ASPACE, SELF_PROCESS};

use crate::cpu::CpuTime;
use crate::env::env;
use crate::fd::Fd;
use crate::mem::Mm;
use crate::shared::Shared;
use crate::vfs::{Ino, ROOT};
use crate::Call;
pub(crate) use crate::linux::signal::{CLD_CONTINUED, CLD_DUMPED, CLD_EXITED, CLD_KILLED, CLD_STOPPED, SA_NOCLDSTOP, SA_NOCLDWAIT, SIGBUS, SIGCHLD, SIGCONT, SIGFPE, SIGHUP, SIGILL, SIGKILL, SIGSEGV, SIGSTOP, SIGTRAP, SIGTSTP, SIGTTIN, SIGTTOU, SIG_IGN};

/// Wait status of a process that continued (WIFCONTINUED).
pub const CONTINUED: i32 = 0xffff;

/// Wait status of a process stopped by `sig` (WIFSTOPPED).
pub fn stopped(sig: i32) -> i32 {
    (sig << 8) | 0x7f
}

/// Wait status of a process ended by `sig`.
pub fn signaled(sig: i32) -> i32 {
    sig & 0x7f
}

/// Wait status of a process that exited with `code`.
pub fn exited(code: i32) -> i32 {
    (code & 0xff) << 8
}

/// The Keep objects behind a Linux process (slots of the server).
pub struct Keep {
    pub process: Process,
    pub aspace: Aspace,
    /// The sender the process's faults arrive through (payload = pid).
    pub sender: u64,
}

impl Keep {
    /// A CREATED process in a fresh address space, in emulation mode, its
    /// faults and system calls sent to the server with payload `pid`.
    pub fn create(pid: i32, name: &str) -> Result<Keep, i64> {
        let e = env();
        let a = e.slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        let p = e.slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        let s = e.slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        let k = Keep { process: Process(p), aspace: Aspace(a), sender: s };
        let r = ACCOUNT
            .create_aspace(a)
            .and_then(|_| ACCOUNT.create_process(a, p))
            .and_then(|_| SELF_PROCESS.mint(s, pid as u64, 0))
            .and_then(|_| k.process.set_fault_handler(s))
            .and_then(|_| k.process.set_emulation(true))
            .and_then(|_| k.process.set_name(name));
        match r {
            Ok(()) => Ok(k),
            Err(err) => {
                keep_rt::println!("workhorse: cannot make a process: {err}");
                k.destroy();
                Err(crate::linux::errno::ENOMEM)
            }
        }
    }

    /// A CREATED thread in `aspace` (the group's), as `create` otherwise.
    pub fn create_thread(tid: i32, name: &str, aspace: Aspace) -> Result<Keep, i64> {
        let e = env();
        let p = e.slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        let s = e.slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        let k = Keep { process: Process(p), aspace, sender: s };
        let r = ACCOUNT
            .create_process(aspace.0, p)
            .and_then(|_| SELF_PROCESS.mint(s, tid as u64, 0))
            .and_then(|_| k.process.set_fault_handler(s))
            .and_then(|_| k.process.set_emulation(true))
            .and_then(|_| k.process.set_name(name));
        match r {
            Ok(()) => Ok(k),
            Err(err) => {
                keep_rt::println!("workhorse: cannot make a thread: {err}");
                k.destroy_thread();
                Err(crate::linux::errno::ENOMEM)
            }
        }
    }

    /// Destroys the process only (other threads go on in the address
    /// space) and gives its slots back.
    pub fn destroy_thread(&self) {
        let _ = ACCOUNT.destroy(self.process.0);
        let e = env();
        e.free_slot(self.process.0);
        e.free_slot(self.sender);
    }

    /// Destroys the process and its address space (which unmaps every
    /// page) and gives the slots back.
    pub fn destroy(&self) {
        let _ = ACCOUNT.destroy(self.process.0);
        let _ = ACCOUNT.destroy(self.aspace.0);
        let e = env();
        e.free_slot(self.process.0);
        e.free_slot(self.aspace.0);
        e.free_slot(self.sender);
    }
}

pub enum Blocked {
    /// A system call to try again.
    Call(Call),
    /// vfork: waits until this child execs or ends.
    Vfork(i32),
}

/// A thread waiting in futex: the word's key (frame, offset), the bits it
/// waits for, and when it started waiting (wakes go in that order).
#[derive(Clone, Copy)]
pub struct FutexWait {
    pub key: (u64, u64),
    pub bitset: u32,
    pub seq: u64,
}

pub struct Proc {
    /// The thread id (the process's pid for its first thread).
    pub pid: i32,
    /// The process's pid (the thread group's id).
    pub tgid: i32,
    /// These and pgid, sid: the process's (every thread has a copy).
    pub ppid: i32,
    pub pgid: i32,
    pub sid: i32,
    pub name: String,
    /// The path it was started from (/proc/self/exe).
    pub exe: String,
    pub keep: Option<Keep>,
    /// Shared by the threads of the process.
    pub mm: Shared<Mm>,
    pub fds: Shared<Vec<Option<Fd>>>,
    pub cwd: Ino,
    pub umask: u32,
    /// Its user and group ids (keep_workhorse::perm): root's until a
    /// set*id call changes them; each thread's own, as Linux's.
    pub cred: keep_workhorse::perm::Cred,
    /// The nice value (-20..19) and the Linux scheduling policy
    /// (SCHED_OTHER, SCHED_BATCH or SCHED_IDLE), as set and read by
    /// setpriority and sched_setscheduler; bookkeeping only: every Linux
    /// thread runs at the workhorse's one Keep priority.
    pub nice: i32,
    pub policy: u32,
    pub fs_base: u64,
    /// Per signal: handler, flags, restorer, mask (as rt_sigaction has
    /// them); shared by the threads.
    pub sigactions: Shared<[[u64; 4]; 65]>,
    /// Signals posted and not yet delivered (bit sig-1).
    pub pending: u64,
    /// The mask rt_sigsuspend replaced, restored by the handler's return.
    pub saved_mask: Option<u64>,
    pub sigmask: u64,
    pub blocked: Option<Blocked>,
    /// Blocked on terminal input (the server polls the console).
    pub waits_tty: bool,
    /// Where a blocked call's return capability is kept.
    pub ret_slot: u64,
    /// Some(wait status) once it has ended.
    pub zombie: Option<i32>,
    /// set_tid_address / CLONE_CHILD_CLEARTID: zeroed and woken at exit.
    pub clear_child_tid: u64,
    /// Waiting in futex (None once woken).
    pub futex: Option<FutexWait>,
    /// A leader that ended with exit while its other threads go on.
    pub thread_done: bool,
    /// Its arguments, each with its NUL (/proc/PID/cmdline).
    pub cmdline: Vec<u8>,
    /// Resource limits (soft, hard) by RLIMIT_* number.
    pub rlimits: [(u64, u64); 16],
    /// The thread's alternate signal stack (sigaltstack).
    pub altstack: AltStack,
    /// A leader's state as its pidfds see it (sys/pidfd.rs), made by the
    /// first pidfd_open.
    pub pidfd_state: Option<alloc::rc::Rc<core::cell::Cell<u8>>>,
    /// The thread's CPU time (cpu.rs); on the leader, that of the group's
    /// threads that ended (ns) and of the children waited for.
    pub cpu: CpuTime,
    pub cpu_done: u64,
    pub cpu_children: u64,
    /// Stopped by a stop signal (job control): its waiting call is not
    /// tried and the answer it comes for is held until SIGCONT.
    pub stopped: bool,
    /// The answer (reply label, rax) held for a stopped thread, whose
    /// return capability waits in `ret_slot`.
    pub held: Option<(u64, u64)>,
    /// On a leader: the stop (`stopped(sig)`) or continue (`CONTINUED`)
    /// its parent has not waited for yet (WUNTRACED, WCONTINUED).
    pub stop_report: Option<i32>,
    /// The SIGCHLD posted to this thread: (si_code, si_pid, si_status)
    /// for its siginfo.
    pub chld_info: Option<(i32, i32, i32)>,
    /// PR_SET_CHILD_SUBREAPER: orphaned descendants come to it.
    pub subreaper: bool,
    /// On a session leader whose controlling terminal hung up: the
    /// terminal's foreground group then, which the leader's end sends
    /// SIGHUP and SIGCONT (sys/pty.rs).
    pub hup_pgrp: i32,
}

/// An alternate signal stack: base, size and the flags sigaltstack set
/// (SS_DISABLE when there is none; SS_AUTODISARM kept).
#[derive(Clone, Copy)]
pub struct AltStack {
    pub sp: u64,
    pub size: u64,
    pub flags: u32,
}

impl AltStack {
    pub const SS_ONSTACK: u32 = 1;
    pub const SS_DISABLE: u32 = 2;
    pub const SS_AUTODISARM: u32 = 1 << 31;
    pub const NONE: AltStack = AltStack { sp: 0, size: 0, flags: Self::SS_DISABLE };

    /// Whether `rsp` is on it (as Linux's on_sig_stack).
    pub fn holds(&self, rsp: u64) -> bool {
        self.flags & Self::SS_AUTODISARM == 0 && self.size != 0 && rsp > self.sp && rsp - self.sp <= self.size
    }
}

/// The limits a process starts with.
pub fn default_rlimits() -> [(u64, u64); 16] {
    let mut r = [(u64::MAX, u64::MAX); 16];
    r[3] = (8 << 20, u64::MAX); // RLIMIT_STACK
    r[7] = (1024, 1024); // RLIMIT_NOFILE
    r[6] = (128, 128); // RLIMIT_NPROC: the server's process limit
    r
}

impl Proc {
    /// The new process or thread `pid`, child of `ppid`, of a fork or a
    /// clone by `parent`: what every child takes from its parent (process
    /// group and session, names, command line, working directory, umask,
    /// credentials, priority and policy, limits, signal mask) and `fs_base`
    /// as its TLS.  Memory, descriptors, signal actions and the alternate
    /// signal stack are shared or copied as the caller's flags say, so the
    /// caller sets them.
    pub fn inherit(pid: i32, ppid: i32, parent: &Proc, fs_base: u64) -> Result<Proc, i64> {
        let mut c = Proc::new(pid, ppid)?;
        c.pgid = parent.pgid;
        c.sid = parent.sid;
        c.name = parent.name.clone();
        c.exe = parent.exe.clone();
        c.cmdline = parent.cmdline.clone();
        c.cwd = parent.cwd;
        c.umask = parent.umask;
        c.cred = parent.cred.clone();
        c.nice = parent.nice;
        c.policy = parent.policy;
        c.rlimits = parent.rlimits;
        c.sigmask = parent.sigmask;
        c.fs_base = fs_base;
        Ok(c)
    }

    /// ENOMEM when no slot is left for its return capability.
    pub fn new(pid: i32, ppid: i32) -> Result<Proc, i64> {
        let ret_slot = env().slot().map_err(|_| crate::linux::errno::ENOMEM)?;
        Ok(Proc {
            pid,
            tgid: pid,
            ppid,
            pgid: pid,
            sid: pid,
            name: String::new(),
            exe: String::new(),
            keep: None,
            mm: Shared::new(Mm::new(Aspace(0))),
            fds: Shared::new(Vec::new()),
            cwd: ROOT,
            umask: 0o022,
            cred: keep_workhorse::perm::Cred::default(),
            nice: 0,
            policy: 0,
            fs_base: 0,
            sigactions: Shared::new([[0; 4]; 65]),
            pending: 0,
            saved_mask: None,
            sigmask: 0,
            blocked: None,
            waits_tty: false,
            ret_slot,
            zombie: None,
            clear_child_tid: 0,
            futex: None,
            thread_done: false,
            cmdline: Vec::new(),
            rlimits: default_rlimits(),
            altstack: AltStack::NONE,
            pidfd_state: None,
            cpu: CpuTime::new(),
            cpu_done: 0,
            cpu_children: 0,
            stopped: false,
            held: None,
            stop_report: None,
            chld_info: None,
            subreaper: false,
            hup_pgrp: 0,
        })
    }

    /// Ends the Keep side: process destroyed, and with the last thread of
    /// the group the address space too; this thread's hold on memory,
    /// descriptors and actions released.
    pub fn teardown(&mut self) {
        let last = self.mm.is_unique();
        if last {
            crate::sys::locks::process_ended(self.tgid);
        }
        if let Some(k) = self.keep.take() {
            self.cpu.keep_gone(&k);
            if last { k.destroy() } else { k.destroy_thread() }
        } else if last && self.mm.aspace.0 != 0 {
            // A leader that ended before its threads kept the space.
            let _ = ACCOUNT.destroy(self.mm.aspace.0);
            env().free_slot(self.mm.aspace.0);
        }
        self.mm = Shared::new(Mm::new(Aspace(0)));
        self.fds = Shared::new(Vec::new());
        self.sigactions = Shared::new([[0; 4]; 65]);
        self.futex = None;
        self.blocked = None;
        self.waits_tty = false;
        self.stopped = false;
        self.held = None;
        let _ = SELF_ASPACE.delete_cap(self.ret_slot);
    }

    /// The thread's CPU time in ns (cpu.rs).
    pub fn cpu_ns(&self) -> u64 {
        self.cpu.ns(self.keep.as_ref())
    }

    pub fn fd(&self, n: u64) -> Result<&Fd, i64> {
        self.fds.get(n as usize).and_then(|f| f.as_ref()).ok_or(crate::linux::errno::EBADF)
    }

    /// The lowest free descriptor number at or above `min`.
    pub fn install(&mut self, fd: Fd, min: usize) -> Result<i64, i64> {
        const MAX_FDS: usize = 1024;
        let mut n = min;
        while n < self.fds.len() && self.fds[n].is_some() {
            n += 1;
        }
        if n >= MAX_FDS {
            return Err(crate::linux::errno::EMFILE);
        }
        if n >= self.fds.len() {
            self.fds.resize(n + 1, None);
        }
        self.fds[n] = Some(fd);
        Ok(n as i64)
    }
}
