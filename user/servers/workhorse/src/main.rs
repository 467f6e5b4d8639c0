//! The workhorse server (docs/workhorse.md).  One Keep process, single
//! threaded: it receives the fault messages of its Linux processes (each a
//! Keep process in emulation mode whose fault handler is a sender to the
//! server, payload = Linux pid) and the root task's requests (payload 0),
//! and answers each; a system call that must wait (a read of an empty pipe
//! or of the terminal, wait4, vfork) keeps its return capability in the
//! process's own slot and is tried again whenever something changes.

#![no_std]
#![no_main]

extern crate alloc;

mod cpu;
mod disk;
mod env;
mod exec;
mod fd;
mod frames;
mod heap;
mod mem;
mod process;
mod shared;
mod signal;
mod sys;
mod tcpip;
mod ticker;
mod tty;
mod vfs;
mod wake;
mod wallclock;
mod whfiles;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{Error, Return, SELF_ASPACE, Tag, label, recv, reply};
use keep_rt::println;
use keep_workhorse as proto;
/// The Linux ABI (its constants and structures, once).
pub use keep_workhorse::linux;
use linux::errno;

use process::{Blocked, Proc};

/// Where each message's return capability arrives.
pub const RECV_RET: u64 = 0x10;
/// The root task's pending RUN call, while a program runs.
pub const SESSION_RET: u64 = 0x11;
/// A scratch slot (cappages being mapped).
pub const SCRATCH_SLOT: u64 = 0x12;
/// The ticker's call while no program runs (ticker.rs), its process and
/// its sender.
const TICK_RET: u64 = 0x14;
const TICKER_PROCESS: u64 = 0x15;
const TICKER_SENDER: u64 = 0x16;
/// How often the terminal is polled while a process waits for input (or
/// the clock): the receive's time-out then.
const TTY_POLL_MS: u64 = 20;
/// How often it is polled for Ctrl-C while a program runs: the ticker's
/// period, and every this many messages.
const SIGNAL_POLL_MS: u64 = 50;
const TTY_POLL_MESSAGES: u64 = 64;

/// What a system call's handler decided.
pub enum Out {
    /// Answer with this value in rax.
    Ret(i64),
    /// Registers were written: resume without touching rax.
    Resume,
    /// Cannot finish yet: keep the caller waiting and try again later.
    Block,
    /// The caller is gone (exit, exec replaced it, killed): no answer.
    Gone,
}

/// wait4's number (retry tries it only after a process ended).
const SYS_WAIT4: u64 = 61;
/// Process 1: the server itself, the parent of each session's first
/// process and of orphans, which it reaps as they end (it has no `Proc`).
pub const INIT_PID: i32 = 1;

/// A system call in progress: number, the three arguments the fault message
/// carries, and the other three (r10, r8, r9) read when first needed.
#[derive(Clone, Copy)]
pub struct Call {
    pub nr: u64,
    pub args: [u64; 6],
    pub have_all: bool,
}

pub struct Server {
    pub procs: BTreeMap<i32, Proc>,
    /// Threads waiting in F_SETLKW: the inode and range they want, and
    /// whether to write (sys/locks.rs finds deadlocks through them).
    pub lock_wanted: BTreeMap<i32, (vfs::Ino, u64, u64, bool)>,
    pub next_pid: i32,
    /// The pid the root task's RUN started (its end ends the session).
    pub leader: Option<i32>,
    /// -ENOSYS answers by system-call number.
    pub refused: BTreeMap<u64, u64>,
    pub trampoline: alloc::rc::Rc<mem::Frame>,
    /// The process whose message the server is answering.
    pub current: Option<i32>,
    /// The answer to that message (reply label, rax), sent with the next
    /// receive.
    pub reply: Option<(u64, u64)>,
    /// Messages handled (the terminal is polled every TTY_POLL_MESSAGES).
    pub messages: u64,
    /// False only when no process waits in a system call (`Blocked::Call`,
    /// which a process waiting for the terminal does too): set when one
    /// starts to wait, cleared by `retry` when it finds none, so that a
    /// message needs no walk over every process when nothing waits.
    pub maybe_waiting: bool,
    /// A process ended since the waiting calls were last tried: only then
    /// may a waiting wait4 go on (it is not tried on other messages).
    pub ended: bool,
    /// The ticker's call is kept in TICK_RET (no program runs).
    pub tick_parked: bool,
    pub seed: u64,
    /// The archive's size until the file system is filled from it.
    pub archive: Option<u64>,
    /// ITIMER_REAL (alarm, setitimer) by process: (deadline on the timer's
    /// clock in ns, interval; 0 for one-shot).  sys/timers.rs.
    pub itimers: BTreeMap<i32, (u64, u64)>,
    /// The named pipes open or being opened (sys/fifo.rs).
    pub fifos: sys::fifo::Fifos,
    /// Counts futex waits: a waiter's place in its word's queue
    /// (sys/futex.rs).
    pub futex_seq: u64,
    /// The last autobound AF_UNIX name (sys/socket.rs: `\0` and five hex
    /// digits).
    pub unix_autobind: u32,
}

macro_rules! syscall_table {
    ($($nr:literal $name:ident $handler:path, $support:ident, $note:literal;)*) => {
        /// The handler of system call `nr`.
        pub fn handler(nr: u64) -> Option<fn(&mut Server, i32, &mut Call) -> Out> {
            match nr {
                $($nr => Some($handler),)*
                _ => None,
            }
        }
    };
}
include!("syscall_table.rs");

keep_rt::entry!(main);

fn main(_: u64, size: u64) -> i32 {
    // SAFETY: first thing, single threaded.
    unsafe { keep_rt::set_allocator(&heap::HEAP) };
    let _ = keep_abi::SELF_PROCESS.set_name("workhorse");
    let trampoline = match mem::Frame::with(&[0xf3, 0x49, 0x0f, 0xae, 0xd3, 0xff, 0xe1], 0) {
        Ok(f) => f,
        Err(_) => {
            println!("workhorse: no memory for the trampoline page");
            return 1;
        }
    };
    let seed = keep_abi::TIMER.now().map(|(ms, t)| ms ^ (t << 17)).unwrap_or(0x9e37_79b9);
    let mut s = Server {
        lock_wanted: BTreeMap::new(),
        procs: BTreeMap::new(),
        next_pid: INIT_PID + 1,
        leader: None,
        refused: BTreeMap::new(),
        trampoline,
        current: None,
        reply: None,
        messages: 0,
        maybe_waiting: false,
        ended: false,
        tick_parked: false,
        seed: seed | 1,
        archive: Some(size),
        itimers: BTreeMap::new(),
        fifos: Default::default(),
        futex_seq: 0,
        unix_autobind: 0,
    };
    // The terminal (tty.rs): the description's `terminal`, if it has one.
    if let Err(e) = tty::attach() {
        println!("workhorse: no terminal of the console multiplexer ({e}): Linux programs use the kernel's console");
    }
    if let Err(e) = ticker::start(TICKER_PROCESS, TICKER_SENDER) {
        // Without it Ctrl-C reaches a program only when it makes system
        // calls (the terminal is polled every TTY_POLL_MESSAGES).
        println!("workhorse: no ticker: {e}");
    }
    // CLOCK_REALTIME's start (wallclock.rs).
    wallclock::init();
    s.serve()
}

/// Fills the file system from the archive (the description's blob, mapped
/// read-only at ROOTFS_VADDR, `size` bytes).  Done at the first request,
/// not at start: inflating takes seconds under emulation, which a start at
/// boot (or a restart) should not cost the rest of the system before
/// anyone runs a Linux program.
fn load_rootfs(size: u64) {
    if size == 0 {
        println!("workhorse: no root file system archive; starting with an empty one");
        return;
    }
    // SAFETY: the constructor mapped the blob read-only at ROOTFS_VADDR for
    // the server's lifetime.
    let archive: &'static [u8] = unsafe { core::slice::from_raw_parts(proto::ROOTFS_VADDR as *const u8, size as usize) };
    match inflate(archive) {
        Ok(tar) => {
            if let Err(e) = vfs::fs().load_archive(tar) {
                println!("workhorse: root file system archive refused: {e:?}");
            }
        }
        Err(why) => println!("workhorse: root file system archive refused: {why}"),
    }
    // /data: the store on the block server's disk, or memory (here, not at
    // start, for the same reason; the block server is up by now).
    vfs::fs().mount_data();
}

/// The root file system archive: a gzip file is inflated into the server's
/// heap, where it stays for the server's life (its files' bytes are read
/// and mapped from there); anything else is taken as the tar itself.
fn inflate(archive: &'static [u8]) -> Result<&'static [u8], &'static str> {
    if !proto::gzip::is_gzip(archive) {
        return Ok(archive);
    }
    let tar = proto::gzip::inflate(archive)?;
    Ok(alloc::boxed::Box::leak(tar.into_boxed_slice()))
}

impl Server {
    fn serve(&mut self) -> ! {
        loop {
            if vfs::stale_pending() {
                self.drop_stale_pages();
            }
            let waits_tty = self.maybe_waiting && self.procs.values().any(|p| p.waits_tty);
            // While a process waits for the terminal or the clock, the
            // receive has a time-out; the ticker polls for Ctrl-C while a
            // program runs (so that the receive needs none then: ticker.rs
            // says why), and its call is kept while none does.
            let base = if waits_tty { TTY_POLL_MS } else { 0 };
            // The TCP/IP stack's next timer, if it has one.
            let net = tcpip::timeout(base);
            // Interval timers that expired send SIGALRM; the next one, and
            // the deadlines waiting calls noted, shorten the time-out.
            let timeout = self.timers_timeout(net);
            if self.tick_parked && self.leader.is_some() {
                self.tick_parked = false;
                let _ = Return(TICK_RET).reply(Tag::new(0), [SIGNAL_POLL_MS, 0, 0, 0]);
            }
            keep_rt::ipc_buffer().recv_slots[0] = RECV_RET;
            // The answer to the last message goes with the next receive, in
            // one invocation (which the kernel's fast path takes).  The
            // next return capability overwrites the used one in RECV_RET.
            let next = Tag::new(0).with_slots(1);
            let m = match self.reply.take() {
                Some((lbl, rax)) => Return(RECV_RET).reply_recv(Tag(next.0 | lbl), [rax, 0, 0, 0], timeout),
                None => recv(next, timeout),
            };
            if m.err == Error::TIMEOUT.0 {
                wake::timed_out(net != base && timeout == net);
                self.poll_tty();
                self.retry();
                continue;
            }
            if m.err == 0 && m.tag.label() == label::NOTIFY && m.payload == wake::PAYLOAD {
                wake::notified();
                self.notified(m.words[0]);
                continue;
            }
            if m.err != 0 || !m.tag.is_called() {
                continue;
            }
            if m.payload == ticker::PAYLOAD {
                wake::ticked();
                // Only while a program runs: else the console is the
                // shell's, and what is typed there is not the server's.
                // With a terminal of the multiplexer the tick reads it only
                // when a NOTIFY said input waits (tty.rs).
                if self.leader.is_some() {
                    self.poll_tty();
                    self.reply = Some((0, SIGNAL_POLL_MS));
                } else {
                    let _ = SELF_ASPACE.delete_cap(TICK_RET);
                    self.tick_parked = SELF_ASPACE.move_cap(RECV_RET, TICK_RET).is_ok();
                }
                self.retry();
                continue;
            }
            if m.payload == 0 {
                // The request's string first: a bank call (for memory)
                // uses the IPC buffer.
                let mut raw = [0u8; 4096];
                let n = keep_rt::ipc_buffer().read_string(&mut raw);
                let line = raw[..n].to_vec();
                if let Some(size) = self.archive.take() {
                    load_rootfs(size);
                    env::env().set_limit(frames::available());
                }
                self.request(m.tag.label(), m.words[0], line);
            } else if keep_system::names::client_of(m.payload).is_some() {
                // A trusted program's file (whfiles.rs), with the tree filled.
                // (mount_data keeps the request's string.)
                if let Some(size) = self.archive.take() {
                    load_rootfs(size);
                    env::env().set_limit(frames::available());
                }
                whfiles::request(m.payload, m.tag.label(), m.words, m.tag.has_string(), Return(RECV_RET));
            } else {
                let pid = m.payload as i32;
                self.current = Some(pid);
                match m.tag.label() {
                    label::SYSCALL => self.syscall(pid, m.words),
                    label::EXCEPTION => self.exception(pid, m.words),
                    _ => {}
                }
                self.current = None;
            }
            // The terminal between time-outs too (Ctrl-C reaches a program
            // that keeps making system calls).
            self.messages = self.messages.wrapping_add(1);
            if waits_tty || (self.leader.is_some() && self.messages.is_multiple_of(TTY_POLL_MESSAGES)) {
                self.poll_tty();
            }
            // Now and then the server lets the others of its priority run:
            // a Linux thread busy with system calls takes the server's place
            // in the run queue with a fresh slice each time (sched_yield).
            if self.messages.is_multiple_of(TTY_POLL_MESSAGES) {
                let _ = keep_abi::SELF_PROCESS.yield_now();
            }
            self.retry();
        }
    }

    /// Files cut shorter while mapped (vfs.rs, `STALE`): their mappings'
    /// pages past the new end go from every process (touched again, they
    /// are SIGBUS, or the file's new bytes if it grew again), before the
    /// call that cut it is answered.
    #[cold]
    #[inline(never)]
    fn drop_stale_pages(&mut self) {
        let stale = vfs::take_stale();
        let mut done = Vec::new();
        for p in self.procs.values_mut() {
            if done.contains(&p.mm.id()) {
                continue;
            }
            done.push(p.mm.id());
            for &(ino, from) in &stale {
                p.mm.drop_file_pages(ino, from);
            }
        }
        for (ino, _) in stale {
            vfs::fs().trim(ino);
        }
    }

    /// The bits of the server's notification (wake.rs): each source's.
    fn notified(&mut self, bits: u64) {
        // The console's source: input waits on the terminal (tty.rs); it is
        // taken while a program runs (else it waits for the next one).
        if bits & wake::CONSOLE != 0 {
            tty::notified();
            if self.leader.is_some() {
                self.poll_tty();
                self.retry();
            }
        }
        if bits & wake::NET != 0 {
            // As after a time-out: the console first, so that a Ctrl-C
            // taken with a waiting read's input is posted before the read
            // is tried again (which would otherwise end first).
            self.poll_tty();
            self.retry(); // polls the TCP/IP stack first
        }
    }

    /// Takes console input; Ctrl-C and Ctrl-\\ go to the foreground
    /// process group as SIGINT and SIGQUIT.
    fn poll_tty(&mut self) {
        let t = tty::tty();
        t.poll();
        while let Some(sig) = t.take_signal() {
            let fg = t.fg_pgrp;
            let group: Vec<i32> =
                self.procs.values().filter(|p| p.pgid == fg && p.pid == p.tgid).map(|p| p.pid).collect();
            for pid in group {
                self.post_process(pid, sig);
            }
        }
    }

    /// A request of the root task.
    fn request(&mut self, lbl: u64, w0: u64, line: Vec<u8>) {
        let ret = Return(RECV_RET);
        match lbl {
            proto::RUN => {
                let cut = match w0 as usize {
                    0 => line.len(),
                    n => n.min(line.len()),
                };
                let answer = |w0: u64, w1: u64| {
                    let _ = ret.reply(Tag::new(0), [w0, w1, 0, 0]);
                };
                if self.leader.is_some() {
                    return answer(proto::BUSY, 0);
                }
                let Some(argv) = line
                    .get(..cut)
                    .and_then(|l| core::str::from_utf8(l).ok())
                    .and_then(proto::split_args)
                else {
                    return answer(proto::BAD_COMMAND, 0);
                };
                if argv.is_empty() {
                    return answer(proto::BAD_COMMAND, 0);
                }
                tty::tty().reset();
                tty::tty().type_ahead(&line[cut..]);
                match self.spawn_session(&argv) {
                    Ok(pid) => {
                        self.leader = Some(pid);
                        tty::tty().fg_pgrp = pid;
                        tty::tty().session = pid;
                        let _ = SELF_ASPACE.delete_cap(SESSION_RET);
                        if SELF_ASPACE.move_cap(RECV_RET, SESSION_RET).is_err() {
                            self.leader = None;
                        }
                    }
                    Err(e) => answer(proto::CANNOT_EXEC, e as u64),
                }
            }
            proto::STATS => {
                // Whole lines up to the string's 4 KiB; the rest counted.
                let mut text = String::new();
                let mut left = 0;
                for (nr, n) in &self.refused {
                    let line = alloc::format!("{nr} {} {n}\n", proto::table::name(*nr));
                    if text.len() + line.len() + 32 > 4096 {
                        left += 1;
                    } else {
                        text.push_str(&line);
                    }
                }
                if left > 0 {
                    text.push_str(&alloc::format!("... and {left} more numbers\n"));
                }
                let buf = keep_rt::ipc_buffer();
                buf.set_string(text.as_bytes());
                let _ = ret.reply(Tag::new(0).with_string(), [proto::OK, self.refused.len() as u64, 0, 0]);
            }
            _ => {
                let _ = ret.reply(Tag::new(0), [proto::BAD_REQUEST, 0, 0, 0]);
            }
        }
    }

    /// Starts the first process of a RUN: argv[0] found as given or in
    /// /bin or /usr/bin, fds 0-2 on the terminal.
    fn spawn_session(&mut self, argv: &[String]) -> Result<i32, i64> {
        let pid = self.new_pid();
        let mut p = Proc::new(pid, INIT_PID)?;
        let tty = fd::Description::new(fd::Kind::Console, fd::O_RDWR);
        for _ in 0..3 {
            p.fds.push(Some(fd::Fd { desc: tty.clone(), cloexec: false }));
        }
        // A name without '/' is looked up in the PATH the program gets.
        let path = if argv[0].contains('/') {
            argv[0].clone()
        } else {
            let in_dir = |d: &str| alloc::format!("{d}/{}", argv[0]);
            ["/bin", "/usr/bin"]
                .iter()
                .map(|d| in_dir(d))
                .find(|p| vfs::fs().resolve(vfs::ROOT, p, true).is_ok())
                .unwrap_or_else(|| in_dir("/bin"))
        };
        let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.clone().into_bytes()).collect();
        p.cmdline = argv.iter().flat_map(|a| a.iter().copied().chain([0])).collect();
        let envp: Vec<Vec<u8>> = ["PATH=/bin:/usr/bin", "HOME=/", "TERM=vt100", "PS1=\\w # "]
            .iter()
            .map(|e| Vec::from(e.as_bytes()))
            .collect();
        let started = exec::exec(self, &mut p, &path, argv, envp)
            .and_then(|_| p.keep.as_ref().unwrap().process.start().map_err(|_| errno::ENOMEM));
        if let Err(e) = started {
            p.teardown();
            env::env().free_slot(p.ret_slot);
            return Err(e);
        }
        self.procs.insert(pid, p);
        Ok(pid)
    }

    pub fn new_pid(&mut self) -> i32 {
        let pid = self.next_pid;
        self.next_pid += 1;
        pid
    }

    fn syscall(&mut self, pid: i32, w: [u64; 4]) {
        // (One look-up for both: each is a good part of a short call's cost.)
        let stopped = match self.procs.get(&pid) {
            Some(p) => p.stopped,
            None => return,
        };
        let mut call = Call { nr: w[0], args: [w[1], w[2], w[3], 0, 0, 0], have_all: false };
        // A call from a thread stopped while it ran waits, untried, for
        // SIGCONT (retry skips stopped threads).
        if stopped {
            let p = self.proc(pid);
            let _ = SELF_ASPACE.delete_cap(p.ret_slot);
            let _ = SELF_ASPACE.move_cap(RECV_RET, p.ret_slot);
            p.blocked = Some(Blocked::Call(call));
            self.maybe_waiting = true;
            return;
        }
        let out = match handler(call.nr) {
            Some(h) => h(self, pid, &mut call),
            None => {
                *self.refused.entry(call.nr).or_insert(0) += 1;
                Out::Ret(-errno::ENOSYS)
            }
        };
        self.finish(pid, call, out, RECV_RET);
    }

    /// Carries out a handler's decision for the call whose return
    /// capability is in `ret`.
    pub fn finish(&mut self, pid: i32, call: Call, out: Out, ret: u64) {
        match out {
            Out::Ret(_) | Out::Resume => {
                // (One look-up: finding the process again for the signals
                // or its stop would be a good part of a short call's cost.)
                let (due, stopped) = match self.procs.get_mut(&pid) {
                    Some(p) => {
                        p.blocked = None;
                        p.waits_tty = false;
                        (p.pending & !p.sigmask != 0, p.stopped)
                    }
                    None => (false, false),
                };
                // A signal due now is acted on as the call returns.
                let rax = if let Out::Ret(v) = out { Some(v) } else { None };
                let delivery = match if due { self.deliverable(pid) } else { None } {
                    Some(sig) => self.deliver(pid, sig, rax, None),
                    None => signal::Delivery::None,
                };
                let answer = match (delivery, rax) {
                    (signal::Delivery::None, Some(v)) => Some((reply::RESUME_SET_RAX, v as u64)),
                    (signal::Delivery::None, None) | (signal::Delivery::Handler, _) => Some((reply::RESUME, 0)),
                    (signal::Delivery::Ended, _) => None,
                };
                match answer {
                    // A thread stopped meanwhile (or by this call's signal:
                    // looked up again after a delivery) waits for SIGCONT
                    // with its answer.
                    Some(a) if if due { self.procs.get(&pid).is_some_and(|p| p.stopped) } else { stopped } => {
                        self.hold(pid, a, ret)
                    }
                    // The current message's answer waits for the next receive.
                    Some(a) if ret == RECV_RET => self.reply = Some(a),
                    Some((lbl, rax)) => {
                        let _ = Return(ret).reply(Tag::new(lbl), [rax, 0, 0, 0]);
                    }
                    None => {
                        let _ = SELF_ASPACE.delete_cap(ret);
                    }
                }
            }
            Out::Block => {
                let Some(p) = self.procs.get_mut(&pid) else { return };
                if ret != p.ret_slot {
                    let _ = SELF_ASPACE.delete_cap(p.ret_slot);
                    let _ = SELF_ASPACE.move_cap(ret, p.ret_slot);
                }
                if p.blocked.is_none() || matches!(p.blocked, Some(Blocked::Call(_))) {
                    p.blocked = Some(Blocked::Call(call));
                    self.maybe_waiting = true;
                    // A signal already due interrupts it at once.
                    if self.deliverable(pid).is_some() {
                        let ret = self.procs[&pid].ret_slot;
                        self.interrupt(pid, call, ret);
                    }
                }
            }
            Out::Gone => {
                let _ = SELF_ASPACE.delete_cap(ret);
            }
        }
    }

    /// Tries the waiting system calls again until none makes progress.
    pub fn retry(&mut self) {
        // What the TCP/IP stack received or timed out may let a call go on.
        tcpip::poll();
        // Signals a pseudo-terminal has for a process group.
        sys::pty::post_signals(self);
        // The waiting calls note their deadlines again as they are tried.
        sys::timers::clear_wakes();
        if !self.maybe_waiting {
            return;
        }
        if !self.procs.values().any(|p| matches!(p.blocked, Some(Blocked::Call(_)))) {
            self.maybe_waiting = false;
            return;
        }
        let ended = core::mem::take(&mut self.ended);
        loop {
            let mut progress = false;
            let pids: Vec<i32> = self.procs.keys().copied().collect();
            for pid in pids {
                let Some(p) = self.procs.get(&pid) else { continue };
                if p.stopped {
                    continue;
                }
                let (mut call, ret) = match p.blocked {
                    Some(Blocked::Call(c)) => (c, p.ret_slot),
                    _ => continue,
                };
                if call.nr == SYS_WAIT4 && !ended && !self.ended {
                    continue; // no child ended meanwhile
                }
                let Some(h) = handler(call.nr) else { continue };
                let out = h(self, pid, &mut call);
                if !matches!(out, Out::Block) {
                    progress = true;
                    self.finish(pid, call, out, ret);
                } else if let Some(p) = self.procs.get_mut(&pid)
                    && matches!(p.blocked, Some(Blocked::Call(_)))
                {
                    // Kept with the arguments it has read (`arg`): the
                    // next try reads no registers again.
                    p.blocked = Some(Blocked::Call(call));
                }
            }
            if !progress {
                break;
            }
        }
    }

    /// An exception in a Linux process: a page fault in one of its areas
    /// populates the page, maps it, or copies it for a write (mem.rs);
    /// anything else is the signal Linux would send, to the process's
    /// handler if it has one it does not block, else ending it.
    fn exception(&mut self, pid: i32, w: [u64; 4]) {
        let [vector, rip, addr, code] = w;
        let Some(p) = self.procs.get_mut(&pid) else { return };
        if p.mm.text_hidden {
            // Stopped for a signal (signal.rs): text back, signal delivered
            // with the faulting instruction as the place to return to.
            p.mm.set_text_mapped(true);
            let delivery = match self.deliverable(pid) {
                Some(sig) => self.deliver(pid, sig, None, None),
                None => signal::Delivery::None,
            };
            match delivery {
                signal::Delivery::Ended => {
                    let _ = SELF_ASPACE.delete_cap(RECV_RET);
                }
                _ => {
                    // Another thread of the process that runs still has a
                    // signal to take, or is to stop: hidden again until it
                    // comes.
                    self.hide_text_for_others(pid);
                    if self.procs.get(&pid).is_some_and(|p| p.stopped) {
                        self.hold(pid, (reply::RESUME, 0), RECV_RET);
                    } else {
                        let _ = Return(RECV_RET).reply(Tag::new(reply::RESUME), [0; 4]);
                    }
                }
            }
            return;
        }
        // A page fault without the user bit (error code bit 2) is an access
        // the CPU made with supervisor rights for the program (QEMU's TCG
        // reads iretq's frame so, and SMAP refuses it): mapping cannot
        // help, and resuming would fault for ever.
        let mut beyond_eof = false;
        if vector == 14 && code & 4 != 0 {
            let page = addr & !(mem::PAGE - 1);
            let mut need = if code & 2 != 0 { mem::PROT_WRITE } else { mem::PROT_READ };
            if code & 0x10 != 0 {
                need = mem::PROT_EXEC;
            }
            match p.mm.fault(page, need) {
                Ok(()) => {
                    let _ = Return(RECV_RET).reply(Tag::new(reply::RESUME), [0; 4]);
                    return;
                }
                Err(mem::BEYOND_EOF) => beyond_eof = true,
                Err(_) => {}
            }
        }
        let (sig, what) = match vector {
            14 if beyond_eof => (process::SIGBUS, "a shared file mapping's page past the end of the file"),
            0 => (process::SIGFPE, "divide error"),
            3 => (process::SIGTRAP, "breakpoint"),
            6 => (process::SIGILL, "invalid opcode"),
            14 if code & 4 == 0 => (process::SIGSEGV, "page fault (a supervisor access)"),
            14 => (process::SIGSEGV, "page fault"),
            _ => (process::SIGSEGV, "general protection"),
        };
        // A handler the process installed for it (and does not block)
        // runs, with Linux's si_code and si_addr; else the signal ends it,
        // as Linux's forced signals do.  (Not for the supervisor access:
        // its frame could not be pushed either.)
        if vector != 14 || code & 4 != 0 {
            let action = p.sigactions[sig as usize][0];
            if action != 0 && action != process::SIG_IGN && p.sigmask & (1 << (sig - 1)) == 0 {
                let (si_code, si_addr) = match vector {
                    14 if beyond_eof => (2, addr),                       // BUS_ADRERR
                    14 if p.mm.area(addr).is_some() => (2, addr),       // SEGV_ACCERR
                    14 => (1, addr),                                     // SEGV_MAPERR
                    0 => (1, rip),                                       // FPE_INTDIV
                    6 => (2, rip),                                       // ILL_ILLOPN
                    _ => (0x80, 0),                                      // SI_KERNEL
                };
                match self.deliver_info(pid, sig, None, None, Some((si_code, si_addr, vector, code))) {
                    signal::Delivery::Ended => {
                        let _ = SELF_ASPACE.delete_cap(RECV_RET);
                    }
                    _ => {
                        let _ = Return(RECV_RET).reply(Tag::new(reply::RESUME), [0; 4]);
                    }
                }
                return;
            }
        }
        println!(
            "workhorse: pid {pid} ({}) killed by signal {sig}: {what} at rip {rip:#x}, address {addr:#x}",
            p.name
        );
        let _ = SELF_ASPACE.delete_cap(RECV_RET);
        self.terminate(pid, process::signaled(sig));
    }

    /// Ends process `pid` with wait status `status`: its Keep objects and
    /// memory go, it becomes a zombie for its parent (or goes at once
    /// without one), and a session whose leader it was ends.
    pub fn terminate(&mut self, pid: i32, status: i32) {
        // All its threads end; the leader stays as the zombie.
        let Some(tgid) = self.procs.get(&pid).map(|p| p.tgid) else { return };
        for t in self.threads_of(pid) {
            if t != tgid {
                self.remove_thread(t);
            }
        }
        let pid = tgid;
        let Some(p) = self.procs.get_mut(&pid) else { return };
        p.teardown();
        p.zombie = Some(status);
        if let Some(st) = &p.pidfd_state {
            st.set(sys::pidfd::ENDED);
        }
        // Its interval timer ends with it.
        self.itimers.remove(&pid);
        self.ended = true;
        let ppid = p.ppid;
        let pgid = p.pgid;
        if p.sid == pid {
            sys::pty::leader_ended(self, pid);
        }
        // Its children go to the nearest live ancestor that is a
        // subreaper (PR_SET_CHILD_SUBREAPER), else to pid 1, the server
        // itself (docs/workhorse.md, "Process 1"), which reaps them as
        // they end: those that have ended go at once.
        let mut reaper = INIT_PID;
        let mut up = ppid;
        while let Some(a) = self.procs.get(&up) {
            if a.zombie.is_none() && a.subreaper {
                reaper = a.tgid;
                break;
            }
            up = a.ppid;
        }
        let mut ended_children = Vec::new();
        let mut groups = alloc::vec![pgid];
        for c in self.procs.values_mut() {
            if c.ppid == pid {
                c.ppid = reaper;
                if c.pid == c.tgid && !groups.contains(&c.pgid) {
                    groups.push(c.pgid);
                }
                if c.zombie.is_some() && reaper == INIT_PID {
                    ended_children.push(c.pid);
                }
            }
        }
        for c in ended_children {
            self.reap(c);
        }
        // Groups this end left orphaned with a stopped member are hung up.
        self.hang_up_orphans(&groups);
        self.wake_vfork_parent(pid);
        let parent = if ppid == INIT_PID { None } else { self.procs.get(&ppid) };
        match parent.map(|q| q.sigactions[process::SIGCHLD as usize]) {
            None => self.reap(pid),
            Some(act) => {
                // SIGCHLD ignored (SIG_IGN) or SA_NOCLDWAIT: no zombie, as
                // Linux (a wait then finds no child: ECHILD once the last
                // has ended).  A handler with SA_NOCLDWAIT still gets the
                // signal, as on Linux, after the child has gone (the
                // parent's wait, tried again as it is posted, must not
                // find it).
                if act[0] == process::SIG_IGN || act[1] & process::SA_NOCLDWAIT != 0 {
                    self.reap(pid);
                }
                if act[0] != process::SIG_IGN {
                    let (code, st) = match (status & 0x7f, status & 0x80) {
                        (0, _) => (process::CLD_EXITED, (status >> 8) & 0xff),
                        (sig, 0) => (process::CLD_KILLED, sig),
                        (sig, _) => (process::CLD_DUMPED, sig),
                    };
                    self.post_chld(ppid, (code, pid, st));
                }
            }
        }
        if self.leader == Some(pid) {
            self.leader = None;
            // What the session leaves behind ends with it.
            let rest: Vec<i32> = self.procs.keys().copied().collect();
            for q in rest {
                if self.procs.get(&q).is_some_and(|p| p.zombie.is_none()) {
                    self.terminate(q, process::signaled(process::SIGKILL));
                }
            }
            let all: Vec<i32> = self.procs.keys().copied().collect();
            for q in all {
                self.reap(q);
            }
            let _ = Return(SESSION_RET).reply(Tag::new(0), [proto::OK, status as u32 as u64, 0, 0]);
        }
    }

    /// Removes a zombie for good.
    pub fn reap(&mut self, pid: i32) {
        if let Some(p) = self.procs.remove(&pid) {
            if let Some(st) = &p.pidfd_state {
                st.set(sys::pidfd::REAPED);
            }
            env::env().free_slot(p.ret_slot);
        }
    }

    /// A vfork parent waiting for `child` (which exec'd or ended) goes on.
    pub fn wake_vfork_parent(&mut self, child: i32) {
        let parent = self
            .procs
            .iter()
            .find(|(_, p)| matches!(p.blocked, Some(Blocked::Vfork(c)) if c == child))
            .map(|(pid, _)| *pid);
        if let Some(ppid) = parent {
            let ret = self.procs[&ppid].ret_slot;
            let call = Call { nr: 58, args: [0; 6], have_all: true };
            self.finish(ppid, call, Out::Ret(child as i64), ret);
        }
    }

    /// Argument `i` of `call` (0-5), reading r10, r8 and r9 when first
    /// needed.
    pub fn arg(&mut self, pid: i32, call: &mut Call, i: usize) -> u64 {
        if i >= 3 && !call.have_all {
            if let Some(k) = self.procs.get(&pid).and_then(|p| p.keep.as_ref())
                && k.process.read_regs().is_ok()
            {
                let r = keep_rt::ipc_buffer().regs();
                call.args[3] = r[keep_abi::reg::R10 as usize];
                call.args[4] = r[keep_abi::reg::R8 as usize];
                call.args[5] = r[keep_abi::reg::R9 as usize];
            }
            call.have_all = true;
        }
        call.args[i]
    }

    pub fn random(&mut self) -> u64 {
        // xorshift64*: see the getrandom note in the table.
        let mut x = self.seed;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

