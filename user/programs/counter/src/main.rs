//! The counter server (docs/writing-programs.md): waits for calls and
//! answers each (see `lib.rs` for the protocol).  It is started by a
//! program that holds its process capability and mints sender
//! capabilities to it; the protected payload of the capability a call came
//! through tells the clients apart.

#![no_std]
#![no_main]

use keep_abi::{Return, Tag, recv};
use keep_counter::*;
use keep_rt::println;

keep_rt::entry!(main);

/// Where each call's return capability arrives (the first free slot).
const RET: u64 = keep_abi::slot::FIRST_FREE;
/// Counters for this many clients (payloads 0..CLIENTS: a described
/// client's is its place in the description, below keep-system's
/// desc::MAX_ENTRIES, 64).
const CLIENTS: usize = 64;

fn main(_: u64, _: u64) -> i32 {
    let mut counters = [0u64; CLIENTS];
    // Name the slot for the return capability, then wait for the first call.
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        // A plain send (no return capability) or a failed receive: nothing to answer.
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        // The name service's senders carry a tag above the client's index
        // (keep_system::names::CLIENT): the index picks the counter.
        let client = m.payload & !(1 << 62);
        let (status, value) = match (m.tag.label(), counters.get_mut(client as usize)) {
            (_, None) => (BAD_REQUEST, 0),
            (ADD, Some(c)) => match c.checked_add(m.words[0]).filter(|v| *v < 1 << 63) {
                Some(v) => {
                    *c = v;
                    (OK, v)
                }
                None => (OVERFLOW, *c),
            },
            (GET, Some(c)) => (OK, *c),
            (QUIT, Some(_)) => {
                let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
                println!("counter: quitting");
                return 0;
            }
            (CRASH, Some(_)) => {
                let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
                // A receive with a time-out is the wait (no timer needed).
                let _ = recv(Tag::new(0), m.words[0].max(1));
                // SAFETY: none; the write to page 0 (unmapped) is meant to fault.
                unsafe { core::ptr::write_volatile(core::hint::black_box(0x10usize) as *mut u8, 1) };
                return 1;
            }
            _ => (BAD_REQUEST, 0),
        };
        // Answer and wait for the next call in one invocation.
        m = Return(RET).reply_recv(Tag::new(0).with_slots(1), [status, value, 0, 0], 0);
    }
}
