//! The block server's protocol and client side (docs/block.md, "The
//! block server").  The server drives the virtio-blk disk (a session from
//! the PCI server, its DMA confined to the session's domain) and serves
//! clients, each confined to its own range of sectors with its own rights.
//!
//! The protocol (the administrator's capability, payload 0: `ADD_CLIENT`,
//! `STATS`, `QUEUE_STATS`, `CLIENT`, `DEVICE_STATS`, `QUIT`; a client's:
//! the rest) is defined in `abi/services/blk.toml`; `tools/idlgen.py`
//! generates `protocol.rs` from it and the tables in docs/block.md.
//!
//! From init (payload `names::NOTICE`, a description's `notify`): `GONE`
//! with word 0 the ended client's payload; the server lets go of that
//! client's buffers at once (one with a request on the device when it
//! ends), drops the entries of its batches not yet started, and answers
//! `OK` (any other label: `BAD_REQUEST`).  A client that sends `GONE`
//! sends it with its own payload and gets `BAD_REQUEST`.
//!
//! Calls through a client's capability (sector numbers count from the
//! start of its range).  Bulk data goes through a **dataspace** the client
//! shares with the server (docs/dataspaces.md): `ATTACH` it once (the
//! server pins it into its DMA domain), then `READ_DS`/`WRITE_DS` move up
//! to `MAX_DS_SECTORS` sectors between the disk and the dataspace's pages
//! directly, the device doing the copying.  `READ`/`WRITE` move 1 to
//! `MAX_SECTORS` sectors of 512 bytes as the message's string instead.
//!
//! **Batches** (`READ_DS_V`, `WRITE_DS_V`): 1 to `MAX_BATCH` entries of
//! (sector, byte offset, count), each what one `READ_DS`/`WRITE_DS` of the
//! same buffer would be, in one call and one reply; the server puts up to
//! `IN_FLIGHT` of them on the device at once and answers when all are
//! done.  Every entry is checked before any is started (all or nothing):
//! a refused batch is answered with the first bad entry's status and its
//! index (`u64::MAX` for what concerns the whole batch: the entry count,
//! the string's length, the buffer), and nothing is read or written.
//! Once started, each entry gets its own status; the reply's status is
//! the first that is not `OK` (only `IO_ERROR`, or `BAD_BUFFER` for a
//! share revoked meanwhile: the entries not started then are not done),
//! its index, and how many entries completed; when that status is not
//! `OK` the reply's string holds one status byte per entry.  Entries of
//! one batch may complete in any order: a batch whose entries overlap on
//! the disk or in the buffer gets one of them in each byte, unspecified.
//!
//! **Request rings** (`RING`, `RING_END`, `KICK`; [`ring`], [`Ring`]):
//! requests posted as descriptors in a page of an attached buffer and
//! completions posted back there, a `KICK` message when the server waits
//! and the client's notification signalled when the completion it asked
//! for is posted; every descriptor checked as a batch entry, a bad one
//! completed with its status.
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
//! `NO_RESOURCES` when the server's tables are full or an `ATTACH` would
//! give the client more than [`limits::PER_CLIENT`] buffers; `IO_ERROR` when the
//! device failed the request.  Nothing is read or written then.
//!
//! **A device that stops** (docs/devices.md, "When the device stops"): a
//! DMA fault (a client's pages unpinned while a request on them was
//! queued: the device stops at the fault until it is reset), a submission
//! the mediator refused, or 2 s without a completion while requests are on
//! the device make the server reset the device and set it up again; every
//! request that was on it starts again (reads and writes can be repeated)
//! but those whose buffer is no longer pinned, which end `BAD_BUFFER` with
//! the rest of their batch.  After three resets in a row that completed
//! nothing, what was on the device ends `IO_ERROR` instead.
//!
//! A write is acknowledged (its reply sent) only after the device
//! completed it; `FLUSH` waits for every request on the device, then has
//! the device write its cache back.
#![cfg_attr(not(test), no_std)]

pub mod limits;
pub mod rules;
pub mod ring;

#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{Sender, Tag, err, rights};

pub mod protocol;
pub use protocol::*;

pub const SECTOR: usize = 512;
/// Sectors one request moves: one message string (MAX_STRING bytes).
pub const MAX_SECTORS: u64 = 8;
/// Sectors one READ_DS or WRITE_DS moves at most (128 KiB).
pub const MAX_DS_SECTORS: u64 = 256;
/// Pages of a dataspace the server attaches at most (2 MiB).
pub const MAX_BUFFER_PAGES: u64 = 512;
/// Entries a READ_DS_V or WRITE_DS_V carries at most (2 KiB of string).
pub const MAX_BATCH: usize = 128;
/// `READ_DS_V`/`WRITE_DS_V` reply word 1 for a refusal of the whole batch.
pub const WHOLE_BATCH: u64 = u64::MAX;

/// One entry of a batch: `count` sectors from `sector` (of the client's
/// range), to or from the buffer's bytes at `offset`.  On the wire: sector
/// u64, offset u32, count u32, little-endian (16 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub sector: u64,
    pub offset: u32,
    pub count: u32,
}

impl Entry {
    pub const BYTES: usize = 16;

    pub fn encode(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.sector.to_le_bytes());
        out[8..12].copy_from_slice(&self.offset.to_le_bytes());
        out[12..16].copy_from_slice(&self.count.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Entry {
        Entry {
            sector: u64::from_le_bytes(b[..8].try_into().unwrap()),
            offset: u32::from_le_bytes(b[8..12].try_into().unwrap()),
            count: u32::from_le_bytes(b[12..16].try_into().unwrap()),
        }
    }
}

/// A batch that failed: why, and which entry (None: the whole batch, or
/// the call itself).  `done` entries completed (a refused batch: 0).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchError {
    pub error: Error,
    pub entry: Option<u64>,
    pub done: u64,
    /// The reply carried each entry's status ([`Client::entry_statuses`]).
    pub statuses: bool,
}

impl core::fmt::Display for BatchError {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self.entry {
            Some(e) => write!(f, "entry {e}: {} ({} entries done)", self.error, self.done),
            None => write!(f, "{} ({} entries done)", self.error, self.done),
        }
    }
}

/// Requests on the device at once (each takes 3 of the queue's 16 descriptors).
pub const IN_FLIGHT: usize = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Call(keep_abi::Error),
    Status(u64),
}

impl Error {
    /// An ATTACH refused because its share names no dataspace the
    /// server's manager knows: the server says NOT_DATASPACE, or the
    /// kernel refuses the call because the share is a stale capability
    /// (the manager that made it has ended).  Either way the client makes
    /// a new dataspace from the manager that runs now.
    pub fn share_gone(&self) -> bool {
        match self {
            Error::Status(s) => *s == NOT_DATASPACE,
            Error::Call(e) => *e == keep_abi::Error::STALE,
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(s) => write!(f, "the block server says {}", status_name(*s)),
        }
    }
}

#[cfg(not(test))]
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

#[cfg(not(test))]
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
    /// (device resets, requests started again after one, submissions the
    /// mediator refused).
    pub fn device_stats(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(DEVICE_STATS), [0; 4])?.words;
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
            let_go: if buf.received_len() >= 64 { word(7) } else { 0 },
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
    /// Its buffers the server let go when init said it ended (`notify`).
    pub let_go: u64,
}

/// A client's capability.
#[derive(Clone, Copy)]
pub struct Client(pub Sender);

#[cfg(not(test))]
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
    /// Reads every entry's sectors into the buffer (`READ_DS_V`); returns
    /// when all are there.  On an error after the batch started,
    /// [`Client::entry_statuses`] tells each entry's status.
    pub fn read_ds_v(self, buffer: u64, entries: &[Entry]) -> Result<(), BatchError> {
        self.batch(READ_DS_V, buffer, entries)
    }
    /// Writes every entry's sectors from the buffer (`WRITE_DS_V`); returns
    /// when the device has them all.
    pub fn write_ds_v(self, buffer: u64, entries: &[Entry]) -> Result<(), BatchError> {
        self.batch(WRITE_DS_V, buffer, entries)
    }
    /// A batch call with `entries` as its string (at most MAX_STRING bytes
    /// are sent: more entries than fit are cut off, and the server says so).
    pub fn batch(self, label: u64, buffer: u64, entries: &[Entry]) -> Result<(), BatchError> {
        let buf = keep_rt::ipc_buffer();
        let n = entries.len().min(keep_abi::layout::MAX_STRING as usize / Entry::BYTES);
        for (i, e) in entries[..n].iter().enumerate() {
            e.encode(&mut buf.string[i * Entry::BYTES..]);
        }
        buf.send_len = (n * Entry::BYTES) as u64;
        self.batch_raw(label, buffer, entries.len() as u64)
    }
    /// The call with whatever string the IPC buffer holds (tests send
    /// malformed ones).
    pub fn batch_raw(self, label: u64, buffer: u64, entries: u64) -> Result<(), BatchError> {
        let m = self.0.call(Tag::new(label).with_string(), [buffer, entries, 0, 0]);
        if m.err != err::OK {
            return Err(BatchError { error: Error::Call(keep_abi::Error(m.err)), entry: None, done: 0, statuses: false });
        }
        match m.words[0] {
            OK => Ok(()),
            st => Err(BatchError {
                error: Error::Status(st),
                entry: (m.words[1] != WHOLE_BATCH).then_some(m.words[1]),
                done: m.words[2],
                statuses: m.tag.has_string(),
            }),
        }
    }
    /// Right after a batch whose error has `statuses`: each entry's status
    /// byte, from the reply's string, into `out`; returns how many.
    pub fn entry_statuses(out: &mut [u8]) -> usize {
        keep_rt::ipc_buffer().read_string(out)
    }
}

/// The bit the server signals a ring's notification with.
pub const RING_BIT: u64 = 1;

/// The client's side of a request ring (`RING`; [`ring`] has the layout;
/// docs/block.md, "Request rings").  Requests are posted into the page
/// and handed over by [`Ring::submit`], which sends `KICK` only when the
/// server said it waits (`IDLE`); completions are taken from the page, and
/// [`Ring::wait`] waits on the notification, which the server signals when
/// the completion the client asked for (`WAKE_AT`) is posted.
#[cfg(not(test))]
pub struct Ring {
    pub client: Client,
    va: u64,
    pub note: u64,
    /// Requests posted (REQ_HEAD), completions taken (CPL_TAIL).
    head: u32,
    tail: u32,
}

#[cfg(not(test))]
impl Ring {
    /// Sets the ring up in the page at byte `offset` (a multiple of 4096)
    /// of `buffer`, an attached buffer shared read-write whose page the
    /// client has mapped at `va`; `note` is a notification of the client's
    /// (the server is given a copy and signals it with [`RING_BIT`]).
    pub fn set_up(client: Client, buffer: u64, offset: u64, va: u64, note: u64) -> Result<Ring, Error> {
        let n = keep_rt::ipc_buffer().set_send_caps(&[(note, 0)]);
        call(client.0, Tag::new(RING).with_caps(n), [buffer, offset, 0, 0])?;
        Ok(Ring { client, va, note, head: 0, tail: 0 })
    }

    /// Requests posted whose completions are not yet taken.
    pub fn outstanding(&self) -> u32 {
        self.head.wrapping_sub(self.tail)
    }

    /// Writes a request into the ring (handed over at the next
    /// [`Ring::submit`]); false when the ring is full.
    pub fn post(&mut self, d: &ring::Desc) -> bool {
        if self.outstanding() >= ring::ENTRIES {
            return false;
        }
        let at = self.va + ring::REQS + (self.head % ring::ENTRIES) as u64 * ring::REQ_BYTES;
        for (k, w) in d.encode().iter().enumerate() {
            // SAFETY: the ring's page is mapped read-write at va.
            unsafe { core::ptr::write_volatile((at + 8 * k as u64) as *mut u64, *w) };
        }
        self.head = self.head.wrapping_add(1);
        true
    }

    /// Hands the requests posted to the server: REQ_HEAD, and a KICK if
    /// the server waits.
    pub fn submit(&mut self) -> Result<(), Error> {
        use core::sync::atomic::{Ordering, fence};
        fence(Ordering::Release);
        // SAFETY: as in post.
        let idle = unsafe {
            core::ptr::write_volatile((self.va + ring::REQ_HEAD) as *mut u32, self.head);
            fence(Ordering::SeqCst);
            core::ptr::read_volatile((self.va + ring::IDLE) as *const u32)
        };
        if idle != 0 { self.kick() } else { Ok(()) }
    }

    /// KICK, sent (no reply).
    pub fn kick(&self) -> Result<(), Error> {
        self.client.0.send(Tag::new(KICK), [0; 4]).map_err(Error::Call)
    }

    /// Takes every completion posted, giving `f` each (id, status);
    /// returns how many.
    pub fn take(&mut self, mut f: impl FnMut(u64, u64)) -> u32 {
        use core::ptr::read_volatile;
        use core::sync::atomic::{Ordering, fence};
        // SAFETY: as in post.
        let head = unsafe { read_volatile((self.va + ring::CPL_HEAD) as *const u32) };
        fence(Ordering::Acquire);
        let mut n = 0;
        // More than were posted: the server's index is not to be believed.
        let ready = head.wrapping_sub(self.tail).min(self.outstanding());
        while n < ready {
            let at = self.va + ring::CPLS + (self.tail % ring::ENTRIES) as u64 * ring::CPL_BYTES;
            // SAFETY: as in post.
            let (id, st) = unsafe { (read_volatile(at as *const u64), read_volatile((at + 8) as *const u64)) };
            f(id, st);
            self.tail = self.tail.wrapping_add(1);
            n += 1;
        }
        if n > 0 {
            // SAFETY: as in post.
            unsafe { core::ptr::write_volatile((self.va + ring::CPL_TAIL) as *mut u32, self.tail) };
        }
        n
    }

    /// Takes completions until `count` were taken, waiting on the
    /// notification between (`f` as for [`Ring::take`]).  Err: the
    /// notification's WAIT failed, or a KICK to let the server go on
    /// (requests waited for room in the completion queue) did.
    pub fn wait(&mut self, count: u32, mut f: impl FnMut(u64, u64)) -> Result<(), Error> {
        use core::sync::atomic::{Ordering, fence};
        let mut got = 0;
        loop {
            let n = self.take(&mut f);
            got += n;
            if n > 0 && self.head != self.tail {
                // Room came: a server that waits is told.
                // SAFETY: as in post.
                if unsafe { core::ptr::read_volatile((self.va + ring::IDLE) as *const u32) } != 0 {
                    self.kick()?;
                }
            }
            if got >= count {
                return Ok(());
            }
            // SAFETY: as in post.
            let head = unsafe {
                core::ptr::write_volatile((self.va + ring::WAKE_AT) as *mut u32, self.tail.wrapping_add(count - got));
                fence(Ordering::SeqCst);
                core::ptr::read_volatile((self.va + ring::CPL_HEAD) as *const u32)
            };
            if head != self.tail {
                continue;
            }
            keep_abi::Notification(self.note).wait().map_err(Error::Call)?;
        }
    }

    /// RING_END: the server lets go of the ring (the client keeps its
    /// notification and buffer).
    pub fn end(self) -> Result<(), Error> {
        call(self.client.0, Tag::new(RING_END), [0; 4]).map(drop)
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
#[cfg(not(test))]
pub const HIDDEN_FEATURES: u64 = keep_virtio::RING_INDIRECT_DESC;
