//! Loads for the real-time test (docs/realtime.md, tools/test_rt.py):
//! things a program may do that must not make `periodic` miss a deadline.
//! arg0 = mode | seconds << 8 (seconds of TIMER.NOW time, 0: 5):
//!
//! - mode 1, its bank exhausted: it allocates runs of pages, then single
//!   pages, from its own bank until the bank refuses (its limit), frees
//!   them all and starts again, until the time is up;
//! - mode 2, a storm of capability faults: invocations of an empty slot, a
//!   slot far beyond its capability space and the null capability, in a
//!   loop.
//!
//! At the end it prints what it did (`pressure: bank exhausted 12 times,
//! 6840 pages`, `pressure: 412000 bad invocations, every one refused`) and
//! exits 0; 1 if the bank never refused, or a bad invocation succeeded.

#![no_std]
#![no_main]

use keep_abi::{Process, SELF_ASPACE, TIMER};
use keep_constructor::INSTANCE_BANK;
use keep_loader::SlotPool;
use keep_rt::println;
use keep_spacebank::{Bank, MAX_RUN};

keep_rt::entry!(main);

/// The most allocations held at once (slots).
const MAX_HELD: usize = 256;

fn exhaust(until: u64) -> i32 {
    let bank = Bank(INSTANCE_BANK);
    let mut slots = SlotPool::new();
    let mut held: [(u64, u64); MAX_HELD] = [(0, 0); MAX_HELD];
    let (mut times, mut pages) = (0u64, 0u64);
    while TIMER.now_ms().unwrap_or(u64::MAX) < until {
        let mut n = 0;
        let mut run = MAX_RUN.min(64);
        while n < MAX_HELD {
            let Some(s) = slots.alloc() else { break };
            let got = if run > 1 { bank.alloc_pages(run, s) } else { bank.alloc_page(s) };
            match got {
                Ok(h) => {
                    held[n] = (h, s);
                    n += 1;
                    pages += run;
                }
                Err(_) => {
                    slots.free(s);
                    if run == 1 {
                        times += 1;
                        break;
                    }
                    run = if run > 8 { 8 } else { 1 };
                }
            }
        }
        for &(h, s) in &held[..n] {
            let _ = bank.free(h);
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
    }
    println!("pressure: bank exhausted {times} times, {pages} pages");
    if times == 0 { 1 } else { 0 }
}

fn storm(until: u64) -> i32 {
    let mut slots = SlotPool::new();
    let Some(empty) = slots.alloc() else {
        println!("pressure: no free slot");
        return 2;
    };
    let (mut bad, mut ok) = (0u64, 0u64);
    while TIMER.now_ms().unwrap_or(u64::MAX) < until {
        for _ in 0..1000 {
            let r = [
                Process(empty).status().is_ok(),
                Process(u64::MAX >> 8).status().is_ok(),
                Process(0).status().is_ok(),
            ];
            for x in r {
                if x { ok += 1 } else { bad += 1 }
            }
        }
    }
    if ok == 0 {
        println!("pressure: {bad} bad invocations, every one refused");
        0
    } else {
        println!("pressure: {bad} bad invocations refused, {ok} succeeded");
        1
    }
}

fn main(arg0: u64, _: u64) -> i32 {
    let secs = match arg0 >> 8 {
        0 => 5,
        s => s.min(3600),
    };
    let until = TIMER.now_ms().unwrap_or(0) + secs * 1000;
    match arg0 & 0xff {
        1 => exhaust(until),
        2 => storm(until),
        m => {
            println!("pressure: mode {m}? 1 exhausts its bank, 2 invokes bad capabilities");
            2
        }
    }
}
