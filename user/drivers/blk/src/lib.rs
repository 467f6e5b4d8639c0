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
//! | `QUEUE_STATS` | | status, most requests on the device at once, flushes, buffers attached | |
//! | `CLIENT` | index (from 0) | status, clients; string: first, sectors, rights, requests served, refused, its place in the description (or `u64::MAX`), buffers attached | |
//! | `QUIT` | | status | |
//!
//! Calls through a client's capability (sector numbers count from the
//! start of its range).  Bulk data goes through a **dataspace** the client
//! shares with the server (docs/dataspaces.md): `ATTACH` it once (the
//! server pins it into its DMA domain), then `READ_DS`/`WRITE_DS` move up
//! to `MAX_DS_SECTORS` sectors between the disk and the dataspace's pages
//! directly, the device doing the copying.  `READ`/`WRITE` move 1 to
//! `MAX_SECTORS` sectors of 512 bytes as the message's string instead.
//!
//! | label | words | caps / string | reply |
//! |---|---|---|---|
//! | `INFO` | | | status, sectors, rights |
//! | `READ` | sector, count | | status; the data as the reply's string |
//! | `WRITE` | sector, count | string: count × 512 bytes | status |
//! | `FLUSH` | | | status, once every write acknowledged before it is on the disk |
//! | `ATTACH` | | cap: a dataspace capability (the server's manager's) | status, buffer, pages, rights |
//! | `DETACH` | buffer | | status |
//! | `READ_DS` | buffer, byte offset, sector, count | | status (the sectors are in the buffer's pages) |
//! | `WRITE_DS` | buffer, byte offset, sector, count | | status (the sectors are on the device) |
//!
//! Statuses: `OUT_OF_RANGE` for any sector outside the client's range,
//! `NO_RIGHTS` for a read or write its rights do not allow, or a
//! `READ_DS` into a dataspace shared read-only (the device would write
//! it); `BAD_REQUEST` for a count of 0 or above the maximum, a string of
//! the wrong length or an unknown label; `BAD_BUFFER` for a buffer number
//! that is not one of the client's, a byte range outside the buffer or
//! not a multiple of 512, or pages no longer pinned (the client revoked
//! its share); `NOT_DATASPACE` for an `ATTACH` of anything but a live
//! dataspace capability of the server's own dataspace manager;
//! `IN_USE` for a `DETACH` of a buffer with a request on the device;
//! `NO_RESOURCES` when the server's tables are full; `IO_ERROR` when the
//! device failed the request.  Nothing is read or written then.
//!
//! A write is acknowledged (its reply sent) only after the device
//! completed it; `FLUSH` waits for every request on the device, then has
//! the device write its cache back.
#![no_std]

use keep_abi::{Sender, Tag, err, rights};

pub const ADD_CLIENT: u64 = 1;
pub const STATS: u64 = 2;
pub const QUIT: u64 = 3;
pub const INFO: u64 = 4;
pub const READ: u64 = 5;
pub const WRITE: u64 = 6;
pub const FLUSH: u64 = 7;
pub const ATTACH: u64 = 8;
pub const DETACH: u64 = 9;
pub const READ_DS: u64 = 10;
pub const WRITE_DS: u64 = 11;
pub const QUEUE_STATS: u64 = 12;
pub const CLIENT: u64 = 13;

pub const OK: u64 = 0;
pub const BAD_REQUEST: u64 = 1;
pub const OUT_OF_RANGE: u64 = 2;
pub const NO_RIGHTS: u64 = 3;
pub const IO_ERROR: u64 = 4;
pub const NO_RESOURCES: u64 = 5;
pub const BAD_BUFFER: u64 = 6;
pub const NOT_DATASPACE: u64 = 7;
pub const IN_USE: u64 = 8;
/// `CLIENT`: no client with that index.
pub const NOT_FOUND: u64 = 9;

pub const SECTOR: usize = 512;
/// Sectors one request moves: one message string (MAX_STRING bytes).
pub const MAX_SECTORS: u64 = 8;
/// Sectors one READ_DS or WRITE_DS moves at most (128 KiB).
pub const MAX_DS_SECTORS: u64 = 256;
/// Pages of a dataspace the server attaches at most (2 MiB).
pub const MAX_BUFFER_PAGES: u64 = 512;
/// Requests on the device at once (each takes 3 of the queue's 16 descriptors).
pub const IN_FLIGHT: usize = 4;

pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        OUT_OF_RANGE => "OUT_OF_RANGE",
        NO_RIGHTS => "NO_RIGHTS",
        IO_ERROR => "IO_ERROR",
        NO_RESOURCES => "NO_RESOURCES",
        BAD_BUFFER => "BAD_BUFFER",
        NOT_DATASPACE => "NOT_DATASPACE",
        IN_USE => "IN_USE",
        NOT_FOUND => "NOT_FOUND",
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
    /// (most requests on the device at once so far, flushes, buffers attached).
    pub fn queue_stats(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(QUEUE_STATS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    pub fn quit(self) -> Result<(), Error> {
        call(self.0, Tag::new(QUIT), [0; 4]).map(drop)
    }
    /// Client `index` (from 0): its record, and how many clients there are.
    pub fn client(self, index: u64) -> Result<(ClientInfo, u64), Error> {
        let m = call(self.0, Tag::new(CLIENT), [index, 0, 0, 0])?;
        let buf = keep_rt::ipc_buffer();
        let word = |i: usize| u64::from_le_bytes(core::array::from_fn(|k| buf.string_byte(i * 8 + k)));
        if buf.received_len() < 56 {
            return Err(Error::Status(BAD_REQUEST));
        }
        let info = ClientInfo {
            first: word(0),
            sectors: word(1),
            rights: word(2),
            served: word(3),
            refused: word(4),
            described: (word(5) != u64::MAX).then_some(word(5)),
            buffers: word(6),
        };
        Ok((info, m.words[1]))
    }
}

/// One client, as `CLIENT` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientInfo {
    pub first: u64,
    pub sectors: u64,
    pub rights: u64,
    pub served: u64,
    pub refused: u64,
    /// Its place in the system description, for a described client.
    pub described: Option<u64>,
    pub buffers: u64,
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
    /// Returns once every write acknowledged before it is on the disk.
    pub fn flush(self) -> Result<(), Error> {
        call(self.0, Tag::new(FLUSH), [0; 4]).map(drop)
    }

    /// Gives the server the dataspace whose capability is at `ds` (a share
    /// made for it: `READ` lets it write the disk from the pages, `WRITE`
    /// lets it read the disk into them).  Returns (buffer, pages, rights).
    /// The client keeps its own capability, and may revoke the share.
    pub fn attach(self, ds: u64) -> Result<(u64, u64, u64), Error> {
        let n = keep_rt::ipc_buffer().set_send_caps(&[(ds, 0)]);
        let w = call(self.0, Tag::new(ATTACH).with_caps(n), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    /// The server lets go of the buffer (unpins and unmaps it).
    pub fn detach(self, buffer: u64) -> Result<(), Error> {
        call(self.0, Tag::new(DETACH), [buffer, 0, 0, 0]).map(drop)
    }
    /// Reads `count` sectors from `sector` into the buffer's pages at byte
    /// `offset` (a multiple of 512); returns when they are there.
    pub fn read_ds(self, buffer: u64, offset: u64, sector: u64, count: u64) -> Result<(), Error> {
        call(self.0, Tag::new(READ_DS), [buffer, offset, sector, count]).map(drop)
    }
    /// Writes `count` sectors from the buffer's pages at byte `offset` to
    /// `sector`; returns when the device has them.
    pub fn write_ds(self, buffer: u64, offset: u64, sector: u64, count: u64) -> Result<(), Error> {
        call(self.0, Tag::new(WRITE_DS), [buffer, offset, sector, count]).map(drop)
    }
}

/// Rights a client may be given.
pub const CLIENT_RIGHTS: u64 = rights::READ | rights::WRITE;

/// The features the block server (and `blkbench`, owning the driver, to
/// make the same device requests) hides from `virtio-drivers`
/// (`PlatformTransport::hiding`): with VIRTIO_F_RING_INDIRECT_DESC it puts
/// each request's descriptors in a table on its heap, which the Hal would
/// have to bounce through a fresh DMA page per request; without it a
/// request takes 3 of the queue's 16 descriptors, and IN_FLIGHT requests fit.
pub const HIDDEN_FEATURES: u64 = keep_virtio::RING_INDIRECT_DESC;
