//! A persistent workload of capabilities (docs/persistence.md, "What
//! persists"): it keeps a ring of wrappers around a sender to its partner
//! and, every round, revokes the oldest (destroys it, keeping a copy of its
//! capability), makes a new one, and checks every capability it holds:
//! each live wrapper reaches the partner, each copy of a revoked one is
//! `STALE`.  After a power cut a restore must keep both: a capability valid
//! before the checkpoint is valid after it and one revoked before it stays
//! revoked, and the wrappers, their versions and the copies are all kernel
//! objects and cappages of the checkpoint.  A broken rule is reported as
//! `wraps: MISMATCH`.
//!
//! Every `arg0` rounds (100 if 0) it prints `wraps: round R ok`, and it
//! sleeps a millisecond every tenth of that, so that a checkpoint finds it
//! in a call, a receive or a sleep.

#![no_std]
#![no_main]

extern crate alloc;

use keep_abi::{ACCOUNT, Error, Process, Return, SELF_ASPACE, Sender, TIMER, Tag, recv, rights, slot};
use keep_loader::{SlotPool, thread};
use keep_rt::println;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const TO_B: u64 = slot::FIRST_FREE + 1;
/// The ring: live wrappers, and the copies of the revoked ones.
const RING: u64 = 6;
const LIVE: u64 = slot::FIRST_FREE + 2;
const DEAD: u64 = LIVE + RING;
const PASS: u64 = 1;

/// The partner: answers each token t with t + 1.
fn partner(a: &thread::Args) -> u64 {
    loop {
        a.buf().set_recv_slots(&[RET]);
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err == 0 && m.tag.is_called() && m.tag.label() == PASS {
            let _ = Return(RET).reply(Tag::new(0), [m.words[0] + 1, 0, 0, 0]);
        }
    }
}

fn mismatch(round: u64, what: &str) -> i32 {
    println!("wraps: MISMATCH at round {round}: {what}");
    3
}

fn main(arg0: u64, _: u64) -> i32 {
    let every = if arg0 == 0 { 100 } else { arg0 };
    let mut slots = SlotPool::new();
    for s in RET..DEAD + RING {
        slots.reserve(s);
    }
    let b = match thread::spawn(&mut slots, "wraps-b", 10, partner, &[]) {
        Ok(t) => t,
        Err(e) => {
            println!("wraps: cannot start its partner: {e}");
            return 2;
        }
    };
    if let Err(e) = Process(b.process.0).mint(TO_B, 0, rights::WRITE | rights::CALL) {
        println!("wraps: MINT: {e}");
        return 2;
    }
    println!("wraps: started");
    // Which places of the ring hold a live wrapper and a revoked copy.
    let mut live = [false; RING as usize];
    let mut dead = [false; RING as usize];
    let mut round = 0u64;
    loop {
        let i = (round % RING) as usize;
        let (w, d) = (LIVE + i as u64, DEAD + i as u64);
        if live[i] {
            // Revoke the oldest: its copy goes stale with it.
            let _ = SELF_ASPACE.delete_cap(d);
            if let Err(e) = SELF_ASPACE.copy_cap(w, d, rights::WRITE | rights::CALL) {
                return mismatch(round, &alloc::format!("COPY of live wrapper {i}: {e}"));
            }
            if let Err(e) = ACCOUNT.destroy(w) {
                return mismatch(round, &alloc::format!("DESTROY of live wrapper {i}: {e}"));
            }
            let _ = SELF_ASPACE.delete_cap(w); /* its own capability, stale now */
            live[i] = false;
            dead[i] = true;
        }
        if let Err(e) = ACCOUNT.create_wrapper(TO_B, w, rights::WRITE | rights::CALL) {
            return mismatch(round, &alloc::format!("CREATE_WRAPPER {i}: {e}"));
        }
        live[i] = true;
        for j in 0..RING as usize {
            if live[j] {
                let m = Sender(LIVE + j as u64).call(Tag::new(PASS), [round, 0, 0, 0]);
                if m.err != 0 || m.words[0] != round + 1 {
                    return mismatch(round, &alloc::format!("live wrapper {j}: {} ({})", keep_abi::error_name(m.err), m.words[0]));
                }
            }
            if dead[j] {
                let m = Sender(DEAD + j as u64).call(Tag::new(PASS), [round, 0, 0, 0]);
                if m.err != Error::STALE.0 {
                    return mismatch(round, &alloc::format!("revoked wrapper {j} answered {}", keep_abi::error_name(m.err)));
                }
            }
        }
        round += 1;
        if round % (every / 10).max(1) == 0 {
            let _ = TIMER.sleep(1);
        }
        if round % every == 0 {
            println!("wraps: round {round} ok");
        }
    }
}
