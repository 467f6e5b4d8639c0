//! The counter: the example server of docs/writing-programs.md.  It keeps
//! one number per client (told apart by the protected payload of the
//! sender capability each client was given) and answers three requests.
//! This library is its protocol and its client side; `main.rs` is the
//! server.
//!
//! The protocol is defined in `abi/services/counter.toml`;
//! `tools/idlgen.py` generates from it `protocol.rs` (labels, statuses,
//! the client [`Stub`]) and the table in docs/writing-programs.md.

#![no_std]

use keep_abi::Sender;
use keep_loader::{Child, Grant, Loader, SlotPool, Spec};

pub mod protocol;
pub use protocol::*;

/// Where whoever starts a client puts the sender capability to the counter
/// server (a convention of this example: a slot below
/// `keep_abi::slot::FIRST_FREE` that no other convention uses).
pub const SERVER_SLOT: u64 = 0xb;

/// The client side: a sender capability to the server.
#[derive(Clone, Copy)]
pub struct Client(pub Sender);

impl Client {
    /// `Err` with the kernel's error (the call failed) or the server's status.
    fn why(e: Refused) -> (&'static str, u64) {
        match e {
            Refused::Call(k) => ("the call failed", k.0),
            Refused::Status(s) => ("the server refused", s),
        }
    }
    pub fn add(self, n: u64) -> Result<u64, (&'static str, u64)> {
        Stub(self.0).add(n).map_err(Self::why)
    }
    pub fn get(self) -> Result<u64, (&'static str, u64)> {
        Stub(self.0).get().map_err(Self::why)
    }
    pub fn quit(self) -> Result<u64, (&'static str, u64)> {
        Stub(self.0).quit().map(|()| 0).map_err(Self::why)
    }
    pub fn crash(self, after_ms: u64) -> Result<u64, (&'static str, u64)> {
        Stub(self.0).crash(after_ms).map(|()| 0).map_err(Self::why)
    }
}

/// A running counter server started from a boot image: its process and a
/// sender capability (in a slot of the caller's pool) to hand to clients.
pub struct Server {
    pub child: Child,
    pub sender: u64,
}

impl Server {
    /// Loads `counter` from `image`, mints a sender capability to it with
    /// protected payload `client_id`, and starts it.  It gets only the
    /// console: a server needs nothing else to answer calls.
    pub fn spawn(slots: &mut SlotPool, elf: &[u8], client_id: u64) -> Result<Server, &'static str> {
        let grants = [Grant { src: keep_abi::slot::CONSOLE, dest: keep_abi::slot::CONSOLE, rights: 0 }];
        let spec = Spec { name: "counter", elf, arg0: 0, arg1: 0, grants: &grants, blob: None };
        let mut loader = Loader::new(slots);
        let child = loader.load(&spec).map_err(|_| "cannot load counter")?;
        let Some(sender) = loader.slots.alloc() else {
            let _ = loader.destroy(child);
            return Err("no free slot");
        };
        // WRITE and CALL: the holder may call (and so be answered).
        let rights = keep_abi::rights::WRITE | keep_abi::rights::CALL;
        if child.process.mint(sender, client_id, rights).and_then(|_| child.process.start()).is_err() {
            loader.slots.free(sender);
            let _ = loader.destroy(child);
            return Err("cannot start counter");
        }
        Ok(Server { child, sender })
    }

    /// Asks the server to quit, waits for its end and destroys it.
    pub fn stop(self, slots: &mut SlotPool) -> Result<(), &'static str> {
        let r = Client(Sender(self.sender)).quit();
        let _ = self.child.process.wait();
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.sender);
        slots.free(self.sender);
        Loader::new(slots).destroy(self.child).map_err(|_| "cannot destroy counter")?;
        r.map(drop).map_err(|_| "counter did not quit")
    }
}

#[cfg(test)]
mod dispatch_tests {
    extern crate std;
    use super::*;
    use keep_abi::proto::Answer;
    use keep_abi::{Msg, Tag};
    use std::vec::Vec;

    /// A handler that records which method `dispatch` called, with what.
    struct Record(Vec<(u64, u64)>);

    impl Handler for Record {
        fn add(&mut self, _: &Msg, n: u64) -> Answer {
            self.0.push((ADD, n));
            Answer::value(n + 1)
        }
        fn get(&mut self, _: &Msg) -> Answer {
            self.0.push((GET, 0));
            Answer::refuse(OVERFLOW).with_results([9, 0, 0])
        }
        fn quit(&mut self, _: &Msg) -> Answer {
            self.0.push((QUIT, 0));
            Answer::ok([0; 3])
        }
        fn crash(&mut self, _: &Msg, after_ms: u64) -> Answer {
            self.0.push((CRASH, after_ms));
            Answer::ok([0; 3])
        }
    }

    fn msg(label: u64, payload: u64, w0: u64) -> Msg {
        Msg { err: 0, tag: Tag::new(label), payload, words: [w0, 7, 7, 7] }
    }

    /// Each request reaches its method with its argument decoded, the
    /// method's answer is the reply, and what is no request of the
    /// caller's payload range reaches no method.
    #[test]
    fn dispatch_calls_one_method_per_request() {
        let mut h = Record(Vec::new());
        assert_eq!(dispatch(&mut h, &msg(ADD, 3, 41)).words(), [OK, 42, 0, 0]);
        assert_eq!(dispatch(&mut h, &msg(GET, 0, 0)).words(), [OVERFLOW, 9, 0, 0]);
        assert_eq!(dispatch(&mut h, &msg(CRASH, 5, 250)).words(), [OK, 0, 0, 0]);
        assert_eq!(h.0, [(ADD, 41), (GET, 0), (CRASH, 250)]);
        for (label, payload) in [(0, 3), (5, 3), (u64::MAX, 0), (ADD, u64::MAX), (GET, 1 << 61)] {
            assert_eq!(dispatch(&mut h, &msg(label, payload, 1)).words(), [BAD_REQUEST, 0, 0, 0], "{label} {payload:#x}");
        }
        assert_eq!(h.0.len(), 3, "a refused request reaches no method");
    }
}

