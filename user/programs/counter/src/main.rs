//! The counter server (docs/writing-programs.md): waits for calls and
//! answers each through the generated `dispatch` (`protocol.rs`, from
//! abi/services/counter.toml), which calls one method of [`Handler`] per
//! request.  It is started by a program that holds its process capability
//! and mints sender capabilities to it; the protected payload of the
//! capability a call came through tells the clients apart.

#![no_std]
#![no_main]

use keep_abi::proto::Answer;
use keep_abi::{Msg, Return, Tag, recv};
use keep_counter::*;
use keep_rt::println;

keep_rt::entry!(main);

/// Where each call's return capability arrives (the first free slot).
const RET: u64 = keep_abi::slot::FIRST_FREE;
/// Counters for this many clients (payloads 0..CLIENTS: a described
/// client's is its place in the description, below keep-system's
/// desc::MAX_ENTRIES, 64).
const CLIENTS: usize = 64;

struct Counter {
    counters: [u64; CLIENTS],
    /// Set by QUIT and CRASH: what to do once the reply is sent.
    then: Then,
}

#[derive(Clone, Copy)]
enum Then {
    Serve,
    Quit,
    Crash { after_ms: u64 },
}

impl Counter {
    /// The caller's counter.  The name service's senders carry a tag above
    /// the client's index (keep_system::names::CLIENT): the index picks it.
    fn of(&mut self, m: &Msg) -> Option<&mut u64> {
        self.counters.get_mut((m.payload & !(1 << 62)) as usize)
    }
}

impl Handler for Counter {
    fn add(&mut self, m: &Msg, n: u64) -> Answer {
        let Some(c) = self.of(m) else { return Answer::refuse(BAD_REQUEST) };
        match c.checked_add(n).filter(|v| *v < 1 << 63) {
            Some(v) => {
                *c = v;
                Answer::value(v)
            }
            None => Answer::refuse(OVERFLOW).with_results([*c, 0, 0]),
        }
    }

    fn get(&mut self, m: &Msg) -> Answer {
        match self.of(m) {
            Some(c) => Answer::value(*c),
            None => Answer::refuse(BAD_REQUEST),
        }
    }

    fn quit(&mut self, _: &Msg) -> Answer {
        self.then = Then::Quit;
        Answer::ok([0; 3])
    }

    fn crash(&mut self, _: &Msg, after_ms: u64) -> Answer {
        self.then = Then::Crash { after_ms };
        Answer::ok([0; 3])
    }
}

fn main(_: u64, _: u64) -> i32 {
    let mut server = Counter { counters: [0; CLIENTS], then: Then::Serve };
    // Name the slot for the return capability, then wait for the first call.
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        // A plain send (no return capability) or a failed receive: nothing to answer.
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let a = dispatch(&mut server, &m);
        match server.then {
            // Answer and wait for the next call in one invocation.
            Then::Serve => m = Return(RET).reply_recv(Tag::new(0).with_slots(1), a.words(), 0),
            Then::Quit => {
                let _ = Return(RET).reply(a.tag(), a.words());
                println!("counter: quitting");
                return 0;
            }
            Then::Crash { after_ms } => {
                let _ = Return(RET).reply(a.tag(), a.words());
                // A receive with a time-out is the wait (no timer needed).
                let _ = recv(Tag::new(0), after_ms.max(1));
                // SAFETY: none; the write to page 0 (unmapped) is meant to fault.
                unsafe { core::ptr::write_volatile(core::hint::black_box(0x10usize) as *mut u8, 1) };
                return 1;
            }
        }
    }
}
