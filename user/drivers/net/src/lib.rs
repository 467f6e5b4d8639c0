//! The network server's protocol, its demultiplexing rule and the client
//! side (docs/network.md, "The network").  The server drives the
//! virtio-net NIC (a session from the PCI server, its DMA confined to the
//! session's domain) and switches Ethernet frames between the NIC and
//! the network stacks registered with it, each a client with an IPv4
//! address of its own (DROPS, figure 4: one driver, several stacks).
//!
//! The protocol is defined in `abi/services/net.toml`; `tools/idlgen.py`
//! generates from it `protocol.rs` (labels, statuses, `serves`, the
//! client [`Stub`]) and the table in docs/devices.md.  [`Admin`] and
//! [`Stack`] are the client side, the calls with strings, capabilities
//! or a time-out included.
//!
//! **A NIC that stops** (docs/devices.md, "When the device stops"): a
//! stack that takes its ring's pages away while a frame of it waits for
//! the NIC makes the NIC fault (with an IOMMU; a NIC that stops there
//! says it needs a reset, QEMU's goes on), and a frame the mediator
//! refused (without one) keeps its descriptors.  The server then resets a
//! NIC that stopped and sets it up again; the frames that were
//! on it are sent again, but those of rings no longer pinned, which are
//! dropped (and the ring let go of, as when its pages go).  `RESET_NIC`
//! has the server do the same now, as if the NIC had stopped.
//!
//! A stack that attached a ring (ring.rs; docs/network.md, "Frame rings")
//! gets its frames there and submits them there: no message carries a
//! frame, `KICK` says that frames wait in an empty `TX_SUBMIT`, and
//! `WAIT` takes them too and (flag `WAIT_TX`) also ends when transmit
//! buffers come back.  `NOT_DATASPACE` for an `ATTACH` of anything but a
//! dataspace of the server's manager; `BAD_REQUEST` for a ring of fewer
//! than 2 or more than 65 pages, and for `KICK` or `WAIT` while one of the
//! ring's indices is out of range; `DENIED` for a share without `WRITE`.
//!
//! `NOTIFY` lets a stack wait for its frames without a call: the server
//! keeps the notification (one per stack, replacing the last; kept across
//! a new ring, dropped when init says the client ended) and signals it
//! with `bits` each time it has put frames in for the stack (in the ring's
//! `RX_DONE` or the message queue) and, flag `WAIT_TX`, given transmit
//! buffers back in `TX_DONE`: once per batch, never for frames the stack
//! was already told of.  The stack binds the notification to itself and
//! gets the bits in its own receive (docs/kernel-manual.md,
//! "Notification").  `BAD_REQUEST` for bits 0 or unknown flags, `DENIED`
//! for a capability that is not a notification with `WRITE`.
//!
//! Demultiplexing ([`dest_ip`]) and the frame checks ([`src_ip`],
//! [`MAX_FRAME`]) are described with the protocol in docs/devices.md.
#![cfg_attr(not(test), no_std)]

pub mod ring;
pub mod rules;

#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{Sender, Tag};

pub mod protocol;
pub use protocol::*;

/// `WAIT`'s word 0: also answer when the server gives transmit buffers back.
pub const WAIT_TX: u64 = 1;

/// The largest frame: 1500 bytes of payload and the Ethernet header.
pub const MAX_FRAME: usize = 1514;
pub const ETH_HEADER: usize = 14;
pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// Frames the server keeps for a stack that has not fetched them.
pub const QUEUE_FRAMES: usize = 64;
/// Stacks one server serves.
pub const MAX_STACKS: usize = 8;

/// Where a network stack started by hand (ktest, the benchmarks) finds its
/// capability to the server; one started from the system description
/// finds the name service in slot 0xd instead and looks the server up as
/// `net` (its address is its grant, `net=A.B.C.D`).
pub const NET_SLOT: u64 = 0xf;

/// a.b.c.d as the number the protocol uses (a in bits 24-31).
pub const fn ipv4(a: u8, b: u8, c: u8, d: u8) -> u64 {
    (a as u64) << 24 | (b as u64) << 16 | (c as u64) << 8 | d as u64
}

fn be32(b: &[u8]) -> u64 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]]) as u64
}

pub fn ethertype(frame: &[u8]) -> Option<u16> {
    (frame.len() >= ETH_HEADER).then(|| u16::from_be_bytes([frame[12], frame[13]]))
}

/// The address a frame is for: IPv4's destination, ARP's target; None for
/// other frames and frames too short for their header.
pub fn dest_ip(frame: &[u8]) -> Option<u64> {
    match ethertype(frame)? {
        ETHERTYPE_IPV4 if frame.len() >= ETH_HEADER + 20 => Some(be32(&frame[30..34])),
        ETHERTYPE_ARP if frame.len() >= ETH_HEADER + 28 => Some(be32(&frame[38..42])),
        _ => None,
    }
}

/// The address a frame is from: IPv4's source, ARP's sender.
pub fn src_ip(frame: &[u8]) -> Option<u64> {
    match ethertype(frame)? {
        ETHERTYPE_IPV4 if frame.len() >= ETH_HEADER + 20 => Some(be32(&frame[26..30])),
        ETHERTYPE_ARP if frame.len() >= ETH_HEADER + 28 => Some(be32(&frame[28..32])),
        _ => None,
    }
}

/// A MAC address in the protocol's words: byte 0 in bits 40-47.
pub fn mac_word(mac: &[u8]) -> u64 {
    mac[..6].iter().fold(0, |w, &b| w << 8 | b as u64)
}

pub fn mac_bytes(w: u64) -> [u8; 6] {
    let b = w.to_be_bytes();
    [b[2], b[3], b[4], b[5], b[6], b[7]]
}

/// A dotted address for messages.
pub struct Ip(pub u64);

impl core::fmt::Display for Ip {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        let b = (self.0 as u32).to_be_bytes();
        write!(f, "{}.{}.{}.{}", b[0], b[1], b[2], b[3])
    }
}

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

impl From<Refused> for Error {
    fn from(r: Refused) -> Error {
        match r {
            Refused::Call(e) => Error::Call(e),
            Refused::Status(s) => Error::Status(s),
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(s) => write!(f, "the network server says {}", status_name(*s)),
        }
    }
}

#[cfg(not(test))]
fn call(s: Sender, tag: Tag, words: [u64; 4]) -> Result<keep_abi::Msg, Error> {
    let m = s.call(tag, words);
    if m.err != keep_abi::err::OK {
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
    /// Registers a stack with address `ip`; its capability arrives at the
    /// empty slot `dest`.  Returns the stack's number.
    pub fn add_stack(self, ip: u64, dest: u64) -> Result<u64, Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        Ok(call(self.0, Tag::new(ADD_STACK).with_slots(1), [ip, 0, 0, 0])?.words[1])
    }
    pub fn remove_stack(self, n: u64) -> Result<(), Error> {
        Ok(Stub(self.0).remove_stack(n)?)
    }
    /// (frames from the NIC, frames to the NIC, frames dropped).
    pub fn stats(self) -> Result<(u64, u64, u64), Error> {
        Ok(Stub(self.0).stats()?)
    }
    /// (NIC resets, DMA faults, frames the mediator refused).
    pub fn device_stats(self) -> Result<(u64, u64, u64), Error> {
        Ok(Stub(self.0).device_stats()?)
    }
    /// Resets the NIC and sets it up again, as after a stop; the resets so far.
    pub fn reset_nic(self) -> Result<u64, Error> {
        Ok(Stub(self.0).reset_nic()?)
    }
    pub fn quit(self) -> Result<(), Error> {
        Ok(Stub(self.0).quit()?)
    }
}

/// A stack's capability.
#[derive(Clone, Copy)]
pub struct Stack(pub Sender);

#[cfg(not(test))]
impl Stack {
    /// (MAC address, IPv4 address, frames waiting).
    pub fn info(self) -> Result<(u64, u64, u64), Error> {
        Ok(Stub(self.0).info()?)
    }
    pub fn send(self, frame: &[u8]) -> Result<(), Error> {
        keep_rt::ipc_buffer().set_string(frame);
        call(self.0, Tag::new(SEND).with_string(), [0; 4]).map(drop)
    }
    /// The next frame for this stack into `buf` (at least MAX_FRAME bytes):
    /// Some((length, frames still waiting)), or None if nothing waits.
    pub fn recv(self, buf: &mut [u8]) -> Result<Option<(usize, u64)>, Error> {
        match call(self.0, Tag::new(RECV), [0; 4]) {
            Ok(m) => Ok(Some((keep_rt::ipc_buffer().read_string(buf), m.words[1]))),
            Err(Error::Status(EMPTY)) => Ok(None),
            Err(e) => Err(e),
        }
    }
    /// Waits at most `timeout_ms` (1 or more) until a frame waits for this
    /// stack; returns how many wait (0 after the time-out).
    pub fn wait(self, timeout_ms: u64) -> Result<u64, Error> {
        let m = keep_abi::ipc(self.0.0, Tag::new(WAIT).with_mode(keep_abi::tag::MODE_CALL), [0; 4], timeout_ms);
        match m.err {
            keep_abi::err::OK if m.words[0] == OK => Ok(m.words[1]),
            keep_abi::err::OK => Err(Error::Status(m.words[0])),
            keep_abi::err::TIMEOUT => Ok(0),
            e => Err(Error::Call(keep_abi::Error(e))),
        }
    }
    /// Attaches the ring in the dataspace `ds` (a share of it with READ
    /// and WRITE, of the server's dataspace manager; ring.rs has the
    /// layout): from now on this stack's frames come and go there.
    /// Returns the dataspace's pages.
    pub fn attach(self, ds: u64) -> Result<u64, Error> {
        let n = keep_rt::ipc_buffer().set_send_caps(&[(ds, 0)]);
        Ok(call(self.0, Tag::new(ATTACH).with_caps(n), [0; 4])?.words[1])
    }
    /// Has the server signal the NOTIFICATION at `n` with `bits` whenever
    /// frames come for this stack (and, `flags` WAIT_TX, transmit buffers
    /// come back); `n` None: no more.
    pub fn notify(self, n: Option<u64>, bits: u64, flags: u64) -> Result<(), Error> {
        let caps = match n {
            Some(n) => keep_rt::ipc_buffer().set_send_caps(&[(n, 0)]),
            None => 0,
        };
        call(self.0, Tag::new(NOTIFY).with_caps(caps), [bits, flags, 0, 0]).map(drop)
    }
    /// Tells the server of frames in the ring's `TX_SUBMIT`; returns the
    /// frames waiting in `RX_DONE`.
    pub fn kick(self) -> Result<u64, Error> {
        Ok(Stub(self.0).kick()?)
    }
    /// `WAIT` for a stack with a ring: takes its submitted frames first;
    /// `flags` WAIT_TX also ends it when transmit buffers come back.
    pub fn wait_ring(self, timeout_ms: u64, flags: u64) -> Result<u64, Error> {
        let m = keep_abi::ipc(self.0.0, Tag::new(WAIT).with_mode(keep_abi::tag::MODE_CALL), [flags, 0, 0, 0], timeout_ms);
        match m.err {
            keep_abi::err::OK if m.words[0] == OK => Ok(m.words[1]),
            keep_abi::err::OK => Err(Error::Status(m.words[0])),
            keep_abi::err::TIMEOUT => Ok(0),
            e => Err(Error::Call(keep_abi::Error(e))),
        }
    }
    /// The ring's refusals: (descriptors refused, queue indices out of
    /// range, writes to the server's half seen).  Frames dropped for want
    /// of a receive buffer count in `COUNTERS`' dropped.
    pub fn ring_counters(self) -> Result<(u64, u64, u64), Error> {
        Ok(Stub(self.0).ring_counters()?)
    }
    /// (frames delivered to it, frames it sent, frames dropped for it).
    pub fn counters(self) -> Result<(u64, u64, u64), Error> {
        Ok(Stub(self.0).counters()?)
    }
}
