//! The packet-filter server's protocol and its client side.
//!
//! `pfilter` (src/main.rs) takes filter modules from its clients, verifies
//! them, loads each into a fault domain of its own address space and runs
//! them over the packets the clients send.  The protocol is defined in
//! `abi/services/pfilter.toml`; `tools/idlgen.py` generates `protocol.rs`
//! from it and the table in docs/sfi.md.
//!
//! A filter module exports `filter(const u8 *packet, u64 len) -> u64` and
//! may import `pf_mtu() -> u64` (1500).  A filter that faults or runs longer
//! than `TIMEOUT_MS` ends with `FAULT` or `TIMEOUT`; it stays loaded and the
//! server goes on.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

#[cfg(not(test))]
use alloc::string::String;
#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{IpcBuffer, Sender, Tag, slot};
#[cfg(not(test))]
use keep_loader::{BootImage, Child, Grant, Loader, SlotPool, Spec};

pub mod protocol;
pub mod rules;
pub use protocol::*;

/// Largest module the server takes.
pub const MAX_MODULE: usize = 256 * 1024;
/// Largest packet (the IPC string).
pub const MAX_PACKET: usize = 4096;
/// A filter call longer than this is stopped.
pub const TIMEOUT_MS: u64 = 50;
/// Word 2 of a rejection without an instruction.
pub const NO_OFFSET: u64 = u64::MAX;
/// The server's priority (its fault-handler thread runs one above).
pub const PRIORITY: u64 = 10;

/// A reply: the status and three words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    pub status: u64,
    pub words: [u64; 3],
}

/// The client's side: a SENDER to the server and the caller's IPC buffer.
pub struct Client {
    pub server: Sender,
}

#[cfg(not(test))]
impl Client {
    fn call(&self, label: u64, w0: u64, string: Option<&[u8]>) -> Reply {
        let buf: &mut IpcBuffer = keep_rt::ipc_buffer();
        let mut tag = Tag::new(label);
        if let Some(s) = string {
            buf.set_string(s);
            tag = tag.with_string();
        }
        let m = self.server.call(tag, [w0, 0, 0, 0]);
        buf.set_string(&[]);
        if m.err != 0 {
            return Reply { status: u64::MAX, words: [m.err, 0, 0] };
        }
        Reply { status: m.words[0], words: [m.words[1], m.words[2], m.words[3]] }
    }

    /// Sends `module` and asks the server to load it: the filter id, or the
    /// status, the server's reason and the offset of the refused instruction
    /// in the code (`NO_OFFSET` if none).
    pub fn load(&self, module: &[u8]) -> Result<u64, (u64, String, u64)> {
        for (i, part) in module.chunks(MAX_PACKET).enumerate() {
            let r = self.call(LOAD_PART, (i * MAX_PACKET) as u64, Some(part));
            if r.status != OK {
                return Err((r.status, String::from("LOAD_PART refused"), NO_OFFSET));
            }
        }
        let r = self.call(LOAD, module.len() as u64, None);
        if r.status == OK {
            return Ok(r.words[0]);
        }
        let buf = keep_rt::ipc_buffer();
        let mut text = [0u8; 256];
        let n = buf.read_string(&mut text);
        buf.recv_len = 0; // read: later calls must not see it again
        let why = String::from(core::str::from_utf8(&text[..n]).unwrap_or("?"));
        Err((r.status, why, r.words[0]))
    }

    /// Runs filter `id` over `packet`.
    pub fn run(&self, id: u64, packet: &[u8]) -> Reply {
        self.call(RUN, id, Some(packet))
    }

    pub fn unload(&self, id: u64) -> u64 {
        self.call(UNLOAD, id, None).status
    }
}

/// A running server: the child and the SENDER slot the caller holds.
#[cfg(not(test))]
#[derive(Clone, Copy)]
pub struct Server {
    pub child: Child,
    pub sender: u64,
}

#[cfg(not(test))]
impl Server {
    /// Loads `pfilter` from `image`, mints a SENDER to it at a new slot and
    /// starts it.  It gets the console, the caller's account (its
    /// fault-handler thread and page tables) and the memory pool (its
    /// domains' pages).
    pub fn spawn(slots: &mut SlotPool, image: &BootImage) -> Result<Server, String> {
        let entry = image.find("pfilter").ok_or("no program 'pfilter' in the boot image")?;
        let g = |s| Grant { src: s, dest: s, rights: 0 };
        let grants = [g(slot::CONSOLE), g(slot::ACCOUNT), g(slot::MEMORY)];
        let spec = Spec { name: "pfilter", elf: entry.data, arg0: 0, arg1: 0, grants: &grants, blob: None };
        let mut loader = Loader::new(slots);
        let child = loader.load(&spec).map_err(|e| alloc::format!("loading pfilter: {e}"))?;
        let sender = match loader.slots.alloc() {
            Some(s) => s,
            None => {
                let _ = loader.destroy(child);
                return Err("no slot".into());
            }
        };
        let r = child
            .process
            .mint(sender, 0x9f, 0)
            .and_then(|_| child.process.set_priority(PRIORITY))
            .and_then(|_| child.process.start());
        if let Err(e) = r {
            let _ = keep_abi::SELF_ASPACE.delete_cap(sender);
            loader.slots.free(sender);
            let _ = loader.destroy(child);
            return Err(alloc::format!("starting pfilter: {e}"));
        }
        Ok(Server { child, sender })
    }

    pub fn client(&self) -> Client {
        Client { server: Sender(self.sender) }
    }

    /// Asks the server to quit, waits for it and destroys it; its exit code.
    pub fn stop(self, slots: &mut SlotPool) -> Result<u64, String> {
        let r = self.client().call(QUIT, 0, None);
        let st = self.child.process.wait();
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.sender);
        slots.free(self.sender);
        let mut loader = Loader::new(slots);
        let d = loader.destroy(self.child);
        if r.status != OK {
            return Err(alloc::format!("QUIT: status {}", r.status));
        }
        let st = st.map_err(|e| alloc::format!("WAIT: {e}"))?;
        d.map_err(|e| alloc::format!("destroy: {e}"))?;
        if st.state != keep_abi::state::EXITED {
            return Err(alloc::format!("pfilter {st}"));
        }
        Ok(st.code)
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
    #[derive(Default)]
    struct Record(Vec<(u64, u64)>);

    impl Handler for Record {
        fn load_part(&mut self, _: &Msg, offset: u64) -> Answer { self.0.push((LOAD_PART, offset)); Answer::value(1) }
        fn load(&mut self, _: &Msg, size: u64) -> Answer { self.0.push((LOAD, size)); Answer::value(2) }
        fn run(&mut self, _: &Msg, filter: u64) -> Answer { self.0.push((RUN, filter)); Answer::value(3) }
        fn unload(&mut self, _: &Msg, filter: u64) -> Answer { self.0.push((UNLOAD, filter)); Answer::value(4) }
        fn quit(&mut self, _: &Msg) -> Answer { self.0.push((QUIT, 0)); Answer::value(5) }
    }

    /// Every request reaches its method with its argument, through the
    /// starter's capability and a client's; an unknown label, or a payload
    /// that is no caller's (init's notices, interrupts, faults), reaches none.
    #[test]
    fn each_request_reaches_its_method() {
        let mut h = Record::default();
        for (i, label) in [LOAD_PART, LOAD, RUN, UNLOAD, QUIT].into_iter().enumerate() {
            for p in [0, 1, (1 << 62) | 2] {
                let m = Msg { err: 0, tag: Tag::new(label), payload: p, words: [40 + label, 9, 9, 9] };
                assert_eq!(dispatch(&mut h, &m).words(), [OK, i as u64 + 1, 0, 0]);
            }
        }
        assert_eq!(h.0[0], (LOAD_PART, 41));
        assert_eq!(h.0[6], (RUN, 43));
        let n = h.0.len();
        for (label, p) in [(0, 0), (6, 0), (u64::MAX >> 16, 1), (RUN, 1 << 61), (LOAD, u64::MAX - 1), (QUIT, u64::MAX)] {
            let m = Msg { err: 0, tag: Tag::new(label), payload: p, words: [0; 4] };
            assert_eq!(dispatch(&mut h, &m).words(), [BAD_REQUEST, 0, 0, 0], "{label} {p:#x}");
        }
        assert_eq!(h.0.len(), n, "a refused request reaches no method");
    }
}
