//! Signals.  A signal is posted to a process; it is acted on when the
//! process next comes back from a system call (the server answers every
//! one, so that is where it can change the registers), or at once when the
//! process waits in a call (the call is tried again, then interrupted with
//! EINTR, or restarted after the handler when the action has SA_RESTART).
//! A process that is running (not waiting for the server) is made to come
//! to the server: its executable pages are unmapped, its next instruction
//! fetch faults, and the server maps them again and delivers the signal
//! there (Keep's READ_REGS needs the process stopped, and a fault is a
//! clean place to stop it).  SIGKILL and an unblocked signal whose default
//! action ends the process end it at once, wherever it is.
//!
//! A handler runs on the process's stack with the frame Linux builds
//! (`struct rt_sigframe`: the restorer's address, a `ucontext` whose
//! `sigcontext` holds the interrupted registers and the old mask, a
//! `siginfo`); `rt_sigreturn` reads the registers and mask back.  Above
//! the frame, 64-byte aligned, the x87/SSE/AVX state as Linux saves it
//! (`sigcontext.fpstate`: XSAVE's format with the software bytes that say
//! so, `FP_XSTATE_MAGIC1` and `MAGIC2`, and `UC_FP_XSTATE`; FXSAVE's
//! without XSAVE), read with READ_VECTOR_STATE; the handler starts with the
//! initial state (as on Linux), and `rt_sigreturn` loads the saved one
//! back with WRITE_VECTOR_STATE (a state the kernel refuses is SIGSEGV).

use keep_abi::{Return, SELF_ASPACE, Tag, reg, reply};

use alloc::vec::Vec;

use crate::process::{self, Blocked};
use crate::{Call, Out, Server};
use crate::linux::signal::{MINSIGSTKSZ, SA_NODEFER, SA_ONSTACK, SA_RESETHAND, SA_RESTART, SA_RESTORER};

/// Offsets in the frame: the ucontext, its sigcontext, its mask, siginfo.
const UC: u64 = 8;
const MCONTEXT: u64 = UC + 40;
const SIGMASK: u64 = MCONTEXT + 256;
const SIGINFO: u64 = SIGMASK + 8;
const FRAME: u64 = SIGINFO + 128;
/// sigcontext.fpstate, as a word of the mcontext.
const FPSTATE_WORD: usize = 23;
/// The software bytes Linux keeps in the FXSAVE region's unused 464-511
/// of a signal frame's XSAVE state, and the word after the state.
const FP_XSTATE_MAGIC1: u32 = 0x4650_5853;
const FP_XSTATE_MAGIC2: u32 = 0x4650_5845;
const UC_FP_XSTATE: u64 = 1;
/// The largest state READ_VECTOR_STATE gives (the kernel's area).
const VECTOR_MAX: usize = 1024;

/// XCR0: the components the frame's XSAVE state holds (`xfeatures`).
fn xcr0() -> u64 {
    let (lo, hi): (u32, u32);
    // SAFETY: called only with a state longer than FXSAVE's, which the
    // kernel gives only when it has set CR4.OSXSAVE; xgetbv reads XCR0.
    unsafe { core::arch::asm!("xgetbv", in("ecx") 0u32, out("eax") lo, out("edx") hi, options(nomem, nostack)) };
    (u64::from(hi) << 32) | u64::from(lo)
}

/// The process's vector state (its length in `buf`), or None.
fn read_vector_state(k: &process::Keep, buf: &mut [u8; VECTOR_MAX]) -> Option<usize> {
    let n = k.process.read_vector_state().ok()? as usize;
    if n < 512 || n > VECTOR_MAX {
        return None;
    }
    keep_rt::ipc_buffer().vector_state(&mut buf[..n]);
    Some(n)
}

/// What a handler starts with: the initial x87 (control word 0x37f) and
/// SSE (MXCSR 0x1f80) state, no other component in use (XSTATE_BV 0).
fn initial_vector_state(saved: &[u8]) -> [u8; VECTOR_MAX] {
    let mut s = [0u8; VECTOR_MAX];
    s[0..2].copy_from_slice(&0x037fu16.to_le_bytes());
    s[24..28].copy_from_slice(&0x1f80u32.to_le_bytes());
    s[28..32].copy_from_slice(&saved[28..32]); // MXCSR_MASK, as the CPU has it
    s
}
/// Offsets in the ucontext: uc_stack (ss_sp, ss_flags, ss_size).
const UC_STACK: u64 = UC + 16;
/// Can never be blocked.
pub(crate) const UNBLOCKABLE: u64 = (1 << (9 - 1)) | (1 << (19 - 1));

/// The sigcontext's registers in its order (r8..r15, rdi, rsi, rbp, rbx,
/// rdx, rax, rcx, rsp, rip, eflags).
const ORDER: [u64; 18] = [
    reg::R8,
    reg::R9,
    reg::R10,
    reg::R11,
    reg::R12,
    reg::R13,
    reg::R14,
    reg::R15,
    reg::RDI,
    reg::RSI,
    reg::RBP,
    reg::RBX,
    reg::RDX,
    reg::RAX,
    reg::RCX,
    reg::RSP,
    reg::RIP,
    reg::RFLAGS,
];

fn bit(sig: i32) -> u64 {
    1 << (sig - 1)
}

/// Signals whose default action is nothing (SIGCONT's is to continue,
/// which its posting does whatever the action).
fn ignored_by_default(sig: i32) -> bool {
    matches!(sig, 17 | 18 | 23 | 28)
}

/// The stop signals: SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU.
pub fn is_stop(sig: i32) -> bool {
    matches!(sig, 19..=22)
}

const STOP_SIGNALS: u64 = 0xf << 18;

/// What `finish` does with a call's result when a signal is due.
pub enum Delivery {
    /// Nothing due: answer as usual.
    None,
    /// A handler's frame is built: resume with the new registers.
    Handler,
    /// The signal ended the process.
    Ended,
}

impl Server {
    /// Posts `sig` to `pid` (see the module comment).
    pub fn post(&mut self, pid: i32, sig: i32) {
        let Some(p) = self.procs.get(&pid) else { return };
        if p.zombie.is_some() || !(1..=64).contains(&sig) {
            return;
        }
        // As Linux's prepare_signal: SIGCONT continues the process whatever
        // its action and drops the stop signals pending; a stop signal
        // drops a SIGCONT pending.
        let tgid = p.tgid;
        if sig == process::SIGCONT || is_stop(sig) {
            let drop = if sig == process::SIGCONT { STOP_SIGNALS } else { bit(process::SIGCONT) };
            for t in self.threads_of(tgid) {
                self.proc(t).pending &= !drop;
            }
            if sig == process::SIGCONT {
                // A handler runs as the process goes on: due before its
                // held answers are given.
                let p = self.proc(pid);
                let act = p.sigactions[sig as usize][0];
                if act != 0 && act != process::SIG_IGN {
                    p.pending |= bit(sig);
                }
                self.continue_process(tgid);
            }
        }
        let Some(p) = self.procs.get_mut(&pid) else { return };
        if p.zombie.is_some() {
            return;
        }
        let action = p.sigactions[sig as usize][0];
        if sig != 9 && (action == process::SIG_IGN || (action == 0 && ignored_by_default(sig))) {
            return;
        }
        let blocked = p.sigmask & bit(sig) != 0 && sig != 9;
        // A stopped process takes only SIGKILL now (as Linux, whose
        // stopped threads want no other signal); the rest wait.
        if action == 0 && !blocked && (!p.stopped || sig == 9) {
            if is_stop(sig) {
                let pgid = p.pgid;
                // SIGTSTP, SIGTTIN and SIGTTOU do nothing to an orphaned
                // process group (nobody would continue it), as on Linux.
                if sig == process::SIGSTOP || !self.orphaned(pgid) {
                    self.stop_process(tgid, sig);
                }
                return;
            }
            self.terminate(pid, process::signaled(sig));
            return;
        }
        p.pending |= bit(sig);
        // Blocked, or stopped: acted on when unblocked, or continued.
        if blocked || p.stopped {
            return;
        }
        // Running: make it fault to the server (unless it is the caller the
        // server is answering, which gets it as its call returns).
        if p.blocked.is_none() {
            if self.current != Some(pid) && !p.mm.text_hidden && p.keep.is_some() {
                p.mm.set_text_mapped(false);
            }
            return;
        }
        // A waiting call: try it once more, else interrupt it.
        let Some(Blocked::Call(call)) = p.blocked else { return };
        let ret = p.ret_slot;
        let mut c = call;
        if let Some(h) = crate::handler(c.nr) {
            let out = h(self, pid, &mut c);
            if !matches!(out, Out::Block) {
                self.finish(pid, c, out, ret);
                return;
            }
        }
        self.interrupt(pid, call, ret);
    }

    /// Posts a signal to a process (kill, SIGCHLD, the terminal's): one of
    /// its threads takes it, as in Linux: one that does not block it,
    /// preferably one waiting in a call (it can take it at once), else the
    /// first; if all block it, the first keeps it pending.
    pub fn post_process(&mut self, pid: i32, sig: i32) {
        let threads = self.threads_of(pid);
        let live = |t: &i32| self.procs[t].keep.is_some();
        let open = |t: &i32| self.procs[t].sigmask & bit(sig) == 0 || sig == 9;
        let pick = threads
            .iter()
            .filter(|t| live(t) && open(t))
            .find(|t| self.procs[*t].blocked.is_some())
            .or_else(|| threads.iter().find(|t| live(t) && open(t)))
            .or_else(|| threads.iter().find(|t| live(t)))
            .or(threads.first());
        if let Some(&t) = pick {
            self.post(t, sig);
        }
    }

    /// After thread `pid` took the stop of hidden text (main.rs): if
    /// another thread of its process runs with a signal due, the text is
    /// hidden again so that it comes too.
    pub fn hide_text_for_others(&mut self, pid: i32) {
        let Some(tgid) = self.procs.get(&pid).map(|p| p.tgid) else { return };
        let due = self.procs.values().any(|q| {
            q.tgid == tgid
                && q.pid != pid
                && q.keep.is_some()
                && q.blocked.is_none()
                && q.held.is_none()
                && (q.stopped || q.pending & !q.sigmask != 0)
        });
        if due {
            self.proc(pid).mm.set_text_mapped(false);
        }
    }

    /// A call that waits (its return capability in `ret`) while a signal
    /// is due: the signal is acted on and the call ends with EINTR, or is
    /// made again after the handler when the action has SA_RESTART.
    pub fn interrupt(&mut self, pid: i32, call: Call, ret: u64) {
        let Some(sig) = self.deliverable(pid) else { return };
        // Calls Linux never restarts after a handler, whatever the flags
        // (signal(7)): pause, rt_sigsuspend, the sleeps, and the waits
        // for descriptors (poll, select, pselect6, ppoll, the epoll waits).
        let never = matches!(call.nr, 7 | 23 | 34 | 35 | 130 | 230 | 232 | 270 | 271 | 281 | 441);
        let restart = self.procs[&pid].sigactions[sig as usize][1] & SA_RESTART != 0 && !never;
        if !restart {
            crate::sys::sleep_interrupted(self, pid, &call);
        }
        let p = self.procs.get_mut(&pid).unwrap();
        p.blocked = None;
        p.waits_tty = false;
        let rax = if restart { None } else { Some(-crate::linux::errno::EINTR) };
        match self.deliver(pid, sig, rax, restart.then_some(call.nr)) {
            Delivery::Handler => {
                let _ = Return(ret).reply(Tag::new(reply::RESUME), [0; 4]);
            }
            Delivery::Ended => {
                let _ = SELF_ASPACE.delete_cap(ret);
            }
            Delivery::None => {
                let _ = Return(ret).reply(Tag::new(reply::RESUME_SET_RAX), [(-crate::linux::errno::EINTR) as u64, 0, 0, 0]);
            }
        }
    }

    /// The lowest pending, unblocked signal that needs doing something;
    /// ignored ones are dropped on the way.
    pub fn deliverable(&mut self, pid: i32) -> Option<i32> {
        loop {
            let p = self.procs.get_mut(&pid)?;
            // A stopped thread acts on nothing until it is continued.
            if p.stopped {
                return None;
            }
            let due = p.pending & !p.sigmask;
            if due == 0 {
                return None;
            }
            let sig = due.trailing_zeros() as i32 + 1;
            let action = p.sigactions[sig as usize][0];
            if action == process::SIG_IGN || (action == 0 && ignored_by_default(sig)) {
                p.pending &= !bit(sig);
                continue;
            }
            if action == 0 && is_stop(sig) {
                // A stop signal unblocked: the process stops (as it is
                // posted, but for an orphaned group's SIGTSTP/TTIN/TTOU).
                p.pending &= !bit(sig);
                let (tgid, pgid) = (p.tgid, p.pgid);
                if sig == process::SIGSTOP || !self.orphaned(pgid) {
                    self.stop_process(tgid, sig);
                    return None;
                }
                continue;
            }
            return Some(sig);
        }
    }

    /// Acts on `sig` for `pid`, which waits for the answer to a system call
    /// whose result is `rax` (None: its registers are already final;
    /// `restart`: the call is made again after the handler).
    pub fn deliver(&mut self, pid: i32, sig: i32, rax: Option<i64>, restart: Option<u64>) -> Delivery {
        self.deliver_info(pid, sig, rax, restart, None)
    }

    /// `deliver`, with a fault's details: (si_code, si_addr, trap number,
    /// error code), which the siginfo and sigcontext carry.
    pub fn deliver_info(
        &mut self,
        pid: i32,
        sig: i32,
        rax: Option<i64>,
        restart: Option<u64>,
        fault: Option<(i32, u64, u64, u64)>,
    ) -> Delivery {
        let Some(p) = self.procs.get_mut(&pid) else { return Delivery::None };
        p.pending &= !bit(sig);
        let action = p.sigactions[sig as usize];
        if action[0] == 0 {
            self.terminate(pid, process::signaled(sig));
            return Delivery::Ended;
        }
        let Some(k) = p.keep.as_ref() else { return Delivery::None };
        if k.process.read_regs().is_err() {
            return Delivery::None;
        }
        let buf = keep_rt::ipc_buffer();
        let mut r = buf.regs();
        if let Some(v) = rax {
            r[reg::RAX as usize] = v as u64;
        }
        if let Some(nr) = restart {
            r[reg::RIP as usize] -= 2;
            r[reg::RAX as usize] = nr;
        }
        // Below the red zone, or at the top of the alternate stack for an
        // SA_ONSTACK action when the thread has one and is not on it yet.
        let rsp = r[reg::RSP as usize];
        let alt = p.altstack;
        let onto_alt = action[1] & SA_ONSTACK != 0 && alt.flags & process::AltStack::SS_DISABLE == 0 && !alt.holds(rsp);
        let top = if onto_alt { alt.sp.wrapping_add(alt.size) } else { rsp.wrapping_sub(128) };
        let mut vs = [0u8; VECTOR_MAX];
        let Some(vn) = read_vector_state(k, &mut vs) else { return Delivery::None };
        let xsave = vn > 512;
        let fp_len = if xsave { vn as u64 + 4 } else { vn as u64 };
        let fp = top.wrapping_sub(fp_len) & !63;
        if xsave {
            let xcr0 = xcr0();
            vs[464..468].copy_from_slice(&FP_XSTATE_MAGIC1.to_le_bytes());
            vs[468..472].copy_from_slice(&(vn as u32 + 4).to_le_bytes()); // extended_size
            vs[472..480].copy_from_slice(&xcr0.to_le_bytes());
            vs[480..484].copy_from_slice(&(vn as u32).to_le_bytes()); // xstate_size
        }
        let mut fp_bytes = alloc::vec::Vec::from(&vs[..vn]);
        if xsave {
            fp_bytes.extend_from_slice(&FP_XSTATE_MAGIC2.to_le_bytes());
        }
        let frame = ((fp.wrapping_sub(FRAME)) & !15).wrapping_sub(8);
        let mut words = [0u64; (FRAME / 8) as usize];
        words[1] = if xsave { UC_FP_XSTATE } else { 0 }; // uc_flags
        words[MCONTEXT as usize / 8 + FPSTATE_WORD] = fp;
        words[0] = if action[1] & SA_RESTORER != 0 { action[2] } else { 0 };
        // uc_stack: the alternate stack as the thread has it.
        words[UC_STACK as usize / 8] = alt.sp;
        words[UC_STACK as usize / 8 + 1] = alt.flags as u64;
        words[UC_STACK as usize / 8 + 2] = alt.size;
        if onto_alt && alt.flags & process::AltStack::SS_AUTODISARM != 0 {
            p.altstack = process::AltStack::NONE;
        }
        for (i, &rg) in ORDER.iter().enumerate() {
            words[MCONTEXT as usize / 8 + i] = r[rg as usize];
        }
        words[MCONTEXT as usize / 8 + 18] = 0x33; // cs
        let mut code = 0;
        if let Some((si_code, addr, trapno, err)) = fault {
            words[MCONTEXT as usize / 8 + 19] = err;
            words[MCONTEXT as usize / 8 + 20] = trapno;
            words[MCONTEXT as usize / 8 + 22] = addr; // cr2
            words[SIGINFO as usize / 8 + 2] = addr; // si_addr
            code = si_code as u32 as u64;
        }
        // rt_sigsuspend's caller gets its own mask back after the handler.
        let old_mask = p.saved_mask.take().unwrap_or(p.sigmask);
        words[MCONTEXT as usize / 8 + 21] = old_mask;
        words[SIGMASK as usize / 8] = old_mask;
        // SIGCHLD from a child's end, stop or continue: si_code CLD_*,
        // si_pid, si_uid 0, si_status.
        if let Some((si_code, child, status)) = p.chld_info.take().filter(|_| sig == process::SIGCHLD) {
            code = si_code as u32 as u64;
            words[SIGINFO as usize / 8 + 2] = child as u32 as u64;
            words[SIGINFO as usize / 8 + 3] = status as u32 as u64;
        }
        words[SIGINFO as usize / 8] = sig as u64; // si_signo; si_errno 0
        words[SIGINFO as usize / 8 + 1] = code; // si_code (SI_USER 0 but for faults)
        let bytes: alloc::vec::Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        if p.mm.write(frame, &bytes).is_err() || p.mm.write(fp, &fp_bytes).is_err() {
            self.terminate(pid, process::signaled(process::SIGSEGV));
            return Delivery::Ended;
        }
        let init = initial_vector_state(&vs);
        keep_rt::ipc_buffer().set_vector_state(&init[..vn]);
        if k.process.write_vector_state().is_err() {
            self.terminate(pid, process::signaled(process::SIGSEGV));
            return Delivery::Ended;
        }
        r[reg::RIP as usize] = action[0];
        r[reg::RSP as usize] = frame;
        r[reg::RDI as usize] = sig as u64;
        r[reg::RSI as usize] = frame + SIGINFO;
        r[reg::RDX as usize] = frame + UC;
        r[reg::RAX as usize] = 0;
        buf.set_regs(&r);
        if k.process.write_regs().is_err() {
            self.terminate(pid, process::signaled(process::SIGSEGV));
            return Delivery::Ended;
        }
        p.sigmask |= (action[3] | if action[1] & SA_NODEFER != 0 { 0 } else { bit(sig) }) & !UNBLOCKABLE;
        if action[1] & SA_RESETHAND != 0 {
            p.sigactions[sig as usize] = [0; 4];
        }
        Delivery::Handler
    }
}

/// Job control: stopping and continuing a process, what its parent is
/// told, orphaned process groups.
impl Server {
    /// Stops every thread of process `tgid` for `sig`: a thread waiting in
    /// a call stays waiting (the call is not tried while stopped); the
    /// thread the server is answering, or one that comes with a call or a
    /// fault (its text is hidden, as for a signal), has its answer held
    /// (`hold`).  The parent is told (`report`).
    pub fn stop_process(&mut self, tgid: i32, sig: i32) {
        let threads = self.threads_of(tgid);
        if threads.is_empty() || self.procs[&tgid].zombie.is_some() || self.procs[&tgid].stopped {
            return;
        }
        let mut hide = None;
        for t in threads {
            let current = self.current == Some(t);
            let p = self.proc(t);
            p.stopped = true;
            if p.keep.is_some() && p.blocked.is_none() && !current && !p.mm.text_hidden {
                hide = Some(t);
            }
        }
        if let Some(t) = hide {
            self.proc(t).mm.set_text_mapped(false);
        }
        self.report(tgid, process::CLD_STOPPED, sig);
    }

    /// SIGCONT: a stopped process goes on; held answers are given (with
    /// any signal due acted on first), waiting calls tried again.
    pub fn continue_process(&mut self, tgid: i32) {
        let threads = self.threads_of(tgid);
        if !threads.iter().any(|t| self.procs[t].stopped) {
            return;
        }
        for &t in &threads {
            self.proc(t).stopped = false;
        }
        self.maybe_waiting = true;
        self.ended = true; // a parked wait4 is tried again too
        self.report(tgid, process::CLD_CONTINUED, process::SIGCONT);
        for t in threads {
            let Some(p) = self.procs.get_mut(&t) else { continue };
            let Some((lbl, rax)) = p.held.take() else { continue };
            let ret = p.ret_slot;
            let out = if lbl == reply::RESUME_SET_RAX { Out::Ret(rax as i64) } else { Out::Resume };
            self.finish(t, Call { nr: 0, args: [0; 6], have_all: true }, out, ret);
        }
    }

    /// A stopped thread's answer waits (its return capability, `ret`,
    /// moved to its slot) until it is continued.
    pub fn hold(&mut self, pid: i32, answer: (u64, u64), ret: u64) {
        let Some(p) = self.procs.get_mut(&pid) else { return };
        if ret != p.ret_slot {
            let _ = SELF_ASPACE.delete_cap(p.ret_slot);
            let _ = SELF_ASPACE.move_cap(ret, p.ret_slot);
        }
        p.held = Some(answer);
    }

    /// Process `tgid` stopped (CLD_STOPPED, by `sig`) or continued
    /// (CLD_CONTINUED): a report for its parent's wait (WUNTRACED,
    /// WSTOPPED, WCONTINUED) and SIGCHLD unless the parent's action has
    /// SA_NOCLDSTOP.
    fn report(&mut self, tgid: i32, code: i32, sig: i32) {
        let status = if code == process::CLD_STOPPED { process::stopped(sig) } else { process::CONTINUED };
        let p = self.proc(tgid);
        p.stop_report = Some(status);
        let ppid = p.ppid;
        self.ended = true; // the parent's wait4 is tried again
        self.maybe_waiting = true;
        let Some(parent) = self.procs.get(&ppid) else { return };
        let act = parent.sigactions[process::SIGCHLD as usize];
        if act[0] == process::SIG_IGN || act[1] & process::SA_NOCLDSTOP != 0 {
            return;
        }
        self.post_chld(ppid, (code, tgid, sig));
    }

    /// Posts SIGCHLD to process `ppid` with what its siginfo tells.
    pub fn post_chld(&mut self, ppid: i32, info: (i32, i32, i32)) {
        for t in self.threads_of(ppid) {
            self.proc(t).chld_info = Some(info);
        }
        self.post_process(ppid, process::SIGCHLD);
    }

    /// Whether process group `pgid` is orphaned (POSIX): no member has a
    /// parent in another group of the same session.
    pub fn orphaned(&self, pgid: i32) -> bool {
        !self.procs.values().any(|p| {
            p.pid == p.tgid
                && p.zombie.is_none()
                && p.pgid == pgid
                && self.procs.get(&p.ppid).is_some_and(|q| q.zombie.is_none() && q.pgid != pgid && q.sid == p.sid)
        })
    }

    /// After a process's end: each group in `groups` that is orphaned now
    /// and has a stopped member gets SIGHUP then SIGCONT, as on Linux.
    pub fn hang_up_orphans(&mut self, groups: &[i32]) {
        for &g in groups {
            let members: Vec<i32> = self
                .procs
                .values()
                .filter(|p| p.pid == p.tgid && p.zombie.is_none() && p.pgid == g)
                .map(|p| p.pid)
                .collect();
            if members.is_empty() || !members.iter().any(|m| self.procs[m].stopped) || !self.orphaned(g) {
                continue;
            }
            for &m in &members {
                self.post_process(m, process::SIGHUP);
            }
            for &m in &members {
                self.post_process(m, process::SIGCONT);
            }
        }
    }
}

/// rt_sigreturn: back from a handler, the registers and mask of its frame
/// (the restorer calls it with rsp at the frame's ucontext).
pub fn rt_sigreturn(s: &mut Server, pid: i32, _: &mut Call) -> Out {
    let p = s.proc(pid);
    let Some(k) = p.keep.as_ref() else { return Out::Gone };
    if k.process.read_regs().is_err() {
        return Out::Gone;
    }
    let buf = keep_rt::ipc_buffer();
    let mut r = buf.regs();
    let uc = r[reg::RSP as usize];
    let mut ctx = [0u8; 256];
    let mut mask = [0u8; 8];
    let mut stack = [0u8; 24];
    if p.mm.read(uc + MCONTEXT - UC, &mut ctx).is_err()
        || p.mm.read(uc + SIGMASK - UC, &mut mask).is_err()
        || p.mm.read(uc + UC_STACK - UC, &mut stack).is_err()
    {
        s.terminate(pid, process::signaled(process::SIGSEGV));
        return Out::Gone;
    }
    for (i, &rg) in ORDER.iter().enumerate() {
        r[rg as usize] = u64::from_le_bytes(ctx[i * 8..i * 8 + 8].try_into().unwrap());
    }
    // The vector state the frame holds (a handler may have changed it); a
    // frame without one (fpstate 0) gives the initial state, as on Linux.
    let fp = u64::from_le_bytes(ctx[FPSTATE_WORD * 8..FPSTATE_WORD * 8 + 8].try_into().unwrap());
    {
        let mut vs = [0u8; VECTOR_MAX];
        let Some(vn) = read_vector_state(k, &mut vs) else { return Out::Gone };
        if fp == 0 {
            vs = initial_vector_state(&vs);
        }
        if (fp != 0 && p.mm.read(fp, &mut vs[..vn]).is_err()) || {
            buf.set_vector_state(&vs[..vn]);
            k.process.write_vector_state().is_err()
        } {
            s.terminate(pid, process::signaled(process::SIGSEGV));
            return Out::Gone;
        }
    }
    buf.set_regs(&r);
    if k.process.write_regs().is_err() {
        s.terminate(pid, process::signaled(process::SIGSEGV));
        return Out::Gone;
    }
    p.sigmask = u64::from_le_bytes(mask) & !UNBLOCKABLE;
    // The alternate stack as the frame has it (Linux's restore_altstack;
    // what it refuses is left as it was).
    let rsp = r[reg::RSP as usize];
    let word = |i: usize| u64::from_le_bytes(stack[i * 8..i * 8 + 8].try_into().unwrap());
    if let Ok(a) = altstack_from(word(0), word(1) as u32, word(2))
        && !p.altstack.holds(rsp)
    {
        p.altstack = a;
    }
    Out::Resume
}

/// The alternate stack a stack_t asks for: EINVAL for unknown flags,
/// ENOMEM for a stack smaller than MINSIGSTKSZ.
fn altstack_from(sp: u64, flags: u32, size: u64) -> Result<process::AltStack, i64> {
    let mode = flags & !process::AltStack::SS_AUTODISARM;
    match mode {
        process::AltStack::SS_DISABLE => Ok(process::AltStack::NONE),
        0 | process::AltStack::SS_ONSTACK if size < MINSIGSTKSZ => Err(crate::linux::errno::ENOMEM),
        0 | process::AltStack::SS_ONSTACK => {
            Ok(process::AltStack { sp, size, flags: flags & process::AltStack::SS_AUTODISARM })
        }
        _ => Err(crate::linux::errno::EINVAL),
    }
}

/// sigaltstack(ss, old_ss): the thread's alternate signal stack.  The old
/// one's flags say SS_ONSTACK while the thread runs on it, which it may
/// then not change (EPERM).
pub fn sigaltstack(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (new, old) = (c.args[0], c.args[1]);
    let p = s.proc(pid);
    // Where the thread's stack is, only when it has an alternate one.
    let mut on = false;
    if p.altstack.flags & process::AltStack::SS_DISABLE == 0 {
        let Some(k) = p.keep.as_ref() else { return Out::Gone };
        if k.process.read_regs().is_err() {
            return Out::Gone;
        }
        on = p.altstack.holds(keep_rt::ipc_buffer().regs()[reg::RSP as usize]);
    }
    let was = p.altstack;
    if new != 0 {
        let mut b = [0u8; 24];
        if let Err(e) = p.mm.read(new, &mut b) {
            return Out::Ret(-e);
        }
        let word = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        if on {
            return Out::Ret(-crate::linux::errno::EPERM);
        }
        match altstack_from(word(0), word(1) as u32, word(2)) {
            Ok(a) => p.altstack = a,
            Err(e) => return Out::Ret(-e),
        }
    }
    if old != 0 {
        let flags = was.flags | if on { process::AltStack::SS_ONSTACK } else { 0 };
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&was.sp.to_le_bytes());
        b[8..12].copy_from_slice(&flags.to_le_bytes());
        b[16..24].copy_from_slice(&was.size.to_le_bytes());
        if let Err(e) = p.mm.write(old, &b) {
            return Out::Ret(-e);
        }
    }
    Out::Ret(0)
}

pub fn rt_sigpending(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let p = s.proc(pid);
    let v = p.pending & p.sigmask;
    match p.mm.write_u64(c.args[0], v) {
        Ok(()) => Out::Ret(0),
        Err(e) => Out::Ret(-e),
    }
}

/// rt_sigsuspend: waits with a temporary mask until a signal is acted on
/// (args[5] marks the call as waiting).
pub fn rt_sigsuspend(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    if c.args[5] == 0 {
        let p = s.proc(pid);
        let mask = match p.mm.read_u64(c.args[0]) {
            Ok(m) => m,
            Err(e) => return Out::Ret(-e),
        };
        p.saved_mask = Some(p.sigmask);
        p.sigmask = mask & !UNBLOCKABLE;
        c.args[5] = 1;
        c.have_all = true;
        if s.deliverable(pid).is_some() {
            return Out::Ret(-crate::linux::errno::EINTR);
        }
    }
    Out::Block
}
