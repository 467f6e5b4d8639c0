//! The network server's protocol, its demultiplexing rule and the client
//! side (docs/devices.md, "The network").  The server drives the
//! virtio-net NIC (a session from the PCI server, its DMA confined to the
//! session's domain) and switches Ethernet frames between the NIC and
//! the network stacks registered with it, each a client with an IPv4
//! address of its own (DROPS, figure 4: one driver, several stacks).
//!
//! Calls through the administrator's capability (payload 0, given to
//! whoever starts the server; from the system description, to nobody: the
//! root task asks init for it, docs/devices.md):
//!
//! | label | words | reply words | reply caps |
//! |---|---|---|---|
//! | `ADD_STACK` | IPv4 address | status, stack number | the stack's capability |
//! | `REMOVE_STACK` | stack number | status | |
//! | `STATS` | | status, frames from the NIC, frames to the NIC, frames dropped | |
//! | `DEVICE_STATS` | | status, NIC resets, DMA faults, frames the mediator refused | |
//! | `RESET_NIC` | | status, NIC resets | |
//! | `QUIT` | | status | |
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
//! A stack is registered either by `ADD_STACK` (its capability is the
//! reply's) or, for a server started from the system description, by the
//! description: a client whose line says `net=A.B.C.D` is registered with
//! that address on its first call through its name-service capability
//! (the server asks init for the grant, keep_system::grant::net), and an
//! instance of it started again later finds its registration, and the
//! frames that came meanwhile, in place.  A described client without a
//! grant, or whose address another stack has, gets `NOT_REGISTERED` or
//! `IN_USE` to every call.
//!
//! Calls through a stack's capability (a frame is a whole Ethernet frame
//! without the FCS, 14 to `MAX_FRAME` bytes, as the message's string):
//!
//! | label | words | string | reply |
//! |---|---|---|---|
//! | `INFO` | | | status, MAC address, IPv4 address, frames waiting |
//! | `SEND` | | the frame | status |
//! | `RECV` | | | status, frames still waiting; the frame as the reply's string (`EMPTY`: none) |
//! | `COUNTERS` | | | status, frames delivered to it, frames it sent, frames dropped for it (queue full) |
//! | `WAIT` | flags | | status, frames waiting: at once if a frame waits, else when one comes |
//! | `ATTACH` | | | cap: a share of a ring's dataspace; status, pages |
//! | `KICK` | | | status, frames waiting in the ring |
//! | `RING_COUNTERS` | | | status, descriptors refused, indices out of range, writes to the server's half |
//! | `NOTIFY` | bits, flags | | cap: a NOTIFICATION with `WRITE` (none: no more); status |
//!
//! A stack that attached a ring (ring.rs; docs/devices.md, "Frame rings")
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
//! `WAIT` lets a stack sleep until there is something for it instead of
//! polling `RECV`: the server keeps the call's return capability (one per
//! stack; a second `WAIT` answers the first with `OK`) and replies when a
//! frame is queued for the stack, from the NIC (whose receive interrupt,
//! an MSI-X message, wakes the server) or from another stack.  The stack
//! bounds the wait with the call's time-out (then `TIMEOUT`, and the
//! server's later reply finds the return capability used up).
//!
//! Demultiplexing ([`dest_ip`]): an IPv4 frame goes to the stack whose
//! address is its destination address, an ARP frame to the stack whose
//! address is its target address; any other frame, and one for no
//! registered address, is dropped and counted.  Frames a stack sends to
//! another stack's address are delivered to it directly (all stacks share
//! the NIC's MAC address, and the NIC does not loop frames back); the rest
//! go out through the NIC.
//!
//! Statuses: `BAD_REQUEST` for an unknown label, a missing string, a frame
//! shorter than 14 bytes or longer than `MAX_FRAME`, an IPv4 or ARP frame
//! too short for its header, another EtherType, or an address of 0 or
//! 255.255.255.255; `DENIED` for a frame whose source MAC address is not
//! the NIC's or whose source IPv4 address (ARP: sender address) is not the
//! stack's own; `NOT_REGISTERED` through the capability of a stack that was
//! removed; `IN_USE` for an address another stack has; `EMPTY` for a
//! `RECV` with nothing waiting.  A refused request changes nothing.
#![no_std]

pub mod ring;

use keep_abi::{Sender, Tag};

pub const ADD_STACK: u64 = 1;
pub const REMOVE_STACK: u64 = 2;
pub const STATS: u64 = 3;
pub const QUIT: u64 = 4;
pub const INFO: u64 = 5;
pub const SEND: u64 = 6;
pub const RECV: u64 = 7;
pub const COUNTERS: u64 = 8;
pub const WAIT: u64 = 9;
pub const ATTACH: u64 = 10;
pub const KICK: u64 = 11;
pub const RING_COUNTERS: u64 = 12;
pub const DEVICE_STATS: u64 = 13;
pub const RESET_NIC: u64 = 14;
pub const NOTIFY: u64 = 15;

pub const OK: u64 = 0;
pub const BAD_REQUEST: u64 = 1;
pub const NOT_REGISTERED: u64 = 2;
pub const DENIED: u64 = 3;
pub const IN_USE: u64 = 4;
pub const NO_RESOURCES: u64 = 5;
pub const EMPTY: u64 = 6;
pub const IO_ERROR: u64 = 7;
pub const NOT_DATASPACE: u64 = 8;

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

pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NOT_REGISTERED => "NOT_REGISTERED",
        DENIED => "DENIED",
        IN_USE => "IN_USE",
        NO_RESOURCES => "NO_RESOURCES",
        EMPTY => "EMPTY",
        IO_ERROR => "IO_ERROR",
        NOT_DATASPACE => "NOT_DATASPACE",
        _ => "?",
    }
}

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

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(s) => write!(f, "the network server says {}", status_name(*s)),
        }
    }
}

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

impl Admin {
    /// Registers a stack with address `ip`; its capability arrives at the
    /// empty slot `dest`.  Returns the stack's number.
    pub fn add_stack(self, ip: u64, dest: u64) -> Result<u64, Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        Ok(call(self.0, Tag::new(ADD_STACK).with_slots(1), [ip, 0, 0, 0])?.words[1])
    }
    pub fn remove_stack(self, n: u64) -> Result<(), Error> {
        call(self.0, Tag::new(REMOVE_STACK), [n, 0, 0, 0]).map(drop)
    }
    /// (frames from the NIC, frames to the NIC, frames dropped).
    pub fn stats(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(STATS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    /// (NIC resets, DMA faults, frames the mediator refused).
    pub fn device_stats(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(DEVICE_STATS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    /// Resets the NIC and sets it up again, as after a stop; the resets so far.
    pub fn reset_nic(self) -> Result<u64, Error> {
        Ok(call(self.0, Tag::new(RESET_NIC), [0; 4])?.words[1])
    }
    pub fn quit(self) -> Result<(), Error> {
        call(self.0, Tag::new(QUIT), [0; 4]).map(drop)
    }
}

/// A stack's capability.
#[derive(Clone, Copy)]
pub struct Stack(pub Sender);

impl Stack {
    /// (MAC address, IPv4 address, frames waiting).
    pub fn info(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(INFO), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
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
        Ok(call(self.0, Tag::new(KICK), [0; 4])?.words[1])
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
        let w = call(self.0, Tag::new(RING_COUNTERS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
    /// (frames delivered to it, frames it sent, frames dropped for it).
    pub fn counters(self) -> Result<(u64, u64, u64), Error> {
        let w = call(self.0, Tag::new(COUNTERS), [0; 4])?.words;
        Ok((w[1], w[2], w[3]))
    }
}
