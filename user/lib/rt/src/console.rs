//! `print!`/`println!` on the program's console in slot CONSOLE: the
//! kernel's debug console, or a virtual terminal of the console
//! multiplexer (`keep_abi::terminal`; docs/trusted-core.md, "The trusted
//! path"), whichever the slot holds (looked at once).  Each call is
//! formatted into a stack buffer and written with as few invocations as
//! possible, so lines of concurrent programs rarely mix.  A terminal gets
//! the bytes in the message's words, so a print never disturbs the
//! program's IPC buffer.

use core::fmt::{self, Write};
use core::sync::atomic::{AtomicU64, Ordering};

use crate::abi::{CONSOLE, Console, SELF_ASPACE, slot, terminal::Terminal, ty};

/// Bytes formatted before a write; well below the kernel's 4096 limit.
const BUF_SIZE: usize = 1024;

/// Where output goes: 0 not looked at yet, else the slot | TERMINAL_BIT
/// for a terminal.
static OUTPUT: AtomicU64 = AtomicU64::new(0);
const TERMINAL_BIT: u64 = 1 << 63;

/// Sends the program's output to the terminal at `cap` from now on (the
/// root task, once it has started the multiplexer).
pub fn use_terminal(cap: u64) {
    OUTPUT.store(cap | TERMINAL_BIT, Ordering::Relaxed);
}

/// Sends output to the kernel's debug console in slot CONSOLE again.
pub fn use_kernel_console() {
    OUTPUT.store(slot::CONSOLE, Ordering::Relaxed);
}

fn output() -> u64 {
    let o = OUTPUT.load(Ordering::Relaxed);
    if o != 0 {
        return o;
    }
    let o = match SELF_ASPACE.identify_cap(slot::CONSOLE) {
        Ok(c) if c.ty == ty::SENDER => slot::CONSOLE | TERMINAL_BIT,
        _ => slot::CONSOLE,
    };
    OUTPUT.store(o, Ordering::Relaxed);
    o
}

/// Writes raw bytes (for echoing input, which need not be UTF-8).
pub fn write_bytes(bytes: &[u8]) {
    let o = output();
    if o & TERMINAL_BIT != 0 {
        let _ = Terminal(o & !TERMINAL_BIT).write_all_words(bytes);
    } else if o == slot::CONSOLE {
        let _ = CONSOLE.write_all(bytes);
    } else {
        let _ = Console(o).write_all(bytes);
    }
}

struct Buffered {
    buf: [u8; BUF_SIZE],
    len: usize,
}

impl Buffered {
    fn flush(&mut self) {
        // Nothing sensible can be done when the console refuses output.
        write_bytes(&self.buf[..self.len]);
        self.len = 0;
    }
}

impl Write for Buffered {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for chunk in s.as_bytes().chunks(BUF_SIZE) {
            if self.len + chunk.len() > BUF_SIZE {
                self.flush();
            }
            self.buf[self.len..self.len + chunk.len()].copy_from_slice(chunk);
            self.len += chunk.len();
        }
        Ok(())
    }
}

#[doc(hidden)]
pub fn _print(args: fmt::Arguments) {
    let mut out = Buffered {
        buf: [0; BUF_SIZE],
        len: 0,
    };
    let _ = out.write_fmt(args);
    out.flush();
}

#[macro_export]
macro_rules! print {
    ($($arg:tt)*) => { $crate::console::_print(format_args!($($arg)*)) };
}

#[macro_export]
macro_rules! println {
    () => { $crate::console::_print(format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::console::_print(format_args!("{}\n", format_args!($($arg)*)))
    };
}
