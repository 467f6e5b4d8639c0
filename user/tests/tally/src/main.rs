//! A persistent workload (docs/persistence.md, "What persists"): two
//! processes pass a token by IPC and count it, each in its own memory, and
//! check at every round that their counts agree.  The root task builds it
//! from the persistent pool (`persist` in the description); after a power
//! cut a restore brings both back where the checkpoint left them, so the
//! counts go on from there, and a restore that mixed two checkpoints, lost
//! a page or answered a call twice breaks the agreement, which it reports.
//!
//! Every `arg0` rounds (1000 if 0) it prints `tally: round R ok`, and it
//! sleeps a millisecond every tenth of that, so that a checkpoint finds it
//! in a call, a receive or a sleep.  It notices a restore by its capability
//! to the name service, which does not persist: live at the start, stale
//! after a restore (`tally: resumed at round R`).

#![no_std]
#![no_main]

extern crate alloc;

use keep_abi::{Process, Return, SELF_ASPACE, Sender, TIMER, Tag, recv, rights, slot};
use keep_loader::{SlotPool, thread};
use keep_rt::println;

keep_rt::entry!(main);

/// The name service's capability, where the root task puts it.
const NAMES: u64 = 0xd;
/// The partner's capability to reply through, and the sender to it.
const RET: u64 = slot::FIRST_FREE;
const TO_B: u64 = slot::FIRST_FREE + 1;
const PASS: u64 = 1;

/// The partner: answers each token t with t + 1 and its own count.
fn partner(a: &thread::Args) -> u64 {
    let mut count = 0u64;
    loop {
        a.buf().set_recv_slots(&[RET]);
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err == 0 && m.tag.is_called() && m.tag.label() == PASS {
            count += 1;
            let _ = Return(RET).reply(Tag::new(0), [m.words[0] + 1, count, 0, 0]);
        }
    }
}

fn main(arg0: u64, _: u64) -> i32 {
    let every = if arg0 == 0 { 1000 } else { arg0 };
    let mut slots = SlotPool::new();
    slots.reserve(RET);
    slots.reserve(TO_B);
    let b = match thread::spawn(&mut slots, "tally-b", 10, partner, &[]) {
        Ok(t) => t,
        Err(e) => {
            println!("tally: cannot start its partner: {e}");
            return 2;
        }
    };
    if let Err(e) = Process(b.process.0).mint(TO_B, 0, rights::WRITE | rights::CALL) {
        println!("tally: MINT: {e}");
        return 2;
    }
    let fresh = SELF_ASPACE.identify_cap(NAMES).is_ok_and(|c| c.live);
    println!("tally: started ({})", if fresh { "name service live" } else { "no name service" });
    let mut resumed = !fresh;
    let mut round = 0u64;
    loop {
        let m = Sender(TO_B).call(Tag::new(PASS), [round, 0, 0, 0]);
        if m.err != 0 {
            println!("tally: MISMATCH at round {round}: the call failed: {}", keep_abi::error_name(m.err));
            return 3;
        }
        round += 1;
        if m.words[0] != round || m.words[1] != round {
            println!("tally: MISMATCH at round {round}: token {} and count {}", m.words[0], m.words[1]);
            return 3;
        }
        if round % (every / 10).max(1) == 0 {
            let _ = TIMER.sleep(1);
        }
        if round % every == 0 {
            if !resumed && !SELF_ASPACE.identify_cap(NAMES).is_ok_and(|c| c.live) {
                resumed = true;
                println!("tally: resumed at round {round} (the name service's capability is stale)");
            }
            println!("tally: round {round} ok");
        }
    }
}
