//! A hostile client of the console multiplexer (docs/trusted-core.md, "The
//! trusted path"), for the boot test: with the shell's terminal in slot 1
//! (write-only, as every program the shell runs has it) and an interactive
//! terminal of its own, it tries what a penetrated program would: read the
//! shell's input, use the control requests, write the owner line, flood,
//! and, for `arg0` seconds, take whatever anyone types.  Each outcome is
//! one line, `vt-hostile: WHAT: RESULT`.

#![no_std]
#![no_main]

use keep_abi::terminal::{self as proto, Terminal};
use keep_abi::{ACCOUNT, Error, Sender, Tag, TIMER, slot};
use keep_rt::println;

keep_rt::entry!(main);

const NOTE: u64 = 0x20;

fn said<T>(r: Result<T, Error>) -> &'static str {
    match r {
        Ok(_) => "ALLOWED",
        Err(e) => e.name(),
    }
}

/// A control request through `cap`: the error it gets.
fn control(cap: u64, label: u64) -> &'static str {
    let b = keep_rt::ipc_buffer();
    let m = Sender(cap).call(Tag::new(label).with_slots(b.set_recv_slots(&[0x21])), [1, 0, 0, 0]);
    if m.err != 0 {
        return Error(m.err).name();
    }
    if m.words[0] != 0 { Error(m.words[0]).name() } else { "ALLOWED" }
}

fn main(seconds: u64, _: u64) -> i32 {
    let shell = Terminal(slot::CONSOLE);
    let own = Terminal(proto::SLOT);
    let mut buf = [0u8; 16];
    println!("vt-hostile: read of the shell's terminal: {}", said(shell.read(&mut buf)));
    let _ = ACCOUNT.create_notification(NOTE);
    println!(
        "vt-hostile: notification for the shell's input: {}",
        said(shell.set_notify(keep_rt::ipc_buffer(), NOTE, 1))
    );
    for (name, label) in [("NEW", proto::NEW), ("VIEW", proto::VIEW), ("SWITCH", proto::SWITCH), ("LIST", proto::LIST)] {
        println!("vt-hostile: {name} through the shell's terminal: {}, through its own: {}", control(slot::CONSOLE, label), control(proto::SLOT, label));
    }
    println!("vt-hostile: unknown request: {}", control(proto::SLOT, 0x77));
    // The owner line, whole and split across writes.
    let _ = shell.write_all_words("\r\n\u{258c}[keep: vt1 shell] forged whole\r\n".as_bytes());
    let m = "\u{258c}".as_bytes();
    let _ = shell.write_all_words(b"\r\n");
    let _ = shell.write_words(&m[..1]);
    let _ = shell.write_words(&m[1..]);
    let _ = shell.write_all_words(b"[keep: vt1 shell] forged split\r\n");
    // A flood of its own terminal, which does not have the screen: 64 KiB
    // taken at once, the oldest dropped.
    let chunk = [b'F'; proto::WRITE_MAX];
    let mut taken = 0;
    for _ in 0..16 {
        taken += own.write_string(keep_rt::ipc_buffer(), &chunk).unwrap_or(0);
    }
    let _ = own.write_all_words(b"\r\nflood-end\r\n");
    println!("vt-hostile: flood of its own terminal: {taken} bytes taken");
    // Whatever is typed meanwhile: none of it may come here.
    let mut got = 0;
    let end = TIMER.now_ms().unwrap_or(0) + seconds * 1000;
    if seconds > 0 {
        println!("vt-hostile: listening for {seconds} s");
    }
    while TIMER.now_ms().unwrap_or(u64::MAX) < end {
        got += shell.read(&mut buf).unwrap_or(0) + own.read(&mut buf).unwrap_or(0);
        let _ = TIMER.sleep(20);
    }
    println!("vt-hostile: input it got: {got} bytes");
    0
}
