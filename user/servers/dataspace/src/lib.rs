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
//! Requests through the manager's capability (payload 0):
//!
//! | label | words | reply |
//! |---|---|---|
//! | `CREATE` | pages (1..=`MAX_PAGES`); cap: the client's bank | status, handle; cap: the owner's capability (READ, WRITE) |
//! | `STATS` | | status, dataspaces, handles, mappings \| pins << 32 |
//! | `QUIT` | | status |
//!
//! Requests through a dataspace capability:
//!
//! | label | words | caps | reply |
//! |---|---|---|---|
//! | `INFO` | | | status, pages, rights, handle |
//! | `MAP` | vaddr, first page, count, rights | an ASPACE (WRITE, READ) | status, mapping id |
//! | `UNMAP` | mapping id | | status |
//! | `SHARE` | rights | | status, handle; cap: the share's capability |
//! | `REVOKE` | handle (a share made from this one, or below it) | | status, handles, mappings, pins removed |
//! | `PIN` | first page, count (..=`MAX_PIN`), device address, rights | a DMA_DOMAIN (WRITE, READ) | status, pin id; string: each page's device address |
//! | `UNPIN` | pin id | | status |
//! | `DESTROY` | | | status (the owner's handle only) |
//!
//! Rights of a mapping: `READ` or `READ | WRITE`; of a pin: `READ` (the
//! device reads the pages) and/or `WRITE` (the device writes them).  Each
//! needs the same rights in the handle.
#![no_std]

use keep_abi::{Sender, Tag, err};

pub const CREATE: u64 = 1;
pub const STATS: u64 = 2;
pub const QUIT: u64 = 3;
pub const INFO: u64 = 4;
pub const MAP: u64 = 5;
pub const UNMAP: u64 = 6;
pub const SHARE: u64 = 7;
pub const REVOKE: u64 = 8;
pub const PIN: u64 = 9;
pub const UNPIN: u64 = 10;
pub const DESTROY: u64 = 11;

/// Reply statuses (word 0).
pub const OK: u64 = 0;
/// Unknown label, a malformed argument, a missing capability.
pub const BAD_REQUEST: u64 = 1;
/// The handle lacks a right the request needs.
pub const NO_RIGHTS: u64 = 2;
/// A page outside the dataspace.
pub const OUT_OF_RANGE: u64 = 3;
/// The handle was revoked or its dataspace destroyed.
pub const STALE: u64 = 4;
/// No such mapping, pin or share of this handle.
pub const NOT_FOUND: u64 = 5;
/// `CREATE`: the client's bank is at its limit (or a bank above it is) or
/// the memory pool is empty; word 1 the bank's status.
pub const NO_MEMORY: u64 = 6;
/// The manager's tables are full.
pub const FULL: u64 = 7;
/// The kernel refused a mapping (word 1: its error code); nothing changed.
pub const KERNEL: u64 = 8;
/// `CREATE` without a capability, or with one that is not a bank of the
/// manager's bank server.
pub const NOT_A_BANK: u64 = 9;
/// `CREATE`: the bank refused otherwise; word 1 its status (`NO_RIGHTS`:
/// the capability lacks ALLOC or FREE; `STALE`: the bank is destroyed;
/// `FULL`).
pub const BANK: u64 = 10;
/// The dataspace's pages went with the bank that paid for them (the bank
/// was destroyed): every request on its handles.
pub const GONE: u64 = 11;

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

pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NO_RIGHTS => "NO_RIGHTS",
        OUT_OF_RANGE => "OUT_OF_RANGE",
        STALE => "STALE",
        NOT_FOUND => "NOT_FOUND",
        NO_MEMORY => "NO_MEMORY",
        FULL => "FULL",
        KERNEL => "KERNEL",
        NOT_A_BANK => "NOT_A_BANK",
        BANK => "BANK",
        GONE => "GONE",
        _ => "?",
    }
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

/// The manager's own capability.
#[derive(Clone, Copy)]
pub struct Manager(pub Sender);

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
    /// caller may use again.
    pub fn let_go(self, pin: u64, map: u64) {
        let _ = self.unpin(pin);
        let _ = self.unmap(map);
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.0.0);
    }

    /// Destroys the dataspace (the owner's handle only): every share is
    /// revoked, every mapping and pin removed, the frames go back to the pool.
    pub fn destroy(self) -> Result<()> {
        call(self.0, Tag::new(DESTROY), [0; 4]).map(drop)
    }
}
