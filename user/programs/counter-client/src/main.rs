//! The counter's example client (docs/writing-programs.md): adds 1 to 10
//! to its counter, reads it back and checks the sum.  Whoever starts it
//! puts a sender capability to a counter server in slot `SERVER_SLOT`; a
//! program gets no capability it was not given.
//!
//! Exit codes: 0 the sum was right; 1 a request failed or the sum was
//! wrong; 2 no server capability in `SERVER_SLOT`.

#![no_std]
#![no_main]

use keep_abi::{SELF_ASPACE, Sender};
use keep_counter::{Client, SERVER_SLOT};
use keep_rt::println;

keep_rt::entry!(main);

fn main(_: u64, _: u64) -> i32 {
    // What is in the slot?  IDENTIFY_CAP names its type and whether it is live.
    let given = SELF_ASPACE.identify_cap(SERVER_SLOT);
    if !matches!(given, Ok(c) if c.ty == keep_abi::ty::SENDER && c.live) {
        println!("counter-client: no counter server in slot {SERVER_SLOT:#x}; start me with one (docs/writing-programs.md)");
        return 2;
    }
    let server = Client(Sender(SERVER_SLOT));
    for n in 1..=10 {
        if let Err((what, code)) = server.add(n) {
            println!("counter-client: ADD {n}: {what} ({code})");
            return 1;
        }
    }
    match server.get() {
        Ok(55) => {
            println!("counter-client: 1 + 2 + ... + 10 = 55");
            0
        }
        Ok(v) => {
            println!("counter-client: the counter says {v}, not 55");
            1
        }
        Err((what, code)) => {
            println!("counter-client: GET: {what} ({code})");
            1
        }
    }
}
