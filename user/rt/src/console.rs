//! `print!`/`println!` on the debug console in slot CONSOLE.  Each call is
//! formatted into a stack buffer and written with as few CONSOLE.WRITE
//! invocations as possible, so lines of concurrent programs rarely mix.

use core::fmt::{self, Write};

use crate::abi::CONSOLE;

/// Bytes formatted before a write; well below the kernel's 4096 limit.
const BUF_SIZE: usize = 1024;

struct Buffered {
    buf: [u8; BUF_SIZE],
    len: usize,
}

impl Buffered {
    fn flush(&mut self) {
        // Nothing sensible can be done when the console refuses output.
        let _ = CONSOLE.write_all(&self.buf[..self.len]);
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

/// Writes raw bytes (for echoing input, which need not be UTF-8).
pub fn write_bytes(bytes: &[u8]) {
    let _ = CONSOLE.write_all(bytes);
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
