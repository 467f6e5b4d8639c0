//! Dataspaces (DROPS, section 2.2): the dataspace manager's protocol and
//! client side (docs/dataspaces.md has the tables, the errors and why).
//!
//! A dataspace is a number of 4 KiB pages the manager holds.  A dataspace
//! capability is a SENDER to the manager whose protected payload names a
//! *handle*: the dataspace and the rights this capability carries (`READ`,
//! `WRITE`).  Through it a client maps the pages into an address space it
//! names (the manager makes the mappings, so it can take them back), pins
//! them into a DMA domain (the device-visible addresses come back), and
//! shares the dataspace: a new handle with the same or fewer rights, a
//! child of its own, which it may later revoke — every mapping and pin made
//! through it or through its own shares then goes, and its capabilities
//! answer `STALE`.  The owner's handle (from `CREATE`) can destroy the
//! dataspace; its frames go back to the bank that paid for them.
//!
//! The client pays: `CREATE` carries the client's space-bank capability
//! (of the bank server the manager's own bank belongs to, with at least
//! ALLOC and FREE), and the pages are runs from that bank (`ALLOC_PAGES`,
//! 255 pages at most each, charged pages + 2).  Destroying the bank
//! revokes the dataspace's pages wherever they are mapped or pinned; the
//! manager then answers `GONE` on its handles.
//!
//! The protocol is defined in `abi/services/dataspace.toml`;
//! `tools/idlgen.py` generates `protocol.rs` (labels, statuses, the client
//! stub of the requests that carry no capability) from it and the tables
//! in docs/dataspaces.md.
//!
//! Rights of a mapping: `READ` or `READ | WRITE`; of a pin: `READ` (the
//! device reads the pages) and/or `WRITE` (the device writes them).  Each
//! needs the same rights in the handle.
#![cfg_attr(not(test), no_std)]

pub mod quota;
pub mod rules;
pub mod target;

#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{Sender, Tag, err};
/// The bank an [`Owned`] dataspace has (re-exported for its holders).
#[cfg(not(test))]
pub use keep_spacebank::Bank;

pub mod protocol;
pub use protocol::*;

/// Rights of a handle, a mapping and a pin (the kernel's values).
pub const READ: u64 = keep_abi::rights::READ;
pub const WRITE: u64 = keep_abi::rights::WRITE;

/// Pages of one dataspace at most (16 MiB).
pub const MAX_PAGES: u64 = 4096;
/// Pages one PIN pins at most: their addresses fill one message string.
pub const MAX_PIN: u64 = 512;
pub const PAGE: u64 = 4096;

/// Where the manager's starter finds it, by convention, in programs that
/// are given one (the block server, its clients).
pub const DS_SLOT: u64 = 0xe;
/// Where a client finds the bank it pays for its dataspaces with: a
/// constructor's instance has its own bank there
/// (keep_constructor::INSTANCE_BANK); a starter gives a program it starts
/// by hand one there.
pub const BANK_SLOT: u64 = 0xc;

/// The manager's interface (CREATE, STATS; QUIT for payload 0 alone): the
/// capability its starter keeps (payload 0) and a described client's
/// sender from the name service.
pub fn manager(p: u64) -> bool {
    p == 0 || keep_system::names::client_of(p).is_some()
}

/// A dataspace capability's interface: every payload that is not the
/// manager's; the manager looks its handle up (STALE, GONE) before the
/// request's label.
pub fn handle(p: u64) -> bool {
    !manager(p)
}

/// A handle's payload: bit 63 set (payload 0 is the manager's own
/// capability), the handle's index in bits 0-23, its generation above.
pub const fn payload(index: usize, generation: u64) -> u64 {
    1 << 63 | (index as u64 & 0xff_ffff) | (generation & 0x7f_ffff_ffff) << 24
}
pub const fn payload_index(p: u64) -> usize {
    (p & 0xff_ffff) as usize
}
pub const fn payload_generation(p: u64) -> u64 {
    (p >> 24) & 0x7f_ffff_ffff
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The IPC itself failed (a stale or wrong capability, say).
    Call(keep_abi::Error),
    /// The manager refused: a status; for `KERNEL`, the kernel's error.
    Status(u64, u64),
}

impl Error {
    /// The status, or None if the call itself failed.
    pub fn status(self) -> Option<u64> {
        match self {
            Error::Status(s, _) => Some(s),
            Error::Call(_) => None,
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(KERNEL, k) => write!(f, "the dataspace manager says KERNEL ({})", keep_abi::error_name(*k)),
            Error::Status(s @ (NO_MEMORY | BANK), b) => write!(f, "the dataspace manager says {} (the bank's status {b})", status_name(*s)),
            Error::Status(s, _) => write!(f, "the dataspace manager says {}", status_name(*s)),
        }
    }
}

pub type Result<T> = core::result::Result<T, Error>;

#[cfg(not(test))]
fn call(s: Sender, tag: Tag, words: [u64; 4]) -> Result<[u64; 4]> {
    let m = s.call(tag, words);
    if m.err != err::OK {
        return Err(Error::Call(keep_abi::Error(m.err)));
    }
    match m.words[0] {
        OK => Ok(m.words),
        st => Err(Error::Status(st, m.words[1])),
    }
}

/// Did the call fail because the manager is gone: restarted by its
/// supervisor (every sender to the old instance, the manager's own and each
/// dataspace capability, is STALE), or ended during the call (NO_REPLY)?
/// The dataspaces it made stay as memory (their pages are the clients'
/// banks', mapped and pinned where they were) but nothing manages them any
/// more: docs/dataspaces.md, "When the manager is restarted".
pub fn manager_gone(e: Error) -> bool {
    matches!(e, Error::Call(k) if k.0 == err::STALE || k.0 == err::NO_REPLY)
}

/// The frames a dataspace of `pages` pages costs its bank: each run of
/// MAX_RUN pages at most is charged its pages, its cappage and the bank
/// server's own.
pub const fn cost(pages: u64) -> u64 {
    pages + 2 * pages.div_ceil(MAX_RUN)
}
/// Pages of one run (the bank's ALLOC_PAGES at most).
pub const MAX_RUN: u64 = 255;

/// Looks the manager up again by name (`dataspace`, through the name
/// service in NAMES_SLOT) into `slot`, waiting out a restart (NOT_RUNNING)
/// for up to about 5 s: what a client started from the description does
/// when the manager it had is gone.
#[cfg(not(test))]
pub fn find_by_name(slot: u64) -> bool {
    let _ = keep_abi::SELF_ASPACE.delete_cap(slot);
    keep_system::names::lookup_patiently("dataspace", slot, keep_rt::ipc_buffer()).is_ok()
}

/// For a server that checks a client's dataspace capability against its
/// manager's (`ASPACE.COMPARE_CAP` with `slot`): if the sender in `slot`
/// is stale (the manager was restarted), the current instance by name, one
/// LOOKUP without waiting (a server must not stall its clients).  Returns
/// whether `slot` holds a live sender now.
#[cfg(not(test))]
pub fn refresh(slot: u64) -> bool {
    let live = |s| keep_abi::SELF_ASPACE.identify_cap(s).is_ok_and(|c| c.live && c.ty == keep_abi::ty::SENDER);
    if live(slot) {
        return true;
    }
    if !keep_system::names::present(keep_system::names::NAMES_SLOT) {
        return false;
    }
    let _ = keep_abi::SELF_ASPACE.delete_cap(slot);
    keep_system::names::lookup_at(keep_system::names::NAMES_SLOT, "dataspace", slot, keep_rt::ipc_buffer()).is_ok()
}

/// Unmaps whatever is still mapped in a server's window for a dataspace:
/// `pages` pages at `va` of its own space and at `iova` of its DMA domain.
/// After [`Dataspace::let_go`] (where the manager that made the mappings
/// is gone), and where an `ATTACH` failed half way (the manager died during
/// its `MAP` or `PIN`), so that the window can be used again and no page
/// stays reachable by the device.
pub fn clear_window(domain: keep_abi::DmaDomain, iova: u64, va: u64, pages: u64) {
    for i in 0..pages {
        // UNMAP invalidates the IOMMU's caches before it returns.
        if domain.lookup(iova + i * PAGE).is_ok() {
            let _ = domain.unmap(iova + i * PAGE);
        }
        if keep_abi::SELF_ASPACE.lookup(va + i * PAGE).is_ok() {
            let _ = keep_abi::SELF_ASPACE.unmap(va + i * PAGE);
        }
    }
}

/// The manager's own capability.
#[derive(Clone, Copy)]
pub struct Manager(pub Sender);

/// A dataspace paid by a bank of its own: a sub-bank of the client's
/// bank, made for it alone and limited to what it costs.  The client can
/// give its frames back whatever became of the manager that made it:
/// destroying the sub-bank revokes every page from every mapping and DMA
/// pin (the bank server's MEMORY.REVOKE, as when a killed client's bank
/// goes) and returns the frames.  What a long-lived client that must
/// survive a restart of the manager holds (docs/dataspaces.md, "When the
/// manager is restarted").
#[cfg(not(test))]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owned {
    /// The owner's capability.
    pub ds: Dataspace,
    /// The sub-bank (every right).
    pub bank: Bank,
}

#[cfg(not(test))]
impl Owned {
    /// DESTROY through the manager (STALE, and no matter, if it is not the
    /// one that made it), then the sub-bank: every frame back to the
    /// client's bank, every page out of every mapping and pin.  Both slots
    /// are empty after.
    pub fn destroy(self) {
        let _ = self.ds.destroy();
        let _ = self.bank.destroy();
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.ds.0.0);
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.bank.0);
    }
}

#[cfg(not(test))]
impl Manager {
    /// A new dataspace of `pages` zeroed pages paid by the bank whose
    /// capability is at `bank` (sent as it is: a bank capability restricted
    /// to ALLOC and FREE is enough); the owner's capability (READ, WRITE)
    /// arrives at the empty slot `dest`.  Returns its handle.
    pub fn create(self, pages: u64, bank: u64, dest: u64) -> Result<u64> {
        let buf = keep_rt::ipc_buffer();
        buf.set_recv_slots(&[dest]);
        let n = buf.set_send_caps(&[(bank, 0)]);
        Ok(call(self.0, Tag::new(CREATE).with_slots(1).with_caps(n), [pages, 0, 0, 0])?[1])
    }
    /// A dataspace of `pages` pages paid by a new sub-bank (at the empty
    /// slot `sub`) of the bank at `bank` ([`Owned`]); the owner's capability
    /// arrives at the empty slot `dest`.  If the manager is gone (restarted:
    /// [`manager_gone`]), the sub-bank is destroyed (it gives back anything
    /// a manager that died during the call had taken), `find` is asked to
    /// put a sender to the new manager in this Manager's slot
    /// ([`find_by_name`] for a described client), and the request is made
    /// once more: the retry every client makes when its manager restarts
    /// (docs/dataspaces.md).  Refused, nothing
    /// is left: both slots are empty and the bank is as it was.
    pub fn create_owned(self, pages: u64, bank: u64, sub: u64, dest: u64, find: impl FnOnce(u64) -> bool) -> Result<Owned> {
        let mut find = Some(find);
        loop {
            let sub_bank = keep_spacebank::Bank(bank).create_bank(cost(pages.clamp(1, MAX_PAGES)), sub).map_err(|e| match e {
                keep_spacebank::BankError::Status(s @ (keep_spacebank::status::OVER_LIMIT | keep_spacebank::status::NO_MEMORY)) => Error::Status(NO_MEMORY, s),
                keep_spacebank::BankError::Status(s) => Error::Status(BANK, s),
                keep_spacebank::BankError::Call(k) => Error::Call(keep_abi::Error(k)),
            })?;
            match self.create(pages, sub, dest) {
                Ok(_) => return Ok(Owned { ds: Dataspace(Sender(dest)), bank: sub_bank }),
                Err(e) => {
                    let _ = sub_bank.destroy();
                    let _ = keep_abi::SELF_ASPACE.delete_cap(sub);
                    let _ = keep_abi::SELF_ASPACE.delete_cap(dest);
                    let again = manager_gone(e) && find.take().is_some_and(|f| f(self.0.0));
                    if !again {
                        return Err(e);
                    }
                }
            }
        }
    }

    /// (dataspaces, live handles, mappings, pins).
    pub fn stats(self) -> Result<(u64, u64, u64, u64)> {
        let w = call(self.0, Tag::new(STATS), [0; 4])?;
        Ok((w[1], w[2], w[3] & 0xffff_ffff, w[3] >> 32))
    }
    pub fn quit(self) -> Result<()> {
        call(self.0, Tag::new(QUIT), [0; 4]).map(drop)
    }
}

/// A dataspace capability (one handle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dataspace(pub Sender);

#[cfg(not(test))]
impl Dataspace {
    /// (pages, rights, handle).
    pub fn info(self) -> Result<(u64, u64, u64)> {
        let w = call(self.0, Tag::new(INFO), [0; 4])?;
        Ok((w[1], w[2], w[3]))
    }

    /// Maps pages `first..first + count` at `vaddr` of the address space
    /// whose capability is at `aspace` (sent with READ and WRITE: the
    /// manager maps, and checks before it unmaps), with `rights` (READ or
    /// READ | WRITE).  Returns the mapping's id.
    pub fn map(self, aspace: u64, vaddr: u64, first: u64, count: u64, rights: u64) -> Result<u64> {
        let n = keep_rt::ipc_buffer().set_send_caps(&[(aspace, keep_abi::rights::READ | keep_abi::rights::WRITE)]);
        Ok(call(self.0, Tag::new(MAP).with_caps(n), [vaddr, first, count, rights])?[1])
    }

    pub fn unmap(self, mapping: u64) -> Result<()> {
        call(self.0, Tag::new(UNMAP), [mapping, 0, 0, 0]).map(drop)
    }

    /// A share of this dataspace with `rights` (no more than this handle's);
    /// its capability arrives at the empty slot `dest`.  Returns its handle
    /// (what `revoke` takes).
    pub fn share(self, rights: u64, dest: u64) -> Result<u64> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        Ok(call(self.0, Tag::new(SHARE).with_slots(1), [rights, 0, 0, 0])?[1])
    }

    /// Takes back the share `handle` (made from this handle or from one of
    /// its shares) and every share made from it: their mappings and pins
    /// go.  Returns (handles, mappings, pins) removed.
    pub fn revoke(self, handle: u64) -> Result<(u64, u64, u64)> {
        let w = call(self.0, Tag::new(REVOKE), [handle, 0, 0, 0])?;
        Ok((w[1], w[2], w[3]))
    }

    /// Pins pages `first..first + count` into the DMA domain at `domain`
    /// from device address `dev_addr` on, for device reads (`READ`) and/or
    /// writes (`WRITE`).  The device-visible address of each page is
    /// written to `addrs` (at least `count` long): `dev_addr + i * 4096`
    /// where the IOMMU translates, the page's physical address where it
    /// does not.  Returns the pin's id.
    pub fn pin(self, domain: u64, first: u64, count: u64, dev_addr: u64, rights: u64, addrs: &mut [u64]) -> Result<u64> {
        let n = keep_rt::ipc_buffer().set_send_caps(&[(domain, keep_abi::rights::READ | keep_abi::rights::WRITE)]);
        let w = call(self.0, Tag::new(PIN).with_caps(n), [first, count, dev_addr, rights])?;
        let buf = keep_rt::ipc_buffer();
        for (i, a) in addrs.iter_mut().take(count as usize).enumerate() {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                *x = buf.string_byte(i * 8 + k);
            }
            *a = u64::from_le_bytes(b);
        }
        Ok(w[1])
    }

    pub fn unpin(self, pin: u64) -> Result<()> {
        call(self.0, Tag::new(UNPIN), [pin, 0, 0, 0]).map(drop)
    }

    /// A server lets go of a dataspace a client gave it: the pin and the
    /// mapping it made (each STALE if the client revoked its share: the
    /// manager removed both then), then its capability, whose slot the
    /// caller may use again.  True if the manager took both out itself.
    pub fn let_go(self, pin: u64, map: u64) -> bool {
        let unpinned = self.unpin(pin).is_ok();
        let unmapped = self.unmap(map).is_ok();
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.0.0);
        unpinned && unmapped
    }

    /// [`let_go`](Self::let_go) for a server that mapped the dataspace's
    /// `pages` pages at `va` of its own space and pinned them at `iova` of
    /// its DMA domain `domain`: where the manager that made them is gone
    /// (restarted), nobody else will take them out, so the server unmaps
    /// whatever is still there itself — before the window is used again,
    /// and so that no page of the client's stays reachable by the device
    /// after the client's bank has it back.
    /// The window is searched only when the manager did not answer both
    /// (a live manager unpins and unmaps the whole of each).
    pub fn let_go_at(self, pin: u64, map: u64, domain: keep_abi::DmaDomain, iova: u64, va: u64, pages: u64) {
        if !self.let_go(pin, map) {
            clear_window(domain, iova, va, pages);
        }
    }

    /// Destroys the dataspace (the owner's handle only): every share is
    /// revoked, every mapping and pin removed, the frames go back to the pool.
    pub fn destroy(self) -> Result<()> {
        call(self.0, Tag::new(DESTROY), [0; 4]).map(drop)
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
    struct Record(Vec<(u64, [u64; 4])>);

    impl Record {
        fn got(&mut self, label: u64, w: [u64; 4]) -> Answer {
            self.0.push((label, w));
            Answer::value(label)
        }
    }

    impl Handler for Record {
        fn create(&mut self, _: &Msg, pages: u64) -> Answer { self.got(CREATE, [pages, 0, 0, 0]) }
        fn stats(&mut self, _: &Msg) -> Answer { self.got(STATS, [0; 4]) }
        fn quit(&mut self, _: &Msg) -> Answer { self.got(QUIT, [0; 4]) }
        fn info(&mut self, _: &Msg) -> Answer { self.got(INFO, [0; 4]) }
        fn map(&mut self, _: &Msg, v: u64, f: u64, c: u64, r: u64) -> Answer { self.got(MAP, [v, f, c, r]) }
        fn unmap(&mut self, _: &Msg, id: u64) -> Answer { self.got(UNMAP, [id, 0, 0, 0]) }
        fn share(&mut self, _: &Msg, r: u64) -> Answer { self.got(SHARE, [r, 0, 0, 0]) }
        fn revoke(&mut self, _: &Msg, h: u64) -> Answer { self.got(REVOKE, [h, 0, 0, 0]) }
        fn pin(&mut self, _: &Msg, f: u64, c: u64, d: u64, r: u64) -> Answer { self.got(PIN, [f, c, d, r]) }
        fn unpin(&mut self, _: &Msg, id: u64) -> Answer { self.got(UNPIN, [id, 0, 0, 0]) }
        fn destroy(&mut self, _: &Msg) -> Answer { self.got(DESTROY, [0; 4]) }
    }

    fn msg(label: u64, payload: u64) -> Msg {
        Msg { err: 0, tag: Tag::new(label), payload, words: [11, 12, 13, 14] }
    }

    const DESCRIBED: u64 = keep_system::names::CLIENT | 3;
    const HANDLE: u64 = 1 << 63 | 5 | 2 << 24;

    /// The manager's requests come through payload 0 and a described
    /// client's sender (QUIT through payload 0 alone), a dataspace's through
    /// a handle; each reaches its method with its words, and the rest is
    /// BAD_REQUEST before any method runs.
    #[test]
    fn each_interface_reaches_its_methods_only() {
        let mut h = Record::default();
        for (label, payload) in [(CREATE, 0), (CREATE, DESCRIBED), (STATS, 0), (STATS, DESCRIBED), (QUIT, 0),
                                 (INFO, HANDLE), (MAP, HANDLE), (UNMAP, HANDLE), (SHARE, HANDLE), (REVOKE, HANDLE),
                                 (PIN, HANDLE), (UNPIN, HANDLE), (DESTROY, HANDLE)] {
            assert_eq!(dispatch(&mut h, &msg(label, payload)).words(), [OK, label, 0, 0], "{label} {payload:#x}");
        }
        assert_eq!(h.0[0], (CREATE, [11, 0, 0, 0]));
        assert_eq!(h.0[6], (MAP, [11, 12, 13, 14]));
        assert_eq!(h.0[10], (PIN, [11, 12, 13, 14]));
        let n = h.0.len();
        for (label, payload) in [(QUIT, DESCRIBED), (QUIT, HANDLE), (CREATE, HANDLE), (STATS, HANDLE), (INFO, 0),
                                 (MAP, DESCRIBED), (DESTROY, 0), (0, 0), (12, HANDLE), (u64::MAX >> 16, DESCRIBED)] {
            assert_eq!(dispatch(&mut h, &msg(label, payload)).words(), [BAD_REQUEST, 0, 0, 0], "{label} {payload:#x}");
        }
        assert_eq!(h.0.len(), n, "a refused request reaches no method");
    }

    #[test]
    fn the_interfaces_split_the_payloads() {
        for p in [0, DESCRIBED, keep_system::names::CLIENT] {
            assert!(manager(p) && !handle(p), "{p:#x}");
        }
        for p in [HANDLE, 1, keep_system::names::NOTICE, keep_system::names::CLIENT | 0x1_0000, u64::MAX] {
            assert!(handle(p) && !manager(p), "{p:#x}");
        }
    }
}
