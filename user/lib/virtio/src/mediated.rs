//! The driver's side of software DMA mediation (docs/pci.md, "Software
//! DMA mediation"; the PCI server's mediator.rs is the other side): on a
//! machine without an IOMMU the driver holds neither the function's common
//! configuration structure nor the rings the device reads.  This transport
//! reaches the common configuration through the PCI server (`VIRTIO_READ`,
//! `VIRTIO_WRITE`), and gives `virtio-drivers` rings in the driver's own
//! memory that the device never reads: a *shadow* descriptor table and
//! available ring.  On `notify` (and on [`kick`]) it sends the chains made
//! available since the last submission, with their device addresses (the
//! driver's DMA-domain addresses, as with an IOMMU), to the mediator
//! (`VIRTIO_SUBMIT`), which checks each byte against the domain and only
//! then puts them on the real ring.  The used ring is the driver's and the
//! device writes it directly; ISR status and device configuration are
//! mapped from the BAR pages the driver was given.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cell::UnsafeCell;

use keep_pci::{DESC_NEXT, Session};
use virtio_drivers::transport::{DeviceStatus, DeviceType, InterruptStatus, Transport};
use virtio_drivers::{Error, Hal, PhysAddr, Result};
use zerocopy::{FromBytes, Immutable, IntoBytes};

use crate::hal::{self, KeepHal};

const DEVICE_FEATURE_SELECT: u64 = 0x00;
const DEVICE_FEATURE: u64 = 0x04;
const DRIVER_FEATURE_SELECT: u64 = 0x08;
const DRIVER_FEATURE: u64 = 0x0c;
const DEVICE_STATUS: u64 = 0x14;
const CONFIG_GENERATION: u64 = 0x15;
const QUEUE_SELECT: u64 = 0x16;
const QUEUE_SIZE: u64 = 0x18;
const QUEUE_MSIX_VECTOR: u64 = 0x1a;
const QUEUE_ENABLE: u64 = 0x1c;

struct Shadow {
    index: u16,
    size: u16,
    desc: u64,  // the shadow descriptor table (driver's virtual address)
    avail: u64, // the shadow available ring
    sent: u16,  // the available index submitted so far
}

struct State {
    session: Session,
    queues: Vec<Shadow>,
    refusal: Option<(u64, u64, u64)>,
    submitted: u64,
}

struct Global(UnsafeCell<Option<State>>);
// SAFETY: drivers are single-threaded (as for the Hal).
unsafe impl Sync for Global {}
static STATE: Global = Global(UnsafeCell::new(None));

fn state() -> Option<&'static mut State> {
    // SAFETY: single-threaded; no caller keeps the reference across another call.
    unsafe { (*STATE.0.get()).as_mut() }
}

/// Whether this process drives its device through the mediator.
pub fn active() -> bool {
    state().is_some()
}

/// The last submission the mediator refused: (status, chain, address);
/// taken.  The refused chains are dropped (they never complete).
pub fn take_refusal() -> Option<(u64, u64, u64)> {
    state().and_then(|s| s.refusal.take())
}

/// Chains submitted and accepted so far.
pub fn submitted() -> u64 {
    state().map_or(0, |s| s.submitted)
}

/// A virtio PCI capability's (bar, offset, length).
fn cap(session: Session, cfg_type: u32) -> core::result::Result<(u64, u64, u64), String> {
    let rd = |off: u64| session.config_read(off).map_err(|e| format!("config read {off:#x}: {e}"));
    let mut ptr = (rd(0x34)? & 0xfc) as u64;
    for _ in 0..48 {
        if ptr < 0x40 {
            break;
        }
        let w = rd(ptr)?;
        if w & 0xff == 0x09 && (w >> 24) & 0xff == cfg_type {
            return Ok(((rd(ptr + 4)? & 0xff) as u64, rd(ptr + 8)? as u64, rd(ptr + 12)? as u64));
        }
        ptr = ((w >> 8) & 0xfc) as u64;
    }
    Err(format!("no virtio capability of type {cfg_type}"))
}

fn bar_base(session: Session, bar: u64) -> core::result::Result<u64, String> {
    let rd = |off: u64| session.config_read(off).map_err(|e| format!("config read {off:#x}: {e}"));
    let lo = rd(0x10 + 4 * bar)?;
    let hi = if (lo >> 1) & 3 == 2 { rd(0x14 + 4 * bar)? as u64 } else { 0 };
    Ok(hi << 32 | (lo & !0xf) as u64)
}

/// Submits the chains made available on every queue since the last
/// submission.  `virtio-drivers` notifies only when the used ring's flags
/// allow it, and a device that suppressed notifications while it worked
/// re-reads only the real ring: a driver calls this after adding buffers
/// (the block server does after every request), so that nothing it added
/// waits for a notification that was never sent.
pub fn kick() {
    let Some(s) = state() else { return };
    for i in 0..s.queues.len() {
        submit(s, i);
    }
}

fn submit(s: &mut State, qi: usize) {
    let q = &mut s.queues[qi];
    // SAFETY: the shadow rings are the driver's pages (virtio-drivers'
    // VirtQueue), mapped for as long as the queue lives; u16 fields aligned.
    let (flags, idx) = unsafe {
        (core::ptr::read_volatile(q.avail as *const u16), core::ptr::read_volatile((q.avail + 2) as *const u16))
    };
    let mut msg: Vec<u8> = Vec::new();
    let mut chains = 0u16;
    let mut next = q.sent;
    let send = |msg: &mut Vec<u8>, chains: &mut u16, s_session: Session, index: u16| -> core::result::Result<(), (u64, u64, u64)> {
        if *chains == 0 {
            return Ok(());
        }
        msg[2..4].copy_from_slice(&chains.to_le_bytes());
        let mut refused = (0, 0);
        let r = match s_session.virtio_submit(index as u64, msg, &mut refused) {
            Ok(()) => Ok(()),
            Err(keep_pci::Error::Status(st)) => Err((st, refused.0, refused.1)),
            Err(keep_pci::Error::Call(e)) => Err((1000 + e.0, 0, 0)),
        };
        msg.truncate(8);
        *chains = 0;
        r
    };
    msg.extend_from_slice(&flags.to_le_bytes());
    msg.extend_from_slice(&[0; 6]);
    let mut accepted = 0u64;
    let mut result = Ok(());
    while next != idx {
        // SAFETY: as above; the ring has `size` entries after flags and idx.
        let head = unsafe { core::ptr::read_volatile((q.avail + 4 + 2 * (next % q.size) as u64) as *const u16) };
        let mut descs: Vec<[u8; 16]> = Vec::new();
        let mut d = head;
        loop {
            if d >= q.size || descs.len() >= q.size as usize {
                break;
            }
            // SAFETY: descriptor d < size of the shadow table: addr u64, len u32, flags u16, next u16.
            let (addr, len, fl, nx) = unsafe {
                let p = (q.desc + 16 * d as u64) as *const u8;
                (core::ptr::read_volatile(p as *const u64), core::ptr::read_volatile(p.add(8) as *const u32),
                 core::ptr::read_volatile(p.add(12) as *const u16), core::ptr::read_volatile(p.add(14) as *const u16))
            };
            let mut e = [0u8; 16];
            e[0..8].copy_from_slice(&addr.to_le_bytes());
            e[8..12].copy_from_slice(&len.to_le_bytes());
            e[12..14].copy_from_slice(&fl.to_le_bytes());
            descs.push(e);
            if fl & DESC_NEXT == 0 {
                break;
            }
            d = nx;
        }
        if msg.len() + 8 + 16 * descs.len() > keep_abi::layout::MAX_STRING as usize {
            let n = chains as u64;
            if let Err(e) = send(&mut msg, &mut chains, s.session, q.index) {
                result = Err(e);
            } else {
                accepted += n;
            }
        }
        msg.extend_from_slice(&head.to_le_bytes());
        msg.extend_from_slice(&(descs.len() as u16).to_le_bytes());
        msg.extend_from_slice(&[0; 4]);
        for e in &descs {
            msg.extend_from_slice(e);
        }
        chains += 1;
        next = next.wrapping_add(1);
    }
    let n = chains as u64;
    match send(&mut msg, &mut chains, s.session, q.index) {
        Ok(()) => accepted += n,
        Err(e) => result = Err(e),
    }
    q.sent = idx;
    s.submitted += accepted;
    if let Err(e) = result {
        s.refusal = Some(e);
    }
}

/// A virtio function driven through the mediator.
pub struct MediatedTransport {
    session: Session,
    device_type: DeviceType,
    isr: u64,
    config: u64,
    config_len: u64,
}

impl MediatedTransport {
    /// The function of `session` (PCI device id `device`): its ISR status
    /// and device configuration structures mapped through the Hal (from the
    /// BAR pages the PCI server gave), every other access through the
    /// session.  The Hal must be set up.
    pub fn new(session: Session, device: u16) -> core::result::Result<MediatedTransport, String> {
        let (ibar, ioff, _) = cap(session, 3)?;
        let (dbar, doff, dlen) = cap(session, 4)?;
        let isr_pa = bar_base(session, ibar)? + ioff;
        let cfg_pa = bar_base(session, dbar)? + doff;
        // SAFETY: both lie in BAR pages the Hal was given (else it panics, naming them).
        let isr = unsafe { KeepHal::mmio_phys_to_virt(isr_pa, 1) }.as_ptr() as u64;
        let config = unsafe { KeepHal::mmio_phys_to_virt(cfg_pa, dlen.max(4) as usize) }.as_ptr() as u64;
        let device_type = DeviceType::try_from(device.wrapping_sub(0x1040))
            .map_err(|_| format!("PCI device {device:#x} is no virtio 1.0 device"))?;
        // SAFETY: single-threaded.
        unsafe { *STATE.0.get() = Some(State { session, queues: Vec::new(), refusal: None, submitted: 0 }) };
        Ok(MediatedTransport { session, device_type, isr, config, config_len: dlen })
    }

    fn rd(&self, off: u64, width: u64) -> u64 {
        self.session.virtio_read(off, width).unwrap_or(0)
    }
    fn wr(&self, off: u64, width: u64, v: u64) {
        // A refused write changes nothing; virtio-drivers has no way to hear it.
        let _ = self.session.virtio_write(off, width, v);
    }
}

/// Points queue `q`'s interrupts at MSI-X entry `entry` through the
/// mediator; returns what the device reads back.
pub fn set_queue_vector(session: Session, q: u16, entry: u16) -> u16 {
    let _ = session.virtio_write(QUEUE_SELECT, 2, q as u64);
    let _ = session.virtio_write(QUEUE_MSIX_VECTOR, 2, entry as u64);
    session.virtio_read(QUEUE_MSIX_VECTOR, 2).unwrap_or(0xffff) as u16
}

impl Drop for MediatedTransport {
    fn drop(&mut self) {
        // Reset: the mediator forgets the rings.
        self.wr(DEVICE_STATUS, 1, 0);
        // SAFETY: single-threaded.
        unsafe { *STATE.0.get() = None };
    }
}

impl Transport for MediatedTransport {
    fn device_type(&self) -> DeviceType {
        self.device_type
    }
    fn read_device_features(&mut self) -> u64 {
        self.wr(DEVICE_FEATURE_SELECT, 4, 0);
        let lo = self.rd(DEVICE_FEATURE, 4);
        self.wr(DEVICE_FEATURE_SELECT, 4, 1);
        lo | self.rd(DEVICE_FEATURE, 4) << 32
    }
    fn write_driver_features(&mut self, f: u64) {
        self.wr(DRIVER_FEATURE_SELECT, 4, 0);
        self.wr(DRIVER_FEATURE, 4, f & 0xffff_ffff);
        self.wr(DRIVER_FEATURE_SELECT, 4, 1);
        self.wr(DRIVER_FEATURE, 4, f >> 32);
    }
    fn max_queue_size(&mut self, queue: u16) -> u32 {
        self.wr(QUEUE_SELECT, 2, queue as u64);
        self.rd(QUEUE_SIZE, 2) as u32
    }
    fn notify(&mut self, queue: u16) {
        if let Some(s) = state() {
            if let Some(i) = s.queues.iter().position(|q| q.index == queue) {
                submit(s, i);
            }
        }
    }
    fn get_status(&self) -> DeviceStatus {
        DeviceStatus::from_bits_truncate(self.rd(DEVICE_STATUS, 1) as u32)
    }
    fn set_status(&mut self, status: DeviceStatus) {
        self.wr(DEVICE_STATUS, 1, status.bits() as u64);
    }
    fn set_guest_page_size(&mut self, _: u32) {}
    fn requires_legacy_layout(&self) -> bool {
        false
    }
    fn queue_set(&mut self, queue: u16, size: u32, descriptors: PhysAddr, driver_area: PhysAddr, device_area: PhysAddr) {
        let Some(s) = state() else { return };
        let (Some(desc), Some(avail)) = (hal::dma_va(descriptors), hal::dma_va(driver_area)) else {
            s.refusal = Some((keep_pci::BAD_REQUEST, 0, descriptors));
            return;
        };
        // The used ring the device writes is the mediator's page; the
        // driver reads it where virtio-drivers put its own.
        let Some(cap) = hal::take_slot() else {
            s.refusal = Some((keep_pci::NO_RESOURCES, 0, device_area));
            return;
        };
        let made = match self.session.virtio_queue(queue as u64, size as u64, device_area, cap) {
            Ok(()) => hal::adopt(device_area, cap).map_err(|e| 1000 + e.0),
            Err(keep_pci::Error::Status(st)) => Err(st),
            Err(keep_pci::Error::Call(e)) => Err(1000 + e.0),
        };
        match made {
            Ok(()) => s.queues.push(Shadow { index: queue, size: size as u16, desc, avail, sent: 0 }),
            Err(st) => {
                let _ = keep_abi::SELF_ASPACE.delete_cap(cap); // the page, if it came
                hal::give_slot(cap);
                s.refusal = Some((st, 0, device_area));
            }
        }
    }
    fn queue_unset(&mut self, queue: u16) {
        // The device forgets the queue at the reset that follows (drop).
        if let Some(s) = state() {
            s.queues.retain(|q| q.index != queue);
        }
    }
    fn queue_used(&mut self, queue: u16) -> bool {
        self.wr(QUEUE_SELECT, 2, queue as u64);
        self.rd(QUEUE_ENABLE, 2) != 0
    }
    fn ack_interrupt(&mut self) -> InterruptStatus {
        // SAFETY: the ISR status byte is mapped (new); reading it clears it.
        InterruptStatus::from_bits_truncate(unsafe { core::ptr::read_volatile(self.isr as *const u8) } as u32)
    }
    fn read_config_generation(&self) -> u32 {
        self.rd(CONFIG_GENERATION, 1) as u32
    }
    fn read_config_space<V: FromBytes + IntoBytes>(&self, offset: usize) -> Result<V> {
        if offset % core::mem::align_of::<V>() != 0 || offset + core::mem::size_of::<V>() > self.config_len as usize {
            return Err(Error::ConfigSpaceTooSmall);
        }
        // SAFETY: within the mapped device configuration structure, aligned.
        Ok(unsafe { core::ptr::read_volatile((self.config + offset as u64) as *const V) })
    }
    fn write_config_space<V: IntoBytes + Immutable>(&mut self, offset: usize, value: V) -> Result<()> {
        if offset % core::mem::align_of::<V>() != 0 || offset + core::mem::size_of::<V>() > self.config_len as usize {
            return Err(Error::ConfigSpaceTooSmall);
        }
        // SAFETY: as above, and writable.
        unsafe { core::ptr::write_volatile((self.config + offset as u64) as *mut V, value) };
        Ok(())
    }
}
