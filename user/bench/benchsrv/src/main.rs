//! The partner of the benchmarks that cross address spaces (the root
//! task's `bench`).  It does as little as it can, so that what the
//! benchmarks count is the kernel.
//!
//! arg0 = 0: IPC server.  Waits for calls and answers each through
//! reply-and-receive (SEND_RECV on the return capability), label 0, with
//! the four words it received (an echo: they are still in the registers).
//! A call labelled `CONFIG` sets how many receive slots the next receive
//! phases name (word 0: 1 to 5; the return capability takes the first), so
//! that calls carrying capabilities find a slot for each.
//!
//! arg0 = 1: yield partner.  Yields for ever; the benchmark destroys it.
//!
//! arg0 = 2: notification partner.  Waits on the notification at
//! `PING_SLOT` and signals the one at `PONG_SLOT`, for ever.

#![no_std]
#![no_main]

use keep_abi::{Notification, Return, SELF_PROCESS, Tag, recv};

keep_rt::entry!(main);

/// The label of a configuration call (must match user/root/src/bench).
pub const CONFIG: u64 = 0xC0F;

/// The notifications of mode 2 (must match user/root/src/bench/notify.rs).
pub const PING_SLOT: u64 = 0x20;
pub const PONG_SLOT: u64 = 0x21;

/// Receive slots: the return capability, then up to four capabilities.
const SLOTS: [u64; 5] = [0x10, 0x11, 0x12, 0x13, 0x14];

fn main(mode: u64, _: u64) -> i32 {
    match mode {
        0 => serve(),
        1 => loop {
            let _ = SELF_PROCESS.yield_now();
        },
        2 => loop {
            let _ = Notification(PING_SLOT).wait();
            let _ = Notification(PONG_SLOT).signal(1);
        },
        _ => 2,
    }
}

fn serve() -> i32 {
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&SLOTS);
    let mut slots = 1;
    let mut m = recv(Tag::new(0).with_slots(slots), 0);
    loop {
        if m.err != 0 {
            // Nothing to answer: wait for the next call.
            m = recv(Tag::new(0).with_slots(slots), 0);
            continue;
        }
        if m.tag.label() == CONFIG {
            slots = m.words[0].clamp(1, SLOTS.len() as u64);
        }
        m = Return(SLOTS[0]).reply_recv(Tag::new(0).with_slots(slots), m.words, 0);
    }
}
