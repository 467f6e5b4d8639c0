//! The counter: the example server of docs/writing-programs.md.  It keeps
//! one number per client (told apart by the protected payload of the
//! sender capability each client was given) and answers three requests.
//! This library is its protocol and its client side; `main.rs` is the
//! server.
//!
//! Protocol (a call's label is the request, word 0 its argument; the reply's
//! word 0 is a status, word 1 the result):
//!
//! | label | request | reply |
//! |---|---|---|
//! | `ADD` (1) | add word 0 to the caller's counter | `OK`, the new value; `OVERFLOW` if it would pass 2^63 (nothing changes) |
//! | `GET` (2) | read it | `OK`, the value |
//! | `QUIT` (3) | the server exits after replying | `OK` |
//! | `CRASH` (4) | after replying, the server waits word 0 ms (or for the next message) and then faults: a server that dies while nobody is looking, for the supervisor's test | `OK` |
//! | anything else | | `BAD_REQUEST` |

#![no_std]

use keep_abi::{Sender, Tag, err};
use keep_loader::{Child, Grant, Loader, SlotPool, Spec};

pub const ADD: u64 = 1;
pub const GET: u64 = 2;
pub const QUIT: u64 = 3;
pub const CRASH: u64 = 4;

pub const OK: u64 = 0;
pub const BAD_REQUEST: u64 = 1;
pub const OVERFLOW: u64 = 2;

/// Where whoever starts a client puts the sender capability to the counter
/// server (a convention of this example: a slot below
/// `keep_abi::slot::FIRST_FREE` that no other convention uses).
pub const SERVER_SLOT: u64 = 0xb;

/// The client side: a sender capability to the server.
#[derive(Clone, Copy)]
pub struct Client(pub Sender);

impl Client {
    /// One request: `Ok(result)` or `Err` with the kernel's error (the call
    /// failed) or the server's status.
    fn request(self, label: u64, arg: u64) -> Result<u64, (&'static str, u64)> {
        let m = self.0.call(Tag::new(label), [arg, 0, 0, 0]);
        if m.err != err::OK {
            return Err(("the call failed", m.err));
        }
        match m.words[0] {
            OK => Ok(m.words[1]),
            s => Err(("the server refused", s)),
        }
    }
    pub fn add(self, n: u64) -> Result<u64, (&'static str, u64)> {
        self.request(ADD, n)
    }
    pub fn get(self) -> Result<u64, (&'static str, u64)> {
        self.request(GET, 0)
    }
    pub fn quit(self) -> Result<u64, (&'static str, u64)> {
        self.request(QUIT, 0)
    }
    pub fn crash(self, after_ms: u64) -> Result<u64, (&'static str, u64)> {
        self.request(CRASH, after_ms)
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
