//! The constructor (EROS, section 5.3): a server that builds instances of
//! a program from its image (a static ELF file) and a fixed set of initial
//! capabilities, each instance on a new sub-bank of the requester's space
//! bank, and that answers whether its instances are confined.
//!
//! One server holds many constructors.  Its *metaconstructor* capability
//! makes new ones: the builder sends the name, the image (in 4 KiB pieces)
//! and the initial capabilities, then seals it; only a sealed constructor
//! makes instances, and its image and capabilities never change after.
//!
//! **Confinement.**  A constructor is confined (for a requester who
//! authorises the holes `H`) when every initial capability is
//! - null, or weak (`WEAK`), or
//! - without `WRITE` and not a device (`DEVMEM`, `IOPORT`, `INTERRUPT`)
//!   or `RETURN` capability: a capability without `WRITE` cannot send a
//!   message, change an object or fetch a capability that can, or
//! - a capability to a sealed constructor of this server that is itself
//!   confined, or
//! - one of `H` (the same object, with no more rights).
//!
//! An instance gets exactly: its own process and address space (slots 3
//! and 4), an account from its bank (slot 6, [`INSTANCE_ACCOUNT`]), its bank
//! restricted to allocate, free and inform ([`INSTANCE_BANK`]), and the
//! initial capabilities.  The space bank is trusted (as in EROS): it only
//! hands out new objects and tells an instance about its own bank.
//!
//! The protocol (labels in [`req`], statuses in [`status`]) is defined in
//! `abi/services/constructor.toml`; `tools/idlgen.py` generates
//! `protocol.rs` from it and the table in docs/space-banks.md.
//!
//! **Blobs.**  A constructor may have one blob: read-only data (a file of
//! the boot image: the workhorse's root file system) mapped at
//! [`BLOB_VADDR`] in every instance, with its length in the instance's
//! second argument register (rsi).  The builder sends an address space
//! used only as a container of page capabilities (slot i holds page i);
//! BLOB checks that every slot up to the length holds a page and keeps the
//! capability; INSTANTIATE maps those pages read-only (EXTRACT_CAP with
//! READ, then MAP), so every instance maps the same frames and none gets
//! a capability to them: a blob is data, and does not change whether the
//! instances are confined.  The frames belong to whoever made them (the
//! root task, once at boot); the instance's page tables for them are paid
//! by its account.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{Error, Process, Sender, Tag, err, slot};
#[cfg(not(test))]
use keep_loader::{Child, Grant, Loader, SlotPool, Spec};
#[cfg(not(test))]
use keep_spacebank::Bank;

pub mod protocol;
pub mod rules;
pub use protocol::{Handler, dispatch, is_request, req, serves};

/// Reply statuses (word 0), and their names for messages.
pub mod status {
    pub use super::protocol::status::*;

    pub fn name(s: u64) -> &'static str {
        match s {
            OK => "ok",
            BAD_REQUEST => "bad request",
            NO_RIGHTS => "no rights",
            BAD_STATE => "wrong state (sealed or not)",
            BAD_IMAGE => "not a valid program image",
            NOT_A_BANK => "not a space bank",
            BANK => "the bank refused",
            LOAD => "loading the instance failed",
            FULL => "constructor server full",
            _ => "unknown status",
        }
    }
}

/// Where an instance finds its bank (allocate, free, inform).
pub const INSTANCE_BANK: u64 = 0xc;
/// Where an instance finds its account (paid from its bank).
pub const INSTANCE_ACCOUNT: u64 = slot::ACCOUNT;
/// Slots of an instance that initial capabilities may fill: the console
/// and timer slots and 8-15 (below the first slot a slot pool hands out),
/// except the bank's.
pub fn valid_instance_slot(s: u64) -> bool {
    matches!(s, 1 | 2 | 5 | 7 | 8..=15) && s != INSTANCE_BANK
}
/// The largest image (the workhorse's is about 600 KiB).
pub const MAX_IMAGE: u64 = 1024 * 1024;
/// Where an instance finds its constructor's blob.
pub const BLOB_VADDR: u64 = 0x0000_1000_0000_0000;
/// The largest blob: 256 MiB.
pub const MAX_BLOB: u64 = 256 << 20;
/// The most initial capabilities.
pub const MAX_CAPS: usize = 8;
/// The most constructors one server holds.
pub const MAX_CONSTRUCTORS: usize = 64;

/// Payloads: kind in bits 0-7, the constructor's index in bits 8-23.
pub mod kind {
    pub const META: u64 = 1;
    pub const BUILDER: u64 = 2;
    pub const REQUESTER: u64 = 3;
    /// An instance's fault handler (the server is its pager).
    pub const PAGER: u64 = 4;
}
pub const fn payload(kind: u64, index: u64) -> u64 {
    kind | (index << 8)
}

/// The interfaces (abi/services/constructor.toml), by the kind of
/// capability a request came through: the metaconstructor's, a builder's,
/// a sealed constructor's (the requester's).  A request through another
/// kind is NO_RIGHTS; a message through an instance's fault handler
/// (kind PAGER) that is no request is its fault.
pub const fn meta(p: u64) -> bool {
    p & 0xff == kind::META
}
pub const fn builder(p: u64) -> bool {
    p & 0xff == kind::BUILDER
}
pub const fn requester(p: u64) -> bool {
    p & 0xff == kind::REQUESTER
}
pub const fn pager(p: u64) -> bool {
    p & 0xff == kind::PAGER
}

/// The payload of the fault-handler capability of an instance the server
/// pages: kind PAGER, the instance's record in bits 8-23, the record's
/// generation above (so that a record used again is not paged for an
/// instance that is gone).
pub const fn pager_payload(index: u64, generation: u64) -> u64 {
    kind::PAGER | ((index & 0xffff) << 8) | (generation << 24)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtorError {
    /// The server's status and word 1.
    Status(u64, u64),
    /// The call failed (kernel error).
    Call(u64),
}

#[cfg(not(test))]
impl core::fmt::Display for CtorError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            CtorError::Status(s, w) if s == status::BANK => {
                write!(f, "constructor: the bank refused: {}", keep_spacebank::status::name(w))
            }
            CtorError::Status(s, _) => write!(f, "constructor: {}", status::name(s)),
            CtorError::Call(e) => write!(f, "call to the constructor failed: {}", Error(e)),
        }
    }
}

/// One call sending `caps` (slot, rights mask) and taking capabilities
/// into `recv`.
#[cfg(not(test))]
fn call(cap: u64, label: u64, words: [u64; 3], caps: &[u64], recv: &[u64]) -> Result<[u64; 4], CtorError> {
    let buf = keep_rt::ipc_buffer();
    let mut tag = Tag::new(label);
    if !caps.is_empty() {
        let list: alloc::vec::Vec<(u64, u64)> = caps.iter().map(|&c| (c, 0)).collect();
        tag = tag.with_caps(buf.set_send_caps(&list));
    }
    if !recv.is_empty() {
        tag = tag.with_slots(buf.set_recv_slots(recv));
    }
    let m = Sender(cap).call(tag, [words[0], words[1], words[2], 0]);
    if m.err != err::OK {
        return Err(CtorError::Call(m.err));
    }
    if m.words[0] != status::OK {
        return Err(CtorError::Status(m.words[0], m.words[1]));
    }
    Ok(m.words)
}

/// The metaconstructor: makes constructors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta(pub u64);

/// A builder capability: fills one unsealed constructor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Builder(pub u64);

/// A sealed constructor (the requester's capability).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Constructor(pub u64);

/// An instance: its process and its bank, in the requester's slots.
#[cfg(not(test))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Instance {
    pub process: Process,
    pub bank: Bank,
}

#[cfg(not(test))]
impl Meta {
    /// A new, empty constructor for an image of `len` bytes; its builder
    /// capability goes to `dest`.
    pub fn new_constructor(self, name: &str, len: u64, dest: u64) -> Result<Builder, CtorError> {
        let (lo, hi) = keep_abi::pack_name(name);
        call(self.0, req::NEW, [lo, hi, len], &[], &[dest]).map(|_| Builder(dest))
    }

    /// A sealed constructor of `image` with `caps` ((slot here, slot in the
    /// instance)); the builder capability is used in `scratch` and deleted.
    pub fn build(self, name: &str, image: &[u8], caps: &[(u64, u64)], scratch: u64, dest: u64) -> Result<Constructor, CtorError> {
        self.build_with_blob(name, image, caps, None, scratch, dest)
    }

    /// As [`Meta::build`], with a blob: (the slot of its container address
    /// space, its length in bytes).
    pub fn build_with_blob(
        self,
        name: &str,
        image: &[u8],
        caps: &[(u64, u64)],
        blob: Option<(u64, u64)>,
        scratch: u64,
        dest: u64,
    ) -> Result<Constructor, CtorError> {
        let b = self.new_constructor(name, image.len() as u64, scratch)?;
        let r = (|| {
            b.image(image)?;
            for &(src, to) in caps {
                b.add_cap(src, to)?;
            }
            if let Some((space, len)) = blob {
                b.blob(space, len)?;
            }
            b.seal(dest)
        })();
        let _ = keep_abi::SELF_ASPACE.delete_cap(scratch);
        r
    }
}

#[cfg(not(test))]
impl Builder {
    /// Sends `image` in pieces of 4 KiB.
    pub fn image(self, image: &[u8]) -> Result<(), CtorError> {
        for (i, piece) in image.chunks(4096).enumerate() {
            self.piece((i * 4096) as u64, piece)?;
        }
        Ok(())
    }

    /// One piece at `offset`.
    pub fn piece(self, offset: u64, bytes: &[u8]) -> Result<(), CtorError> {
        let buf = keep_rt::ipc_buffer();
        buf.set_string(bytes);
        let m = Sender(self.0).call(Tag::new(req::IMAGE).with_string(), [offset, 0, 0, 0]);
        buf.send_len = 0;
        if m.err != err::OK {
            return Err(CtorError::Call(m.err));
        }
        if m.words[0] != status::OK {
            return Err(CtorError::Status(m.words[0], m.words[1]));
        }
        Ok(())
    }

    /// The capability at `src` goes to slot `to` of every instance.
    pub fn add_cap(self, src: u64, to: u64) -> Result<(), CtorError> {
        call(self.0, req::ADD_CAP, [to, 0, 0], &[src], &[]).map(drop)
    }

    /// The blob: `len` bytes in the pages at slots 0, 1, ... of the address
    /// space at `space`.
    pub fn blob(self, space: u64, len: u64) -> Result<(), CtorError> {
        call(self.0, req::BLOB, [len, 0, 0], &[space], &[]).map(drop)
    }

    pub fn seal(self, dest: u64) -> Result<Constructor, CtorError> {
        call(self.0, req::SEAL, [0; 3], &[], &[dest]).map(|_| Constructor(dest))
    }
}

#[cfg(not(test))]
impl Constructor {
    /// Whether instances are confined given the capabilities at `holes`;
    /// when not, the instance slot of the first unsafe capability.
    pub fn is_confined(self, holes: &[u64]) -> Result<(bool, u64), CtorError> {
        call(self.0, req::IS_CONFINED, [0; 3], holes, &[]).map(|w| (w[1] == 1, w[2]))
    }

    /// A new instance on a sub-bank of `bank` limited to `limit` frames,
    /// with an account of `frames` frames; started with arg0.  Its process
    /// capability goes to `process`, its bank's (every right) to `bank_dest`.
    pub fn instantiate(
        self,
        bank: Bank,
        limit: u64,
        frames: u64,
        arg0: u64,
        process: u64,
        bank_dest: u64,
    ) -> Result<Instance, CtorError> {
        call(self.0, req::INSTANTIATE, [limit, frames, arg0], &[bank.0], &[process, bank_dest])
            .map(|_| Instance { process: Process(process), bank: Bank(bank_dest) })
    }
}

#[cfg(not(test))]
impl Instance {
    /// Waits for the instance to end and destroys its bank (and so the
    /// instance); returns its status.
    pub fn reap(self) -> Result<keep_abi::Status, CtorError> {
        let st = self.process.wait().map_err(|e| CtorError::Call(e.0));
        let d = self.bank.destroy();
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.process.0);
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.bank.0);
        let st = st?;
        d.map_err(|_| CtorError::Status(status::BANK, 0))?;
        Ok(st)
    }
}

/// A running constructor server and its metaconstructor capability.
#[cfg(not(test))]
pub struct Server {
    pub child: Child,
    pub meta: Meta,
}

#[cfg(not(test))]
impl Server {
    /// Loads the server from `elf` (paid by the caller's account and pool)
    /// and starts it; `bank` is a capability to the space bank it accepts
    /// (any rights: it only recognises the bank by it).
    pub fn spawn(slots: &mut SlotPool, elf: &[u8], bank: u64) -> Result<Server, &'static str> {
        let grants = [
            Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
            Grant { src: bank, dest: INSTANCE_BANK, rights: 0 },
        ];
        let spec = Spec { name: "constructor", elf, arg0: 0, arg1: 0, grants: &grants, blob: None };
        let mut loader = Loader::new(slots);
        let child = loader.load(&spec).map_err(|_| "cannot load constructor")?;
        let Some(meta) = loader.slots.alloc() else {
            let _ = loader.destroy(child);
            return Err("no free slot");
        };
        let call_rights = keep_abi::rights::WRITE | keep_abi::rights::CALL;
        let p = payload(kind::META, 0);
        if child.process.mint(meta, p, call_rights).and_then(|_| child.process.start()).is_err() {
            loader.slots.free(meta);
            let _ = loader.destroy(child);
            return Err("cannot start constructor");
        }
        Ok(Server { child, meta: Meta(meta) })
    }

    /// Stops and destroys the server (instances live on in their banks).
    pub fn stop(self, slots: &mut SlotPool) -> Result<(), &'static str> {
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.meta.0);
        slots.free(self.meta.0);
        let _ = self.child.process.stop();
        Loader::new(slots).destroy(self.child).map_err(|_| "cannot destroy constructor")
    }
}

#[cfg(test)]
mod dispatch_tests {
    extern crate std;
    use super::*;
    use keep_abi::proto::Answer;
    use std::vec::Vec;
    use keep_abi::{Msg, Tag};

    /// A handler that records which method `dispatch` called, with what.
    #[derive(Default)]
    struct Record(Vec<(u64, [u64; 3])>);

    impl Record {
        fn got(&mut self, label: u64, w: [u64; 3]) -> Answer {
            self.0.push((label, w));
            Answer::value(label)
        }
    }

    impl Handler for Record {
        fn new(&mut self, _: &Msg, a: u64, b: u64, n: u64) -> Answer { self.got(req::NEW, [a, b, n]) }
        fn image(&mut self, _: &Msg, o: u64) -> Answer { self.got(req::IMAGE, [o, 0, 0]) }
        fn add_cap(&mut self, _: &Msg, s: u64) -> Answer { self.got(req::ADD_CAP, [s, 0, 0]) }
        fn seal(&mut self, _: &Msg) -> Answer { self.got(req::SEAL, [0; 3]) }
        fn is_confined(&mut self, _: &Msg) -> Answer { self.got(req::IS_CONFINED, [0; 3]) }
        fn instantiate(&mut self, _: &Msg, l: u64, f: u64, a: u64) -> Answer { self.got(req::INSTANTIATE, [l, f, a]) }
        fn blob(&mut self, _: &Msg, n: u64) -> Answer { self.got(req::BLOB, [n, 0, 0]) }
    }

    fn msg(label: u64, payload: u64) -> Msg {
        Msg { err: 0, tag: Tag::new(label), payload, words: [21, 22, 23, 24] }
    }

    /// Each request reaches its method through its kind of capability
    /// only: through another kind it is NO_RIGHTS, an unknown label
    /// BAD_REQUEST, and neither reaches a method.
    #[test]
    fn each_kind_of_capability_serves_its_requests() {
        let (m, b, r) = (payload(kind::META, 0), payload(kind::BUILDER, 3), payload(kind::REQUESTER, 3));
        let mut h = Record::default();
        let served = [(req::NEW, m), (req::IMAGE, b), (req::ADD_CAP, b), (req::SEAL, b), (req::BLOB, b),
                      (req::IS_CONFINED, r), (req::INSTANTIATE, r)];
        for (label, p) in served {
            assert_eq!(dispatch(&mut h, &msg(label, p)).words(), [status::OK, label, 0, 0], "{label} {p:#x}");
        }
        assert_eq!(h.0[0], (req::NEW, [21, 22, 23]));
        assert_eq!(h.0[6], (req::INSTANTIATE, [21, 22, 23]));
        let n = h.0.len();
        for (label, _) in served {
            for p in [m, b, r, pager_payload(1, 1), 0, 0x105] {
                if served.contains(&(label, p)) {
                    continue;
                }
                assert_eq!(dispatch(&mut h, &msg(label, p)).words(), [status::NO_RIGHTS, 0, 0, 0], "{label} {p:#x}");
            }
        }
        for label in [0, 8, keep_abi::label::EXCEPTION, u64::MAX >> 16] {
            assert!(!is_request(label));
            for p in [m, b, r] {
                assert_eq!(dispatch(&mut h, &msg(label, p)).words(), [status::BAD_REQUEST, 0, 0, 0], "{label}");
            }
        }
        assert_eq!(h.0.len(), n, "a refused request reaches no method");
    }

    #[test]
    fn the_kinds_are_apart() {
        for p in [payload(kind::META, 0), payload(kind::BUILDER, 9), payload(kind::REQUESTER, 9), pager_payload(2, 5), 0] {
            let n = [meta(p), builder(p), requester(p), pager(p)].iter().filter(|&&x| x).count();
            assert_eq!(n, (p != 0) as usize, "{p:#x}");
        }
    }
}
