//! The NIC: `virtio-drivers`' raw virtio-net driver (`VirtIONetRaw`) over
//! buffers the server made once, at fixed device addresses, which the
//! device reaches in place (`keep_virtio::hal::add_direct`): 16 receive
//! buffers of 2 KiB and one transmit buffer.
//!
//! Why not `VirtIONet`: its `send` notifies the device only when the used
//! ring allows it and then spins for the completion, with no place for
//! `keep_virtio::mediated::kick`; through the PCI server's mediator (no
//! IOMMU) a notification skipped while the device had them suppressed
//! would leave the frame in the driver's shadow ring for ever
//! (docs/devices.md, "Software DMA mediation").  Here every transmit and
//! every receive buffer handed back is followed by a kick (nothing is
//! called when `notify` submitted it already, or with an IOMMU).  And its
//! buffers were fresh heap memory each time, bounced through new DMA
//! pages by the Hal; these are made once.

use alloc::string::String;

use keep_virtio::hal::{self, KeepHal};
use keep_virtio::{PlatformTransport, VirtioTransport};
use virtio_drivers::device::net::VirtIONetRaw;
use virtio_drivers::{BufferDirection, Hal};

/// Receive buffers the NIC holds (virtio-net's receive queue).
pub const QUEUE: usize = 16;
/// A receive buffer: the virtio-net header and a whole frame.
const RX_BUF: usize = 2048;

type Raw = VirtIONetRaw<KeepHal, PlatformTransport<VirtioTransport>, QUEUE>;

pub struct Nic {
    raw: Raw,
    /// Receive buffer i at rx_va + i * RX_BUF; the token the device knows it by.
    rx_va: u64,
    rx_token: [u16; QUEUE],
    tx_va: u64,
}

fn buf(va: u64, len: usize) -> &'static mut [u8] {
    // SAFETY: DMA pages the Hal made for this server, mapped for its whole
    // life; each buffer is handed out once at a time (to the device, or to
    // the server between a completion and the next begin).
    unsafe { core::slice::from_raw_parts_mut(va as *mut u8, len) }
}

impl Nic {
    pub fn new(transport: PlatformTransport<VirtioTransport>) -> Result<Nic, String> {
        let mut raw = Raw::new(transport).map_err(|e| alloc::format!("{e:?}"))?;
        let rx_pages = QUEUE * RX_BUF / 4096;
        let (rx_iova, rx) = KeepHal::dma_alloc(rx_pages, BufferDirection::DeviceToDriver);
        let (tx_iova, tx) = KeepHal::dma_alloc(1, BufferDirection::DriverToDevice);
        let (rx_va, tx_va) = (rx.as_ptr() as u64, tx.as_ptr() as u64);
        hal::add_direct(rx_va, (rx_pages * 4096) as u64, rx_iova);
        hal::add_direct(tx_va, 4096, tx_iova);
        let mut rx_token = [0u16; QUEUE];
        for (i, t) in rx_token.iter_mut().enumerate() {
            // SAFETY: the buffer is the device's until receive_complete.
            *t = unsafe { raw.receive_begin(buf(rx_va + (i * RX_BUF) as u64, RX_BUF)) }.map_err(|e| alloc::format!("receive buffer {i}: {e:?}"))?;
        }
        keep_virtio::mediated::kick();
        Ok(Nic { raw, rx_va, rx_token, tx_va })
    }

    pub fn mac(&self) -> [u8; 6] {
        self.raw.mac_address()
    }

    pub fn enable_interrupts(&mut self) {
        self.raw.enable_interrupts();
    }

    pub fn ack_interrupt(&mut self) {
        self.raw.ack_interrupt();
    }

    /// Takes every received frame off the NIC, hands each to `f` and its
    /// buffer back to the device.  Returns the frames taken.
    pub fn receive(&mut self, mut f: impl FnMut(&[u8])) -> u64 {
        let mut n = 0;
        while let Some(token) = self.raw.poll_receive() {
            let Some(i) = self.rx_token.iter().position(|&t| t == token) else {
                keep_rt::println!("net: the device completed an unknown receive buffer {token}");
                break;
            };
            let b = buf(self.rx_va + (i * RX_BUF) as u64, RX_BUF);
            // SAFETY: the same buffer as receive_begin was given for this token.
            match unsafe { self.raw.receive_complete(token, b) } {
                Ok((hdr, len)) if hdr + len <= RX_BUF => {
                    n += 1;
                    f(&b[hdr..hdr + len]);
                }
                _ => keep_rt::println!("net: a receive buffer came back malformed"),
            }
            // SAFETY: as in new().
            match unsafe { self.raw.receive_begin(b) } {
                Ok(t) => self.rx_token[i] = t,
                Err(e) => keep_rt::println!("net: receive buffer {i} could not be given back: {e:?}"),
            }
        }
        keep_virtio::mediated::kick();
        n
    }

    /// Sends one frame (at most MAX_FRAME bytes) and waits for the device.
    pub fn send(&mut self, frame: &[u8]) -> Result<(), String> {
        let b = buf(self.tx_va, 4096);
        let hdr = self.raw.fill_buffer_header(b).map_err(|e| alloc::format!("{e:?}"))?;
        b[hdr..hdr + frame.len()].copy_from_slice(frame);
        let b = &b[..hdr + frame.len()];
        // SAFETY: the buffer stays untouched until transmit_complete below.
        let token = unsafe { self.raw.transmit_begin(b) }.map_err(|e| alloc::format!("{e:?}"))?;
        // Through the mediator: the chain now, even if the device had
        // notifications suppressed.
        keep_virtio::mediated::kick();
        if let Some((st, _, addr)) = keep_virtio::mediated::take_refusal() {
            return Err(alloc::format!("the mediator refused the frame ({}): address {addr:#x}", keep_pci::status_name(st)));
        }
        while self.raw.poll_transmit() != Some(token) {
            core::hint::spin_loop();
        }
        // SAFETY: the same buffer as transmit_begin was given.
        unsafe { self.raw.transmit_complete(token, b) }.map(drop).map_err(|e| alloc::format!("{e:?}"))
    }
}
