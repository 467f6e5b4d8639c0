//! A tiny program for tests and the shell's `run`: prints a greeting and
//! exits 0.  With arg0 == 1 it panics (the panic handler exits with 101);
//! with arg0 == 2 it exits with code arg1; with arg0 == 3 it prints nothing
//! and sleeps arg1 milliseconds (0: until it is stopped), then exits 0 —
//! something to run in the background and `kill`; with arg0 == 4 it takes
//! one call and never answers it, sleeping until it is stopped (a server
//! that dies with a caller waiting, for ktest); with arg0 == 5 it exits 0
//! at once (the benchmarks' empty program).  For the constructor's pager
//! (ktest CTOR0004), whose requests carry only arg0: with arg0 & 0xff == 6
//! it writes and checks one word in each of arg0 >> 8 pages of its heap and
//! uses nine pages of its stack, then exits 0 (1 if a word is wrong); with
//! arg0 & 0xff == 7 it writes a byte at the address arg0 >> 8 (to fault).

#![no_std]
#![no_main]

extern crate alloc;

use keep_abi::{TIMER, Tag, recv};
use keep_rt::println;

keep_rt::entry!(main);

/// Where mode 4 takes its caller's return capability.
const RET_SLOT: u64 = 0x20;

/// Uses a page of stack per level; returns n + (n - 1) + ... + 0.
#[inline(never)]
fn deep(n: u64) -> u64 {
    let mut page = [0u8; 4096];
    page[4095] = n as u8;
    core::hint::black_box(&mut page);
    if n == 0 { 0 } else { deep(n - 1) + page[4095] as u64 }
}

fn main(arg0: u64, arg1: u64) -> i32 {
    if arg0 & 0xff == 6 && arg0 > 0xff {
        let pages = (arg0 >> 8) as usize;
        let mut v = alloc::vec![0u64; pages * 512];
        for p in 0..pages {
            v[p * 512] = p as u64 + 1;
        }
        let ok = (0..pages).all(|p| v[p * 512] == p as u64 + 1) && deep(8) == 36;
        return if ok { 0 } else { 1 };
    }
    if arg0 & 0xff == 7 && arg0 > 0xff {
        // SAFETY: none; the write is meant to fault.
        unsafe { core::ptr::write_volatile((arg0 >> 8) as *mut u8, 1) };
        return 0;
    }
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
