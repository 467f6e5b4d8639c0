//! The terminal: the server's own terminal of the console multiplexer
//! (the description's `terminal`, in slot `keep_abi::terminal::SLOT`;
//! docs/trusted-core.md, "The trusted path"), or the kernel's console when
//! it has none, with a line discipline in the server.  The multiplexer
//! signals the server's notification (wake.rs, bit `CONSOLE`) when input
//! is waiting: the server's receive gets it as a NOTIFY message, and only
//! then does the server read the terminal (no polling).
//! Canonical mode (the default) echoes and edits a line (Backspace/DEL,
//! Ctrl-U) and hands it over at Enter; Ctrl-D ends input (an empty read).
//! With ICANON off (busybox's line editor asks for it) bytes go to the
//! reader as they come, echoed only with ECHO.  Output turns "\n" into
//! "\r\n" (OPOST|ONLCR).

use alloc::collections::VecDeque;
use alloc::vec::Vec;

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use keep_abi::terminal::{self as vt, Terminal};
use keep_abi::{CONSOLE, Error, SELF_ASPACE, ty};
pub(crate) use crate::linux::ioctl::{ECHO, ICANON, ICRNL, ISIG, ONLCR, OPOST, TOSTOP};

/// Where the multiplexer's copy of the server's notification is kept.
const NOTIFICATION_SLOT: u64 = 0x1c;

/// The terminal, once [`attach`] found one; and whether input may be
/// waiting there (set by the NOTIFY message, cleared by a read).
static TERMINAL: AtomicU64 = AtomicU64::new(0);
static WAITING: AtomicBool = AtomicBool::new(true);
/// Without a terminal: whether slot 1 is the kernel's console (else an
/// output-only terminal, which has no input).
static KERNEL_INPUT: AtomicBool = AtomicBool::new(false);

/// Takes the terminal in slot `vt::SLOT`, if the server has one, and asks
/// the multiplexer for a notification when input arrives; Err says why
/// the server uses the kernel's console instead.
pub fn attach() -> Result<(), Error> {
    let kernel = SELF_ASPACE.identify_cap(keep_abi::slot::CONSOLE).is_ok_and(|c| c.ty == ty::CONSOLE);
    KERNEL_INPUT.store(kernel, Ordering::Relaxed);
    let c = SELF_ASPACE.identify_cap(vt::SLOT)?;
    if c.ty != ty::SENDER {
        return Err(Error::WRONG_TYPE);
    }
    let t = Terminal(vt::SLOT);
    // The server's one bound notification (wake.rs), with the console's bit.
    crate::wake::give(NOTIFICATION_SLOT)?;
    t.set_notify(keep_rt::ipc_buffer(), NOTIFICATION_SLOT, crate::wake::CONSOLE)?;
    TERMINAL.store(t.0, Ordering::Relaxed);
    Ok(())
}

/// The NOTIFY message came: input is waiting.
pub fn notified() {
    WAITING.store(true, Ordering::Relaxed);
}

fn terminal() -> Option<Terminal> {
    match TERMINAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(Terminal(s)),
    }
}

/// Writes to the terminal through the IPC string (up to 4 KiB a message),
/// putting back the part of the IPC buffer it used, which a request being
/// handled may still need.
fn write_terminal(t: Terminal, mut data: &[u8]) {
    let b = keep_rt::ipc_buffer();
    let mut saved = [0u8; vt::WRITE_MAX];
    let (send_len, recv_len) = (b.send_len, b.received_len());
    let n = data.len().min(vt::WRITE_MAX);
    saved[..n].copy_from_slice(&b.string[..n]);
    while !data.is_empty() {
        match t.write_string(b, data) {
            Ok(k) if k > 0 => data = &data[k.min(data.len())..],
            _ => break,
        }
    }
    b.string[..n].copy_from_slice(&saved[..n]);
    b.send_len = send_len;
    // SAFETY: a plain field of the buffer, which the kernel also writes.
    unsafe { core::ptr::write_volatile(&mut b.recv_len, recv_len as u64) };
}

fn output(data: &[u8]) {
    match terminal() {
        Some(t) => write_terminal(t, data),
        // Slot 1 is the kernel's console, or an output-only terminal
        // (`console` without `terminal`: output only, no input).
        None => keep_rt::console::write_bytes(data),
    }
}

/// c_cc indices (the array here starts with the line discipline byte).
const VINTR: usize = 1;
const VQUIT: usize = 2;
const VSUSP: usize = 11;

/// struct termios of the kernel ABI (asm-generic/termbits.h): 4 flag words,
/// the line discipline, 19 control characters (TCGETS/TCSETS use this,
/// 36 bytes).
#[derive(Clone, Copy)]
pub struct Termios {
    pub iflag: u32,
    pub oflag: u32,
    pub cflag: u32,
    pub lflag: u32,
    pub cc: [u8; 20],
}

impl Termios {
    pub fn default_tty() -> Termios {
        let mut cc = [0u8; 20];
        // line, then VINTR, VQUIT, VERASE, VKILL, VEOF, VTIME, VMIN
        cc[1] = 3;
        cc[2] = 0x1c;
        cc[3] = 0x7f;
        cc[4] = 0x15;
        cc[5] = 4;
        cc[7] = 1;
        cc[VSUSP] = 0x1a; // Ctrl-Z
        Termios {
            iflag: ICRNL | 0o2000, // ICRNL | IXON
            oflag: OPOST | ONLCR,
            cflag: 0o277, // B38400 | CS8 | CREAD
            lflag: ICANON | ECHO | 0o1 | 0o20 | 0o40 | 0o1000 | 0o4000 | 0o100000, // ISIG ECHOE ECHOK ECHOCTL ECHOKE IEXTEN
            cc,
        }
    }

    pub fn to_bytes(self) -> [u8; 36] {
        let mut b = [0u8; 36];
        b[0..4].copy_from_slice(&self.iflag.to_le_bytes());
        b[4..8].copy_from_slice(&self.oflag.to_le_bytes());
        b[8..12].copy_from_slice(&self.cflag.to_le_bytes());
        b[12..16].copy_from_slice(&self.lflag.to_le_bytes());
        b[16..36].copy_from_slice(&self.cc);
        b
    }

    pub fn from_bytes(b: &[u8; 36]) -> Termios {
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let mut cc = [0u8; 20];
        cc.copy_from_slice(&b[16..36]);
        Termios { iflag: w(0), oflag: w(4), cflag: w(8), lflag: w(12), cc }
    }
}

static mut TTY: Option<Tty> = None;

/// The one terminal (the server is single threaded).
#[allow(static_mut_refs)]
pub fn tty() -> &'static mut Tty {
    // SAFETY: single threaded; no caller keeps it across a call that
    // takes it again.
    unsafe { TTY.get_or_insert_with(Tty::new) }
}

pub struct Tty {
    pub termios: Termios,
    /// Bytes ready for readers (complete lines in canonical mode).
    ready: VecDeque<u8>,
    /// The line being edited (canonical mode).
    line: Vec<u8>,
    /// Ctrl-D seen: the next read returns what is ready, or 0.
    eof: bool,
    /// Signals typed (Ctrl-C, Ctrl-\\) for the foreground group.
    signals: VecDeque<i32>,
    /// The foreground process group (TIOCSPGRP).
    pub fg_pgrp: i32,
    /// The session whose controlling terminal it is (the first process
    /// of a RUN's; a pseudo-terminal's, its leader's that took it).
    pub session: i32,
    /// Where output goes: None for the console, else a pseudo-terminal's
    /// bytes for its master side (sys/pty.rs).
    pub out: Option<VecDeque<u8>>,
}

impl Tty {
    pub fn new() -> Tty {
        Tty {
            termios: Termios::default_tty(),
            ready: VecDeque::new(),
            line: Vec::new(),
            eof: false,
            signals: VecDeque::new(),
            fg_pgrp: 0,
            session: 0,
            out: None,
        }
    }

    pub fn write(&mut self, data: &[u8]) {
        let t = self.termios;
        if t.oflag & OPOST != 0 && t.oflag & ONLCR != 0 && data.contains(&b'\n') {
            let mut out = Vec::with_capacity(data.len() + 16);
            for &b in data {
                if b == b'\n' {
                    out.push(b'\r');
                }
                out.push(b);
            }
            self.emit(&out);
        } else {
            self.emit(data);
        }
    }

    fn emit(&mut self, data: &[u8]) {
        match &mut self.out {
            Some(q) => q.extend(data.iter().copied()),
            None => output(data),
        }
    }

    /// A pseudo-terminal's line discipline: output kept for its master.
    pub fn for_pty() -> Tty {
        Tty { out: Some(VecDeque::new()), ..Tty::new() }
    }

    /// TCSETS: new settings; TCSETSF also drops the input not yet read.
    /// A line being edited when canonical mode is turned off can be read
    /// at once (as on Linux: type-ahead reaches readline).
    pub fn set_termios(&mut self, t: Termios, flush: bool) {
        if flush {
            self.ready.clear();
            self.line.clear();
        } else if t.lflag & ICANON == 0 {
            self.ready.extend(self.line.drain(..));
        }
        self.termios = t;
    }

    /// Takes what the terminal has (without waiting) through the line
    /// discipline; from the multiplexer only when it said input waits.
    pub fn poll(&mut self) {
        if let Some(t) = terminal() {
            if !WAITING.swap(false, Ordering::Relaxed) {
                return;
            }
            let mut buf = [0u8; vt::READ_MAX];
            while let Ok(n) = t.read(&mut buf) {
                for &b in &buf[..n.min(buf.len())] {
                    self.input(b);
                }
            }
            return;
        }
        if !KERNEL_INPUT.load(Ordering::Relaxed) {
            return;
        }
        let mut buf = [0u8; 64];
        while let Ok(n) = CONSOLE.read(&mut buf, true) {
            let n = n.min(buf.len());
            if n == 0 {
                break;
            }
            for &b in &buf[..n] {
                self.input(b);
            }
        }
    }

    /// Input the user typed before the program started (the root shell
    /// read it with the command line): taken as if typed now.
    pub fn type_ahead(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.input(b);
        }
    }

    pub fn input(&mut self, mut b: u8) {
        let t = self.termios;
        if t.lflag & ISIG != 0 && b != 0 && (b == t.cc[VINTR] || b == t.cc[VQUIT] || b == t.cc[VSUSP]) {
            // VINTR, VQUIT, VSUSP: SIGINT, SIGQUIT, SIGTSTP for the
            // foreground group; the line typed so far is dropped.
            let sig = if b == t.cc[VINTR] {
                2
            } else if b == t.cc[VQUIT] {
                3
            } else {
                crate::process::SIGTSTP
            };
            self.signals.push_back(sig);
            self.line.clear();
            if t.lflag & ECHO != 0 {
                self.write(match sig {
                    2 => b"^C\n",
                    3 => b"^\\\n",
                    _ => b"^Z",
                });
            }
            return;
        }
        if b == b'\r' && t.iflag & ICRNL != 0 {
            b = b'\n';
        }
        if t.lflag & ICANON == 0 {
            self.ready.push_back(b);
            if t.lflag & ECHO != 0 {
                self.write(&[b]);
            }
            return;
        }
        match b {
            b'\n' => {
                self.line.push(b'\n');
                self.ready.extend(self.line.drain(..));
                if t.lflag & ECHO != 0 {
                    self.write(b"\n");
                }
            }
            0x7f | 0x08 => {
                if self.line.pop().is_some() && t.lflag & ECHO != 0 {
                    self.write(b"\x08 \x08");
                }
            }
            0x15 => {
                while self.line.pop().is_some() {
                    if t.lflag & ECHO != 0 {
                        self.write(b"\x08 \x08");
                    }
                }
            }
            0x04 => {
                self.ready.extend(self.line.drain(..));
                self.eof = true;
            }
            _ => {
                self.line.push(b);
                if t.lflag & ECHO != 0 {
                    self.write(&[b]);
                }
            }
        }
    }

    /// Bytes for a reader: Some(n) (0 at end of input), None when nothing
    /// is ready yet.
    pub fn read(&mut self, out: &mut [u8]) -> Option<usize> {
        if self.ready.is_empty() {
            if self.eof {
                self.eof = false;
                return Some(0);
            }
            return None;
        }
        let canon = self.termios.lflag & ICANON != 0;
        let mut n = 0;
        while n < out.len() {
            let Some(b) = self.ready.pop_front() else { break };
            out[n] = b;
            n += 1;
            if canon && b == b'\n' {
                break;
            }
        }
        Some(n)
    }

    /// The next signal typed, if any.
    pub fn take_signal(&mut self) -> Option<i32> {
        self.signals.pop_front()
    }

    /// Whether a read would return at once (with data or end of input).
    /// Bytes a read would get now (FIONREAD).
    pub fn pending(&self) -> usize {
        self.ready.len()
    }

    pub fn has_input(&self) -> bool {
        !self.ready.is_empty() || self.eof
    }

    /// Forgets pending input (a new session starts).
    pub fn reset(&mut self) {
        *self = Tty::new();
    }
}
