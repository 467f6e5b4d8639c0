//! The console multiplexer's cost per character (docs/trusted-core.md,
//! "The trusted path"): `vt.write.char`, a 32-byte write (a `print!`'s
//! message) to a terminal that does not have the screen (the IPC and the
//! multiplexer's filter and kept buffer, no serial output), per byte;
//! `vt.write.string.char`, a 4 KiB IPC-string write (the workhorse's
//! terminal output) to it, per byte; `vt.shown.char`, 32 bytes to the
//! terminal that has the screen (as above, and the kernel console's serial
//! output), per byte, beside `console.write.char`, the same 32 bytes
//! straight to the kernel's console.  The multiplexer is the shell's; in
//! `make bench`'s boot, where no shell runs, the suite starts it (last, so
//! that the other benchmarks print to the kernel's console as before).

use keep_abi::terminal::{self as proto, Terminal};
use keep_abi::Console;

use super::{Runs, Suite};
use crate::Root;

const N: u64 = 200;

fn per_byte(r: Runs, bytes: u64) -> Runs {
    Runs(r.0.map(|x| x / bytes))
}

pub fn run(root: &mut Root, s: &mut Suite) {
    if !s.wants_any("vt.") && !s.wants("console.write.char") {
        return;
    }
    if root.mux.is_none() {
        root.mux = crate::terminals::start(root);
    }
    let Some(m) = root.mux.as_mut() else {
        s.fail("vt", "the console multiplexer did not start");
        return;
    };
    let hidden = match m.terminal(&mut root.slots, "bench", proto::INTERACTIVE) {
        Ok((t, _)) => Terminal(t),
        Err(e) => {
            s.fail("vt", &alloc::format!("no terminal: {e}"));
            return;
        }
    };
    let shown = m.shell;
    let raw = Console(m.raw_console);
    let line = *b"                               \n";
    if s.wants("vt.write.char") {
        let r = s.measure(N, || hidden.write_words(&line));
        s.report("vt.write.char", "instructions", per_byte(r, 32));
    }
    if s.wants("vt.write.string.char") {
        let block = [b'x'; proto::WRITE_MAX];
        let r = s.measure(N / 4, || hidden.write_string(keep_rt::ipc_buffer(), &block));
        s.report("vt.write.string.char", "instructions", per_byte(r, proto::WRITE_MAX as u64));
    }
    if s.wants("vt.shown.char") {
        let r = s.measure(N, || shown.write_words(&line));
        s.report("vt.shown.char", "instructions", per_byte(r, 32));
    }
    if s.wants("console.write.char") {
        let r = s.measure(N, || raw.write(&line));
        s.report("console.write.char", "instructions", per_byte(r, 32));
    }
}
