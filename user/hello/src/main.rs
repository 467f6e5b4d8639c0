//! A tiny program for tests and the shell's `run`: prints a greeting and
//! exits 0.  With arg0 == 1 it panics (the panic handler exits with 101);
//! with arg0 == 2 it exits with code arg1; with arg0 == 3 it prints nothing
//! and sleeps arg1 milliseconds (0: until it is stopped), then exits 0 —
//! something to run in the background and `kill`; with arg0 == 4 it takes
//! one call and never answers it, sleeping until it is stopped (a server
//! that dies with a caller waiting, for ktest); with arg0 == 5 it exits 0
//! at once (the benchmarks' empty program).

#![no_std]
#![no_main]

use keep_abi::{TIMER, Tag, recv};
use keep_rt::println;

keep_rt::entry!(main);

/// Where mode 4 takes its caller's return capability.
const RET_SLOT: u64 = 0x20;

fn main(arg0: u64, arg1: u64) -> i32 {
    // The benchmarks' empty program (proc.create.*): it ends at once.
    if arg0 == 5 {
        return 0;
    }
    if arg0 == 4 {
        keep_rt::ipc_buffer().set_recv_slots(&[RET_SLOT]);
        let _ = recv(Tag::new(0).with_slots(1), 0);
        loop {
            if TIMER.sleep(60_000).is_err() {
                return 1;
            }
        }
    }
    if arg0 == 3 {
        // TIMER.SLEEP takes at most a day at a time.
        let mut left = arg1;
        while arg1 == 0 || left > 0 {
            let ms = if arg1 == 0 { 60_000 } else { left.min(60_000) };
            if TIMER.sleep(ms).is_err() {
                return 1;
            }
            left -= ms.min(left);
        }
        return 0;
    }
    println!("hello from a user program");
    match arg0 {
        1 => panic!("hello was asked to panic"),
        2 => arg1 as i32,
        _ => 0,
    }
}
