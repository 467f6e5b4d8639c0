//! The space bank (EROS): a server from which programs get their memory.
//! Banks form a tree; each has a limit in frames.  Data pages, cappages and
//! kernel-memory accounts (funded from the bank; address spaces, processes
//! and wrappers are then made from the account) are allocated from a bank
//! and charged to it and to every bank above it.  Destroying a bank
//! destroys everything allocated from it and from its sub-banks — pages
//! and cappages wherever they are mapped (MEMORY.REVOKE), accounts whole
//! (ACCOUNT.DESTROY_ALL) — and gives every frame back to the memory pool.
//!
//! This library is the protocol (docs/space-banks.md) and the client side;
//! `main.rs` is the server.
//!
//! A bank capability is a SENDER to the server whose protected payload
//! names the bank (index and generation) and the rights of this capability
//! ([`rights`]): the server reads the payload of every call, a client can
//! neither read nor change it, so a restricted capability cannot be
//! amplified.  A destroyed bank's generation is never used again: every
//! capability to it gets `STALE`.
//!
//! The protocol (labels in [`req`], statuses in [`status`], the rights
//! of a bank capability in [`rights`]) is defined in
//! `abi/services/spacebank.toml`; `tools/idlgen.py` generates `protocol.rs`
//! from it and the table in docs/space-banks.md.

#![no_std]

extern crate alloc;

use keep_abi::{Error, Process, Sender, Tag, err, slot, ty};
use keep_loader::{Child, FrameSource, Grant, Loader, SlotPool, Spec};

pub mod protocol;
pub use protocol::{Handler, dispatch, needs, req, rights};

/// ALLOC_PAGES: the most pages in one run (the run's cappage keeps the
/// last of its 256 slots for itself).
pub const MAX_RUN: u64 = 255;

/// Reply statuses (word 0), and their names for messages.
pub mod status {
    pub use super::protocol::status::*;

    pub fn name(s: u64) -> &'static str {
        match s {
            OK => "ok",
            BAD_REQUEST => "bad request",
            NO_RIGHTS => "no rights",
            OVER_LIMIT => "over the limit",
            STALE => "bank destroyed",
            NOT_FOUND => "no such object in this bank",
            NO_MEMORY => "no memory",
            FULL => "bank server full",
            KERNEL => "kernel error",
            _ => "unknown status",
        }
    }
}

/// Most banks alive at once.
pub const MAX_BANKS: usize = 256;
/// Most frames one account may be funded with in one request (DONATE's limit).
pub const MAX_FUND: u64 = 65536;

/// A bank capability's payload: rights in bits 0-7, the bank's index in
/// bits 8-23, its generation in bits 24-63.
pub const fn payload(index: u64, generation: u64, rights: u64) -> u64 {
    (rights & 0xff) | ((index & 0xffff) << 8) | (generation << 24)
}
pub const fn payload_rights(p: u64) -> u64 {
    p & 0xff
}
pub const fn payload_index(p: u64) -> usize {
    ((p >> 8) & 0xffff) as usize
}
pub const fn payload_generation(p: u64) -> u64 {
    p >> 24
}
/// The prime bank: index 0, generation 1.
pub const PRIME_INDEX: u64 = 0;
pub const PRIME_GENERATION: u64 = 1;
/// The prime bank cannot be destroyed: its capabilities never carry DESTROY.
pub const PRIME_RIGHTS: u64 = rights::ALLOC | rights::FREE | rights::INFO;

/// Kinds of objects in a [`Report`] and a bank's table.
pub mod kind {
    pub const PAGE: u64 = 1;
    pub const CAPPAGE: u64 = 2;
    pub const ACCOUNT: u64 = 3;
    /// A run of pages (ALLOC_PAGES).
    pub const RUN: u64 = 4;
}

/// A request that failed: the server's status, or the call itself (the
/// kernel's error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BankError {
    Status(u64),
    Call(u64),
}

impl core::fmt::Display for BankError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            BankError::Status(s) => write!(f, "space bank: {}", status::name(s)),
            BankError::Call(e) => write!(f, "call to the space bank failed: {}", Error(e)),
        }
    }
}

/// What INFO answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    pub limit: u64,
    pub used: u64,
    pub sub_banks: u64,
    pub objects: u64,
    /// The bank's index (as REPORT names banks).
    pub index: u64,
}

/// A bank capability held in the caller's slot `.0`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bank(pub u64);

impl Bank {
    /// One call; `recv` is the slot for a capability in the reply (0: none).
    fn call(self, label: u64, words: [u64; 3], recv: u64) -> Result<[u64; 4], BankError> {
        let mut tag = Tag::new(label);
        if recv != 0 {
            tag = tag.with_slots(keep_rt::ipc_buffer().set_recv_slots(&[recv]));
        }
        let m = Sender(self.0).call(tag, [words[0], words[1], words[2], 0]);
        if m.err != err::OK {
            return Err(BankError::Call(m.err));
        }
        if m.words[0] != status::OK {
            return Err(BankError::Status(m.words[0]));
        }
        Ok(m.words)
    }

    /// A PAGE at `dest` (empty); returns its handle.
    pub fn alloc_page(self, dest: u64) -> Result<u64, BankError> {
        self.call(req::ALLOC_PAGE, [0; 3], dest).map(|w| w[1])
    }
    pub fn alloc_cappage(self, dest: u64) -> Result<u64, BankError> {
        self.call(req::ALLOC_CAPPAGE, [0; 3], dest).map(|w| w[1])
    }
    /// A run of `n` (1 to MAX_RUN) zeroed pages: a CAPPAGE at `dest` whose
    /// slots 0 to n-1 hold them (read, write, execute); one object, one
    /// handle, charged n + 2 frames (the pages, that cappage and the
    /// server's own), freed whole.
    pub fn alloc_pages(self, n: u64, dest: u64) -> Result<u64, BankError> {
        self.call(req::ALLOC_PAGES, [n, 0, 0], dest).map(|w| w[1])
    }
    /// An ACCOUNT at `dest` funded with `frames`; returns its handle.
    pub fn alloc_account(self, frames: u64, dest: u64) -> Result<u64, BankError> {
        self.call(req::ALLOC_ACCOUNT, [frames, 0, 0], dest).map(|w| w[1])
    }
    pub fn fund(self, handle: u64, frames: u64) -> Result<(), BankError> {
        self.call(req::FUND, [handle, frames, 0], 0).map(drop)
    }
    pub fn free(self, handle: u64) -> Result<(), BankError> {
        self.call(req::FREE, [handle, 0, 0], 0).map(drop)
    }
    /// A sub-bank with `limit` frames, its capability (every right) at `dest`.
    pub fn create_bank(self, limit: u64, dest: u64) -> Result<Bank, BankError> {
        self.call(req::CREATE_BANK, [limit, 0, 0], dest).map(|_| Bank(dest))
    }
    /// A capability to this bank with only `mask` of this one's rights.
    pub fn restrict(self, mask: u64, dest: u64) -> Result<Bank, BankError> {
        self.call(req::RESTRICT, [mask, 0, 0], dest).map(|_| Bank(dest))
    }
    pub fn info(self) -> Result<Info, BankError> {
        self.call(req::INFO, [0; 3], 0).map(|w| Info {
            limit: w[1],
            used: w[2],
            sub_banks: (w[3] >> 24) & 0xff_ffff,
            objects: w[3] & 0xff_ffff,
            index: w[3] >> 48,
        })
    }
    pub fn destroy(self) -> Result<(), BankError> {
        self.call(req::DESTROY, [0; 3], 0).map(drop)
    }
    /// The subtree's figures, decoded from the reply's string.
    pub fn report(self) -> Result<Report, BankError> {
        let w = self.call(req::REPORT, [0; 3], 0)?;
        Ok(Report::decode(keep_rt::ipc_buffer(), w[1] as usize, w[2] as usize))
    }
}

/// A bank as a loader's [`FrameSource`]: every page and cappage of the
/// program comes from the bank.
pub struct BankFrames(pub Bank);

impl FrameSource for BankFrames {
    fn retype(&mut self, t: u64, dest: u64) -> Result<(), Error> {
        let r = match t {
            ty::PAGE => self.0.alloc_page(dest),
            ty::CAPPAGE => self.0.alloc_cappage(dest),
            _ => return Err(Error::INVALID_ARG),
        };
        r.map(drop).map_err(|e| match e {
            BankError::Call(e) => Error(e),
            BankError::Status(status::OVER_LIMIT | status::NO_MEMORY) => Error::NO_MEMORY,
            BankError::Status(_) => Error::BAD_STATE,
        })
    }
}

/// One bank of a REPORT (preorder from the bank asked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BankRecord {
    pub index: u64,
    pub depth: u64,
    pub limit: u64,
    pub used: u64,
    pub sub_banks: u64,
    pub objects: u64,
}

/// One account of a REPORT: its bank, handle and ACCOUNT.INFO.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountRecord {
    pub bank: u64,
    pub handle: u64,
    pub free: u64,
    pub used: u64,
    pub taken: u64,
    pub out: u64,
}

/// Words per record in the REPORT string.
pub const RECORD_WORDS: usize = 6;
/// Records that fit in the 4 KiB string.
pub const REPORT_RECORDS: usize = 4096 / (8 * RECORD_WORDS);

/// A REPORT: banks, then accounts, each RECORD_WORDS little-endian words.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub banks: alloc::vec::Vec<BankRecord>,
    pub accounts: alloc::vec::Vec<AccountRecord>,
}

impl Report {
    fn decode(buf: &keep_abi::IpcBuffer, nb: usize, na: usize) -> Report {
        let len = buf.received_len();
        let word = |i: usize| {
            let mut b = [0u8; 8];
            for (k, x) in b.iter_mut().enumerate() {
                let at = i * 8 + k;
                *x = if at < len { buf.string_byte(at) } else { 0 };
            }
            u64::from_le_bytes(b)
        };
        let rec = |r: usize| -> [u64; RECORD_WORDS] { core::array::from_fn(|k| word(r * RECORD_WORDS + k)) };
        let nb = nb.min(REPORT_RECORDS);
        let na = na.min(REPORT_RECORDS - nb);
        let banks = (0..nb)
            .map(rec)
            .map(|w| BankRecord { index: w[0], depth: w[1], limit: w[2], used: w[3], sub_banks: w[4], objects: w[5] })
            .collect();
        let accounts = (nb..nb + na)
            .map(rec)
            .map(|w| AccountRecord { bank: w[0], handle: w[1], free: w[2], used: w[3], taken: w[4], out: w[5] })
            .collect();
        Report { banks, accounts }
    }
}

/// A running space-bank server: its process, and a capability to its prime
/// bank (in the starter's slot).
pub struct Server {
    pub child: Child,
    pub prime: Bank,
}

impl Server {
    /// Loads the server from `elf` (paid by the caller's account, its own
    /// pages from the caller's pool), gives it the memory pool at `memory`
    /// and the console, and starts it with a prime bank of `limit` frames.
    pub fn spawn(slots: &mut SlotPool, elf: &[u8], memory: u64, limit: u64) -> Result<Server, &'static str> {
        let grants = [
            Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
            Grant { src: memory, dest: slot::MEMORY, rights: 0 },
        ];
        let spec = Spec { name: "spacebank", elf, arg0: limit, arg1: 0, grants: &grants, blob: None };
        let mut loader = Loader::new(slots);
        let child = loader.load(&spec).map_err(|_| "cannot load spacebank")?;
        let Some(prime) = loader.slots.alloc() else {
            let _ = loader.destroy(child);
            return Err("no free slot");
        };
        let p = payload(PRIME_INDEX, PRIME_GENERATION, PRIME_RIGHTS);
        let call = keep_abi::rights::WRITE | keep_abi::rights::CALL;
        if child.process.mint(prime, p, call).and_then(|_| child.process.start()).is_err() {
            loader.slots.free(prime);
            let _ = loader.destroy(child);
            return Err("cannot start spacebank");
        }
        let server = Server { child, prime: Bank(prime) };
        // The first answer comes after the server has set itself up (and
        // taken its own frames): a caller's figures start from here.
        if server.prime.info().is_err() {
            let _ = server.stop(slots);
            return Err("spacebank does not answer");
        }
        Ok(server)
    }

    /// Stops the server and destroys it.  Objects still allocated from its
    /// banks stay as they are (nothing can free them any more): destroy
    /// the banks first.
    pub fn stop(self, slots: &mut SlotPool) -> Result<(), &'static str> {
        let _ = keep_abi::SELF_ASPACE.delete_cap(self.prime.0);
        slots.free(self.prime.0);
        let _ = Process(self.child.process.0).stop();
        Loader::new(slots).destroy(self.child).map_err(|_| "cannot destroy spacebank")
    }
}
