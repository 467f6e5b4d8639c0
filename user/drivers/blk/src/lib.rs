//! The block server's protocol and client side (docs/devices.md, "The
//! block server").  The server drives the virtio-blk disk (a session from
//! the PCI server, its DMA confined to the session's domain) and serves
//! clients, each confined to its own range of sectors with its own rights.
//!
//! Calls through the administrator's capability (payload 0, given to
//! whoever starts the server):
//!
//! | label | words | reply words | reply caps |
//! |---|---|---|---|
//! | `ADD_CLIENT` | first sector, sectors, rights (`READ` \| `WRITE`) | status, client number | the client's capability |
//! | `STATS` | | status, requests served, refused, DMA faults | |
//! | `QUIT` | | status | |
//!
//! Calls through a client's capability (sector numbers count from the
//! start of its range; a request moves 1 to `MAX_SECTORS` sectors of 512
//! bytes, as the message's string):
//!
//! | label | words | string | reply |
//! |---|---|---|---|
//! | `INFO` | | | status, sectors, rights |
//! | `READ` | sector, count | | status; the data as the reply's string |
//! | `WRITE` | sector, count | count × 512 bytes | status |
//! | `FLUSH` | | | status |
//!
//! Statuses: `OUT_OF_RANGE` for any sector outside the client's range,
//! `NO_RIGHTS` for a read or write its rights do not allow, `BAD_REQUEST`
//! for a count of 0 or above `MAX_SECTORS`, a string of the wrong length
//! or an unknown label; nothing is read or written then.
#![no_std]

use keep_abi::{Sender, Tag, err, rights};

pub const ADD_CLIENT: u64 = 1;
pub const STATS: u64 = 2;
pub const QUIT: u64 = 3;
pub const INFO: u64 = 4;
pub const READ: u64 = 5;
pub const WRITE: u64 = 6;
pub const FLUSH: u64 = 7;

pub const OK: u64 = 0;
pub const BAD_REQUEST: u64 = 1;
pub const OUT_OF_RANGE: u64 = 2;
pub const NO_RIGHTS: u64 = 3;
pub const IO_ERROR: u64 = 4;
pub const NO_RESOURCES: u64 = 5;

pub const SECTOR: usize = 512;
/// Sectors one request moves: one message string (MAX_STRING bytes).
pub const MAX_SECTORS: u64 = 8;

pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        OUT_OF_RANGE => "OUT_OF_RANGE",
        NO_RIGHTS => "NO_RIGHTS",
        IO_ERROR => "IO_ERROR",
        NO_RESOURCES => "NO_RESOURCES",
        _ => "?",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Call(keep_abi::Error),
    Status(u64),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(s) => write!(f, "the block server says {}", status_name(*s)),
        }
    }
}

fn call(s: Sender, tag: Tag, words: [u64; 4]) -> Result<keep_abi::Msg, Error> {
    let m = s.call(tag, words);
    if m.err != err::OK {
        return Err(Error::Call(keep_abi::Error(m.err)));
    }
    match m.words[0] {
        OK => Ok(m),
        st => Err(Error::Status(st)),
    }
}

/// The administrator's capability.
#[derive(Clone, Copy)]
pub struct Admin(pub Sender);

impl Admin {
    /// A client for `sectors` sectors from `first` with `rights` (READ,
    /// WRITE); its capability arrives at the empty slot `dest`.
    pub fn add_client(self, first: u64, sectors: u64, rights: u64, dest: u64) -> Result<u64, Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        Ok(call(self.0, Tag::new(ADD_CLIENT).with_slots(1), [first, sectors, rights, 0])?.words[1])
    }
    /// (requests served, refused, DMA faults).
    pub fn stats(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(STATS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    pub fn quit(self) -> Result<(), Error> {
        call(self.0, Tag::new(QUIT), [0; 4]).map(drop)
    }
}

/// A client's capability.
#[derive(Clone, Copy)]
pub struct Client(pub Sender);

impl Client {
    /// (sectors, rights).
    pub fn info(self) -> Result<(u64, u64), Error> {
        let w = call(self.0, Tag::new(INFO), [0; 4])?.words;
        Ok((w[1], w[2]))
    }
    /// Reads `buf.len() / 512` sectors from `sector`.
    pub fn read(self, sector: u64, buf: &mut [u8]) -> Result<(), Error> {
        let count = (buf.len() / SECTOR) as u64;
        call(self.0, Tag::new(READ), [sector, count, 0, 0])?;
        let n = keep_rt::ipc_buffer().read_string(buf);
        if n != buf.len() {
            return Err(Error::Status(IO_ERROR));
        }
        Ok(())
    }
    /// Writes `data` (a multiple of 512 bytes) from `sector`.
    pub fn write(self, sector: u64, data: &[u8]) -> Result<(), Error> {
        keep_rt::ipc_buffer().set_string(data);
        let count = (data.len() / SECTOR) as u64;
        call(self.0, Tag::new(WRITE).with_string(), [sector, count, 0, 0]).map(drop)
    }
    pub fn flush(self) -> Result<(), Error> {
        call(self.0, Tag::new(FLUSH), [0; 4]).map(drop)
    }
}

/// Rights a client may be given.
pub const CLIENT_RIGHTS: u64 = rights::READ | rights::WRITE;
