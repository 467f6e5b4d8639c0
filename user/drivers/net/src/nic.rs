//! The NIC: a virtio-net driver over `virtio-drivers`' `VirtQueue` (its
//! split virtqueues, with the Hal doing the device addresses), receive
//! buffers the server made once and frames sent from where they lie.
//!
//! Receiving: 16 buffers of 2 KiB at fixed device addresses, each handed
//! back to the device as soon as its frame was copied out (once, into the
//! stack's ring or queue: the server learns whose a frame is only after
//! the device wrote it, so the device cannot write into a stack's pages).
//!
//! Sending does not wait for the device.  A frame goes as one or two
//! descriptors: the virtio-net header and the frame's first `HEAD` bytes
//! copied into a head slot of the server's own (so the addresses the
//! server checked are the ones the device reads: a stack cannot change
//! them under it), and the rest read by the device where it lies, in the
//! stack's dataspace pinned for device reads (`hal::add_direct`).  Up to 8
//! frames are on the device at once (16 descriptors); `complete` takes the
//! finished ones back.
//!
//! A device that stops (NEEDS_RESET after a DMA fault, a chain the
//! mediator refused) is
//! `reset`: set up again from a new transport with new virtqueues, the
//! same receive buffers and head slots, and the frames that were on it
//! put on again unless the caller drops them (their pages went).
//!
//! Why not `VirtIONetRaw`: it sends one buffer per frame, so the header
//! would have to precede the frame in the stack's memory.  And every
//! transmit and every receive buffer handed back is followed by a kick of
//! the PCI server's mediator (without an IOMMU; docs/pci.md, "Software
//! DMA mediation"), which `VirtIONet`'s spinning `send` left no place for.

use alloc::string::String;

use keep_virtio::hal::{self, KeepHal};
use keep_virtio::{PlatformTransport, VirtioTransport};
use virtio_drivers::queue::VirtQueue;
use virtio_drivers::transport::{DeviceStatus, Transport};
use virtio_drivers::{BufferDirection, Hal};

/// Descriptors of each virtqueue (the mediator's limit).
pub const QUEUE: usize = 16;
/// A receive buffer: the virtio-net header and a whole frame.
const RX_BUF: usize = 2048;
/// virtio-net's header (`struct virtio_net_hdr` with `num_buffers`, VERSION_1).
const NET_HDR: usize = 12;
/// Bytes of a frame copied into the server's head slot: all of a short
/// frame (ARP, ACKs), the headers the server checks of a long one.
pub const HEAD: usize = 128;
const HEAD_SLOT: usize = 256;

const RECEIVEQ: u16 = 0;
const TRANSMITQ: u16 = 1;
const F_MAC: u64 = 1 << 5;
const F_STATUS: u64 = 1 << 16;
const F_VERSION_1: u64 = 1 << 32;

type Queue = VirtQueue<KeepHal, QUEUE>;

/// A frame on the device: its head slot, what of it is read in place, and
/// the caller's tag for it.
#[derive(Clone, Copy)]
struct InFlight {
    slot: usize,
    head: usize,
    rest: Option<(u64, usize)>,
    tag: u64,
}

/// What a reset makes anew: the transport (first, so that dropping it
/// resets the device before the queues' pages go) and the virtqueues.
struct Device {
    transport: PlatformTransport<VirtioTransport>,
    rxq: Queue,
    txq: Queue,
}

impl Device {
    /// Negotiates features and makes both virtqueues; the MAC address too.
    fn open(mut t: PlatformTransport<VirtioTransport>) -> Result<(Device, [u8; 6]), String> {
        t.set_status(DeviceStatus::empty());
        t.set_status(DeviceStatus::ACKNOWLEDGE | DeviceStatus::DRIVER);
        let offered = t.read_device_features();
        if offered & F_VERSION_1 == 0 {
            return Err(String::from("the device is not virtio 1.0"));
        }
        // No indirect descriptors (their tables would be fresh heap memory
        // bounced through new DMA pages each time), no event index.
        t.write_driver_features(offered & (F_MAC | F_STATUS | F_VERSION_1));
        t.set_status(DeviceStatus::ACKNOWLEDGE | DeviceStatus::DRIVER | DeviceStatus::FEATURES_OK);
        t.set_guest_page_size(4096);
        let mac: [u8; 6] = t.read_config_space(0).map_err(|e| alloc::format!("MAC: {e:?}"))?;
        let rxq = Queue::new(&mut t, RECEIVEQ, false, false).map_err(|e| alloc::format!("receive queue: {e:?}"))?;
        let txq = Queue::new(&mut t, TRANSMITQ, false, false).map_err(|e| alloc::format!("transmit queue: {e:?}"))?;
        t.finish_init();
        Ok((Device { transport: t, rxq, txq }, mac))
    }
}

pub struct Nic {
    dev: Device,
    mac: [u8; 6],
    /// Receive buffer i at rx_va + i * RX_BUF; the token the device knows it by.
    rx_va: u64,
    rx_token: [u16; QUEUE],
    head_va: u64,
    head_free: u32,
    /// By token (the chain's first descriptor).
    in_flight: [Option<InFlight>; QUEUE],
    on_device: usize,
    /// The device stopped (a refused chain, NEEDS_RESET seen): to be reset.
    stopped: bool,
    /// Chains the mediator refused.
    pub refused: u64,
    /// Frames the device finished.
    pub finished: u64,
}

fn buf(va: u64, len: usize) -> &'static mut [u8] {
    // SAFETY: DMA pages the Hal made for this server, or a stack's ring
    // mapped for as long as frames of it are on the device; each buffer
    // is handed out once at a time.
    unsafe { core::slice::from_raw_parts_mut(va as *mut u8, len) }
}

impl Nic {
    pub fn new(t: PlatformTransport<VirtioTransport>) -> Result<Nic, String> {
        let (dev, mac) = Device::open(t)?;
        let rx_pages = QUEUE * RX_BUF / 4096;
        let (rx_iova, rx) = KeepHal::dma_alloc(rx_pages, BufferDirection::DeviceToDriver);
        let (head_iova, heads) = KeepHal::dma_alloc(1, BufferDirection::DriverToDevice);
        let (rx_va, head_va) = (rx.as_ptr() as u64, heads.as_ptr() as u64);
        hal::add_direct(rx_va, (rx_pages * 4096) as u64, rx_iova);
        hal::add_direct(head_va, 4096, head_iova);
        let mut nic = Nic {
            dev,
            mac,
            rx_va,
            rx_token: [0; QUEUE],
            head_va,
            head_free: (1 << (4096 / HEAD_SLOT)) - 1,
            in_flight: [None; QUEUE],
            on_device: 0,
            stopped: false,
            refused: 0,
            finished: 0,
        };
        nic.post_receive_buffers()?;
        Ok(nic)
    }

    /// Hands every receive buffer to a fresh receive queue.
    fn post_receive_buffers(&mut self) -> Result<(), String> {
        for i in 0..QUEUE {
            // SAFETY: the buffer is the device's until it is popped.
            self.rx_token[i] = unsafe { self.dev.rxq.add(&[], &mut [buf(self.rx_va + (i * RX_BUF) as u64, RX_BUF)]) }
                .map_err(|e| alloc::format!("receive buffer {i}: {e:?}"))?;
        }
        if self.dev.rxq.should_notify() {
            self.dev.transport.notify(RECEIVEQ);
        }
        keep_virtio::mediated::kick();
        Ok(())
    }

    /// Whether the device stopped and must be reset (`reset`): the mediator
    /// refused a chain, or the device said it needs a reset.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Whether the device says it needs a reset (virtio's NEEDS_RESET).
    pub fn needs_reset(&self) -> bool {
        self.dev.transport.get_status().contains(DeviceStatus::DEVICE_NEEDS_RESET)
    }

    /// Resets the device and sets it up again over the transport `make`
    /// gives (the old one dropped first: its drop is the reset, and the
    /// mediated one forgets its rings), with new virtqueues and every
    /// receive buffer posted again; interrupts enabled if `interrupts`.
    /// The frames that were on the device are put on it again but those
    /// `keep(tag, in_place)` refuses, which are dropped.
    /// (frames put on again, frames dropped).  A device that cannot be set
    /// up again ends the server (init restarts it): nothing else is left
    /// to serve from.
    pub fn reset(&mut self, make: impl FnOnce() -> Result<PlatformTransport<VirtioTransport>, String>, interrupts: bool,
                 mut keep: impl FnMut(u64, bool) -> bool) -> (usize, usize) {
        // Their order may change (tokens are reused): a network allows it.
        let was: alloc::vec::Vec<InFlight> = self.in_flight.iter_mut().filter_map(|f| f.take()).collect();
        self.on_device = 0;
        self.stopped = false;
        keep_virtio::device::remake(&mut self.dev, || make().and_then(Device::open).map(|(d, _)| d), |e| {
            keep_rt::println!("net: the NIC cannot be set up again after its reset ({e}); the server ends");
            keep_rt::exit(3)
        });
        if let Err(e) = self.post_receive_buffers() {
            keep_rt::println!("net: after the NIC's reset, {e}; the server ends");
            keep_rt::exit(3);
        }
        if interrupts {
            self.enable_interrupts();
        }
        let (mut again, mut dropped) = (0, 0);
        for f in was {
            if keep(f.tag, f.rest.is_some()) && self.put(f).is_ok() {
                again += 1;
            } else {
                self.head_free |= 1 << f.slot;
                dropped += 1;
            }
        }
        (again, dropped)
    }

    pub fn mac(&self) -> [u8; 6] {
        self.mac
    }

    pub fn enable_interrupts(&mut self) {
        self.dev.rxq.set_dev_notify(true);
        self.dev.txq.set_dev_notify(true);
    }

    pub fn ack_interrupt(&mut self) {
        self.dev.transport.ack_interrupt();
    }

    /// Takes every received frame off the NIC, hands each to `f` and its
    /// buffer back to the device.  Returns the frames taken.
    pub fn receive(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let mut n = 0;
        while let Some(token) = self.dev.rxq.peek_used() {
            let Some(i) = self.rx_token.iter().position(|&t| t == token) else {
                keep_rt::println!("net: the device completed an unknown receive buffer {token}");
                break;
            };
            let b = buf(self.rx_va + (i * RX_BUF) as u64, RX_BUF);
            // SAFETY: the same buffer as was added for this token.
            match unsafe { self.dev.rxq.pop_used(token, &[], &mut [b]) } {
                Ok(len) if len as usize >= NET_HDR && len as usize <= RX_BUF => {
                    n += 1;
                    f(&buf(self.rx_va + (i * RX_BUF) as u64, RX_BUF)[NET_HDR..len as usize]);
                }
                Ok(_) => keep_rt::println!("net: a receive buffer came back malformed"),
                Err(e) => {
                    keep_rt::println!("net: receive buffer {i}: {e:?}");
                    break;
                }
            }
            let b = buf(self.rx_va + (i * RX_BUF) as u64, RX_BUF);
            // SAFETY: as in new().
            match unsafe { self.dev.rxq.add(&[], &mut [b]) } {
                Ok(t) => self.rx_token[i] = t,
                Err(e) => keep_rt::println!("net: receive buffer {i} could not be given back: {e:?}"),
            }
        }
        if n > 0 {
            if self.dev.rxq.should_notify() {
                self.dev.transport.notify(RECEIVEQ);
            }
            keep_virtio::mediated::kick();
        }
        n
    }

    /// Whether a frame can go on the device now.
    pub fn can_send(&self) -> bool {
        self.head_free != 0 && self.dev.txq.available_desc() >= 2
    }

    /// Puts a frame on the device: `head` (at most HEAD bytes, copied into
    /// a head slot) and then, if any, `rest` = (virtual address, length),
    /// which must be memory the device reaches in place (a direct range of
    /// the Hal).  Returns whether it went; `tag` comes back from `complete`
    /// when the device is done with `rest`.  Does not wait.  A frame the
    /// mediator refused went too (it is dropped by the reset it calls for).
    pub fn send(&mut self, head: &[u8], rest: Option<(u64, usize)>, tag: u64) -> Result<(), String> {
        if !self.can_send() || head.len() > HEAD {
            return Err(String::from("the transmit queue is full"));
        }
        let slot = self.head_free.trailing_zeros() as usize;
        let hb = buf(self.head_va + (slot * HEAD_SLOT) as u64, NET_HDR + head.len());
        hb[..NET_HDR].fill(0);
        hb[NET_HDR..].copy_from_slice(head);
        self.head_free &= !(1 << slot);
        let f = InFlight { slot, head: NET_HDR + head.len(), rest, tag };
        let r = self.put(f);
        if r.is_err() {
            self.head_free |= 1 << slot;
        }
        r
    }

    /// Adds frame `f` (its head slot filled and taken) to the transmit
    /// queue and tells the device.  A chain the mediator refused stays in
    /// the queue (virtio-drivers cannot take it back) and counts as on the
    /// device: the device is `stopped` until reset, which drops it.
    fn put(&mut self, f: InFlight) -> Result<(), String> {
        let hb: &[u8] = buf(self.head_va + (f.slot * HEAD_SLOT) as u64, f.head);
        // SAFETY: the head slot is not used again until complete() or
        // reset(); the rest is the caller's to keep untouched until then.
        let token = unsafe {
            match f.rest {
                Some((va, len)) => self.dev.txq.add(&[hb, buf(va, len)], &mut []),
                None => self.dev.txq.add(&[hb], &mut []),
            }
        }
        .map_err(|e| alloc::format!("{e:?}"))?;
        self.in_flight[token as usize] = Some(f);
        self.on_device += 1;
        if self.dev.txq.should_notify() {
            self.dev.transport.notify(TRANSMITQ);
        }
        // Through the mediator: the chain now, even if the device had
        // notifications suppressed.
        keep_virtio::mediated::kick();
        if let Some((st, _, addr)) = keep_virtio::mediated::take_refusal() {
            keep_rt::println!("net: the mediator refused a frame ({}): address {addr:#x}", keep_pci::status_name(st));
            self.refused += 1;
            self.stopped = true;
        }
        Ok(())
    }

    /// Takes the frames the device finished off the transmit queue; `f`
    /// gets each one's tag and whether it had a part read in place.
    pub fn complete(&mut self, mut f: impl FnMut(u64, bool)) -> usize {
        let mut n = 0;
        while let Some(token) = self.dev.txq.peek_used() {
            let Some(fl) = self.in_flight.get_mut(token as usize).and_then(|x| x.take()) else {
                keep_rt::println!("net: the device completed an unknown transmit chain {token}");
                break;
            };
            let hb: &[u8] = buf(self.head_va + (fl.slot * HEAD_SLOT) as u64, fl.head);
            // SAFETY: the same buffers as were added for this token.
            let r = unsafe {
                match fl.rest {
                    Some((va, len)) => self.dev.txq.pop_used(token, &[hb, buf(va, len)], &mut []),
                    None => self.dev.txq.pop_used(token, &[hb], &mut []),
                }
            };
            if let Err(e) = r {
                keep_rt::println!("net: transmit chain {token}: {e:?}");
                break;
            }
            self.head_free |= 1 << fl.slot;
            self.on_device -= 1;
            self.finished += 1;
            n += 1;
            f(fl.tag, fl.rest.is_some());
        }
        n
    }

    /// Waits until the device has finished every frame (before a stack's
    /// ring is unpinned: nothing of it may be on the device then).  Gives
    /// up, the device `stopped`, when the device says it needs a reset.
    pub fn drain(&mut self, mut f: impl FnMut(u64, bool)) {
        let mut spins = 0u64;
        while self.on_device > 0 && !self.stopped {
            self.complete(&mut f);
            spins += 1;
            if spins % 4096 == 0 && self.needs_reset() {
                self.stopped = true;
                return;
            }
            if spins > 50_000_000 {
                keep_rt::println!("net: the device did not finish {} frames", self.on_device);
                return;
            }
            core::hint::spin_loop();
        }
    }
}
