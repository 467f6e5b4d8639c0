//! The PCI server's protocol and client side (docs/pci.md, "The PCI
//! server").  The server owns PCI configuration space (the ECAM window, as
//! DEVMEM) and hands each driver a session for one function: filtered
//! configuration access, its memory BARs as DEVMEM, and a DMA domain the
//! function is attached to.
//!
//! The protocol (a public capability: `LIST`, `OPEN`, `QUIT`; a session:
//! the rest) is defined in `abi/services/pci.toml`; `tools/idlgen.py`
//! generates `protocol.rs` from it and the table in docs/devices.md.
//! `OPEN` of a bridge (class 06: the host bridge, the LPC bridge) is
//! `DENIED`: its registers place the machine's memory, ports and
//! interrupts.  A released session answers `STALE`.
//!
//! The `VIRTIO_*` calls are the software DMA mediator (docs/pci.md,
//! "Software DMA mediation"): on a machine without an IOMMU the server keeps
//! a virtio function's common configuration structure (and with it every
//! queue address register) and its descriptor tables to itself, and writes
//! into the device's rings only descriptors whose every byte lies in pages
//! mapped in the session's DMA domain with the right the device needs.
//! `VIRTIO_READ`/`VIRTIO_WRITE` reach the common configuration structure
//! (offsets below 0x38): writes to `queue_size`, `queue_enable` and the
//! three queue addresses are `DENIED`; the features shown and accepted
//! exclude every ring feature (indirect descriptors, event index, packed
//! rings, ...).  `VIRTIO_QUEUE` sets a queue up (size a power of two up to
//! `MEDIATED_QUEUE`) with the driver's used ring (which must be mapped for
//! device writes): the device writes a page of the server's instead, at the
//! same offset, which the reply hands over read-only for the driver to map
//! at its used ring, so that only the device can say a chain is done;
//! `VIRTIO_SUBMIT` hands the device descriptor chains, a
//! string of `[avail flags u16, chains u16, 0 u32]` then per chain
//! `[head u16, descriptors u16, 0 u32]` and per descriptor `[address u64
//! (a device address of the domain), length u32, flags u16 (WRITE = 2,
//! NEXT = 1 ignored), 0 u16]`.  `DENIED` (word 1 the chain, word 2 the
//! address) when a byte is not mapped, or mapped without the right;
//! `BAD_REQUEST` for a malformed string; `IN_USE` for a head the device has
//! not completed (its frames are still held: `DMA_DOMAIN.HOLD`);
//! `NO_RESOURCES` when the holds do not fit; nothing is written then.  Without
//! an IOMMU `VIRTIO_*` are `NOT_FOUND` on other functions, and with one on
//! every function (`BAD_STATE` is not used: the driver asks `DMA_DOMAIN.INFO`).
//!
//! Configuration writes are filtered: a BAR may only be sized (all ones,
//! answered from the size the server found) and written back with its own
//! value; the command register keeps everything but memory decode, bus
//! mastering and INTx disable; the rest of the header (but the interrupt
//! line) and the MSI and MSI-X capabilities are read-only (`DENIED`): only
//! the server programs message addresses, with what the kernel's
//! `INTERRUPT.ROUTE_MSI` returned for this function.  `GET_BAR` refuses I/O
//! BARs and a BAR holding the MSI-X table.
//!
//! `GET_MSI(entry)`: the server takes a free MSI line (24-55), has the
//! kernel route it to this function (with interrupt remapping: a remapping
//! entry only this function's requester id may use), writes the message
//! into MSI-X table entry `entry` (unmasked) and turns MSI-X on, or, for a
//! function with MSI only, into its MSI capability (entry 0, one message).
//! The driver binds the line it gets and points the device's interrupt
//! sources at `entry` (virtio: `queue_msix_vector`).  `BAD_REQUEST` for an
//! entry beyond the table, `IN_USE` for one given already, `NOT_FOUND` for a
//! function without MSI or MSI-X, `NO_RESOURCES` when every MSI line is
//! taken.  `RELEASE` masks the entries, turns MSI and MSI-X off and unroutes
//! the lines (which drops the driver's bindings).
//!
//! `GET_IRQ`: the I/O APIC line of the function's INTx pin.  User level
//! reads no ACPI (_PRT), so this is q35's fixed routing for the slots of
//! bus 0 that take cards (1-24), as QEMU's q35 tables give it: pin x
//! (INTA = 0) of slot s goes to link E + (s + x) mod 4, and links E-H are
//! GSIs 20-23 in APIC mode (virtio-blk in slot 2: 22, measured).  Other
//! slots (q35's own functions at 25-31) answer `NOT_FOUND`.
#![cfg_attr(not(test), no_std)]

pub mod budget;

#[cfg_attr(test, allow(unused_imports))]
use keep_abi::{Sender, Tag, err};

pub mod protocol;
pub use protocol::*;

/// The largest queue the mediator sets up, and the most device-visible
/// pieces (physically contiguous runs) one chain may have.
pub const MEDIATED_QUEUE: u64 = 16;
pub const MEDIATED_PIECES: usize = 64;
/// Virtio descriptor flags (virtio 1.1, 2.6.5).
pub const DESC_NEXT: u16 = 1;
pub const DESC_WRITE: u16 = 2;
pub const DESC_INDIRECT: u16 = 4;

/// Where whoever starts a driver puts its capability to the PCI server (a
/// slot below `keep_abi::slot::FIRST_FREE` no other convention uses).
pub const PCI_SLOT: u64 = 0xc;

/// A function's source id (bus << 8 | device << 3 | function, as VT-d
/// names it), shown as bus:device.function.
pub struct SidFmt(pub u64);

impl core::fmt::Display for SidFmt {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(f, "{:02x}:{:02x}.{}", self.0 >> 8, (self.0 >> 3) & 31, self.0 & 7)
    }
}

/// The server's own capability (LIST, OPEN; QUIT for payload 0 alone):
/// payload 0, the starter's, and a described driver's sender from the
/// name service (its grant says which functions it may open).
pub fn public(p: u64) -> bool {
    p == 0 || keep_system::names::client_of(p).is_some()
}

/// A session's capability: every other payload (a function's index + 1 in
/// bits 0-15, the session's generation above), which the server checks
/// is live (else STALE) before the request's label.
pub fn session(p: u64) -> bool {
    !public(p)
}

pub fn sid_string(sid: u64) -> SidFmt {
    SidFmt(sid)
}

/// An error: the call failed (a kernel error) or the server refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Call(keep_abi::Error),
    Status(u64),
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        match self {
            Error::Call(e) => write!(f, "the call failed: {e}"),
            Error::Status(s) => write!(f, "the PCI server says {}", status_name(*s)),
        }
    }
}

#[cfg(not(test))]
fn call(s: Sender, label: u64, words: [u64; 4], caps: u64) -> Result<[u64; 4], Error> {
    let m = s.call(Tag::new(label).with_slots(caps), words);
    if m.err != err::OK {
        return Err(Error::Call(keep_abi::Error(m.err)));
    }
    match m.words[0] {
        OK => Ok(m.words),
        st => Err(Error::Status(st)),
    }
}

/// One entry of LIST.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FunctionInfo {
    pub sid: u64,
    pub vendor: u16,
    pub device: u16,
    pub class: u32,
}

/// The server's public capability.
#[derive(Clone, Copy)]
pub struct Pci(pub Sender);

#[cfg(not(test))]
impl Pci {
    /// Function `index` or later: its description and the next index.
    pub fn list(self, index: u64) -> Result<(FunctionInfo, u64), Error> {
        let w = call(self.0, LIST, [index, 0, 0, 0], 0)?;
        let info = FunctionInfo { sid: w[2], vendor: w[3] as u16, device: (w[3] >> 16) as u16, class: (w[3] >> 32) as u32 };
        Ok((info, w[1]))
    }

    /// Opens function `instance` (0 the first) with this vendor and device
    /// ID: the session arrives at `session`, the DMA domain at `domain`
    /// (two empty slots).  Returns its sid.
    pub fn open(self, vendor: u16, device: u16, instance: u64, session: u64, domain: u64) -> Result<u64, Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[session, domain]);
        let w = call(self.0, OPEN, [vendor as u64 | (device as u64) << 16, instance, 0, 0], 2)?;
        Ok(w[1])
    }

    pub fn quit(self) -> Result<(), Error> {
        call(self.0, QUIT, [0; 4], 0).map(drop)
    }
}

/// A driver's session: one function.
#[derive(Clone, Copy)]
pub struct Session(pub Sender);

#[cfg(not(test))]
impl Session {
    pub fn config_read(self, offset: u64) -> Result<u32, Error> {
        Ok(call(self.0, CONFIG_READ, [offset, 0, 0, 0], 0)?[1] as u32)
    }
    pub fn config_write(self, offset: u64, value: u32) -> Result<(), Error> {
        call(self.0, CONFIG_WRITE, [offset, value as u64, 0, 0], 0).map(drop)
    }
    /// BAR `index` as DEVMEM at `dest`: (physical base, size in bytes).
    pub fn bar(self, index: u64, dest: u64) -> Result<(u64, u64), Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        let w = call(self.0, GET_BAR, [index, 0, 0, 0], 1)?;
        Ok((w[1], w[2]))
    }
    /// The function's interrupt line as an INTERRUPT capability at `dest`;
    /// returns the line.
    pub fn irq(self, dest: u64) -> Result<u64, Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        Ok(call(self.0, GET_IRQ, [0; 4], 1)?[1])
    }
    /// MSI-X table entry `entry` (or the MSI message, entry 0) routed to an
    /// MSI line; its INTERRUPT capability at `dest`.  Returns (line,
    /// message address, message data).
    pub fn msi(self, entry: u64, dest: u64) -> Result<(u64, u64, u64), Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        let w = call(self.0, GET_MSI, [entry, 0, 0, 0], 1)?;
        Ok((w[1], w[2], w[3]))
    }
    pub fn release(self) -> Result<(), Error> {
        call(self.0, RELEASE, [0; 4], 0).map(drop)
    }
    /// The mediator: a register of the common configuration structure.
    pub fn virtio_read(self, offset: u64, width: u64) -> Result<u64, Error> {
        Ok(call(self.0, VIRTIO_READ, [offset, width, 0, 0], 0)?[1])
    }
    pub fn virtio_write(self, offset: u64, width: u64, value: u64) -> Result<(), Error> {
        call(self.0, VIRTIO_WRITE, [offset, width, value, 0], 0).map(drop)
    }
    /// The mediator: queue `queue` of `size` entries, the used ring at
    /// device address `used`; the read-only PAGE the device writes the used
    /// ring into comes to `dest`.
    pub fn virtio_queue(self, queue: u64, size: u64, used: u64, dest: u64) -> Result<(), Error> {
        keep_rt::ipc_buffer().set_recv_slots(&[dest]);
        call(self.0, VIRTIO_QUEUE, [queue, size, used, 0], 1).map(drop)
    }
    /// The mediator: the chains encoded in `string` (format above) onto
    /// queue `queue`.  Err(Status(DENIED)) names the chain and the address
    /// in `refused`.
    pub fn virtio_submit(self, queue: u64, string: &[u8], refused: &mut (u64, u64)) -> Result<(), Error> {
        keep_rt::ipc_buffer().set_string(string);
        let m = self.0.call(Tag::new(VIRTIO_SUBMIT).with_string(), [queue, 0, 0, 0]);
        if m.err != err::OK {
            return Err(Error::Call(keep_abi::Error(m.err)));
        }
        match m.words[0] {
            OK => Ok(()),
            st => {
                *refused = (m.words[1], m.words[2]);
                Err(Error::Status(st))
            }
        }
    }
    /// The mediator: (chains published, chains refused) in this session.
    pub fn virtio_stats(self) -> Result<(u64, u64), Error> {
        let w = call(self.0, VIRTIO_STATS, [0; 4], 0)?;
        Ok((w[1], w[2]))
    }
}

#[cfg(test)]
mod dispatch_tests {
    extern crate std;
    use super::*;
    use keep_abi::proto::Answer;
    use keep_abi::{Msg, Tag};
    use std::vec::Vec;

    /// A handler that records which method `dispatch` called.
    #[derive(Default)]
    struct Record(Vec<(u64, [u64; 4])>);

    impl Record {
        fn got(&mut self, label: u64, w: [u64; 4]) -> Answer {
            self.0.push((label, w));
            Answer::value(label)
        }
    }

    impl Handler for Record {
        fn list(&mut self, _: &Msg, a: u64) -> Answer { self.got(LIST, [a, 0, 0, 0]) }
        fn open(&mut self, _: &Msg, a: u64, b: u64) -> Answer { self.got(OPEN, [a, b, 0, 0]) }
        fn quit(&mut self, _: &Msg) -> Answer { self.got(QUIT, [0; 4]) }
        fn config_read(&mut self, _: &Msg, a: u64) -> Answer { self.got(CONFIG_READ, [a, 0, 0, 0]) }
        fn config_write(&mut self, _: &Msg, a: u64, b: u64) -> Answer { self.got(CONFIG_WRITE, [a, b, 0, 0]) }
        fn get_bar(&mut self, _: &Msg, a: u64) -> Answer { self.got(GET_BAR, [a, 0, 0, 0]) }
        fn release(&mut self, _: &Msg) -> Answer { self.got(RELEASE, [0; 4]) }
        fn get_irq(&mut self, _: &Msg) -> Answer { self.got(GET_IRQ, [0; 4]) }
        fn get_msi(&mut self, _: &Msg, a: u64) -> Answer { self.got(GET_MSI, [a, 0, 0, 0]) }
        fn virtio_read(&mut self, _: &Msg, a: u64, b: u64) -> Answer { self.got(VIRTIO_READ, [a, b, 0, 0]) }
        fn virtio_write(&mut self, _: &Msg, a: u64, b: u64, c: u64) -> Answer { self.got(VIRTIO_WRITE, [a, b, c, 0]) }
        fn virtio_queue(&mut self, _: &Msg, a: u64, b: u64, c: u64) -> Answer { self.got(VIRTIO_QUEUE, [a, b, c, 0]) }
        fn virtio_submit(&mut self, _: &Msg, a: u64) -> Answer { self.got(VIRTIO_SUBMIT, [a, 0, 0, 0]) }
        fn virtio_stats(&mut self, _: &Msg) -> Answer { self.got(VIRTIO_STATS, [0; 4]) }
    }

    fn msg(label: u64, payload: u64) -> Msg {
        Msg { err: 0, tag: Tag::new(label), payload, words: [31, 32, 33, 34] }
    }

    /// LIST and OPEN come through payload 0 and a described driver's
    /// sender, QUIT through payload 0 alone, a session's requests through
    /// a session; each reaches its method with its words, the rest is
    /// BAD_REQUEST before any method runs.
    #[test]
    fn each_interface_reaches_its_methods_only() {
        let (described, s) = (keep_system::names::CLIENT | 2, 3 << 16 | 1);
        let session_labels = [CONFIG_READ, CONFIG_WRITE, GET_BAR, RELEASE, GET_IRQ, GET_MSI, VIRTIO_READ,
                              VIRTIO_WRITE, VIRTIO_QUEUE, VIRTIO_SUBMIT, VIRTIO_STATS];
        let mut h = Record::default();
        let mut served = std::vec![(LIST, 0), (LIST, described), (OPEN, 0), (OPEN, described), (QUIT, 0)];
        served.extend(session_labels.iter().map(|&l| (l, s)));
        for &(label, p) in &served {
            assert_eq!(dispatch(&mut h, &msg(label, p)).words(), [OK, label, 0, 0], "{label} {p:#x}");
        }
        assert_eq!(h.0[2], (OPEN, [31, 32, 0, 0]));
        assert!(h.0.contains(&(VIRTIO_WRITE, [31, 32, 33, 0])));
        let n = h.0.len();
        for (label, p) in [(QUIT, described), (QUIT, s), (LIST, s), (OPEN, s), (CONFIG_READ, 0),
                           (GET_BAR, described), (0, 0), (15, s), (u64::MAX >> 16, described)] {
            assert_eq!(dispatch(&mut h, &msg(label, p)).words(), [BAD_REQUEST, 0, 0, 0], "{label} {p:#x}");
        }
        assert_eq!(h.0.len(), n, "a refused request reaches no method");
    }
}
