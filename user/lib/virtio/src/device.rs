//! Opening a virtio PCI function for a driver: what the block and the
//! network drivers do alike before they make their virtio-drivers device.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{DmaDomain, SELF_ASPACE, SELF_PROCESS, Sender, rights};
use keep_frames::Source;
use keep_loader::SlotPool;
use keep_pci::{Pci, Session};
use virtio_drivers::transport::pci::PciTransport;
use virtio_drivers::transport::pci::bus::{Command, PciRoot};

use crate::mediated::MediatedTransport;
use crate::{PlatformTransport, VirtioTransport};
use crate::hal::{self, DmaConfig, KeepHal};
use crate::pci::{RemoteConfig, Sid};

/// Capability addresses where the Hal maps the runs of pages it takes from
/// the driver's bank (keep_frames::Frames).
pub const RUNS: u64 = 0x0800_0000;
/// Pages a run: a driver uses about ten (its queues, request headers,
/// bounce buffers), so a run of 16 (18 frames of its bank) leaves few idle.
const DMA_RUN: u64 = 16;

/// Where a driver keeps its device in its own space and in its domain.
pub struct Layout {
    /// Where its BARs' pages are mapped.
    pub mmio_va: u64,
    /// Where the Hal's DMA pages go in the driver's space and in the domain.
    pub dma_va: u64,
    pub iova: u64,
    /// How many DMA pages the Hal may use at most.
    pub dma_pages: usize,
}

/// An opened function: its PCI session and the transport to it.
pub struct Opened {
    pub sid: Sid,
    pub session: Session,
    pub transport: PlatformTransport<VirtioTransport>,
    /// No IOMMU: the PCI server's mediator checks every descriptor.
    pub mediated: bool,
}

/// Opens the virtio function `device` (PCI device id) through the PCI
/// server: its session and DMA domain (without an IOMMU the transport is
/// the mediated one: the PCI server checks every descriptor against the
/// domain, so device addresses stay the driver's own), the domain's faults sent to the
/// caller as messages with `fault_payload`, its memory BARs and the DMA
/// pages set up for the Hal (taken from the driver's bank in slot 12, or
/// from the memory pool in slot 5 for a driver started by hand without a
/// bank), bus mastering on, and the transport.  `name`
/// is the device's in the error.  Err: what failed, and why.
pub fn open(
    pci: Pci,
    device: u16,
    name: &str,
    fault_payload: u64,
    layout: &Layout,
    slots: &mut SlotPool,
) -> Result<Opened, (String, String)> {
    let fail = |what: &str, why: String| Err((String::from(what), why));
    let (Some(session_slot), Some(domain_slot), Some(me)) = (slots.alloc(), slots.alloc(), slots.alloc()) else {
        return fail("slots", "none free".into());
    };
    let sid = match pci.open(0x1af4, device, 0, session_slot, domain_slot) {
        Ok(s) => Sid(s as u16),
        Err(e) => return fail(&format!("open the {name} function"), format!("{e}")),
    };
    let session = Session(Sender(session_slot));
    let domain = DmaDomain(domain_slot);
    let mediated = match domain.info() {
        Ok(i) => !i.remapping,
        Err(e) => return fail("domain", format!("{e}")),
    };
    if let Err(e) = SELF_PROCESS.mint(me, fault_payload, rights::WRITE).and_then(|_| domain.set_fault_handler(me)) {
        return fail("fault handler", format!("{e}"));
    }
    let mut bars = Vec::new();
    for i in 0..6 {
        let Some(s) = slots.alloc() else { break };
        match session.bar(i, s) {
            Ok((base, size)) => bars.push((s, base & !0xfff, ((base & 0xfff) + size).div_ceil(4096))),
            Err(_) => slots.free(s),
        }
    }
    let Some(scratch) = slots.alloc() else { return fail("slots", "none free".into()) };
    let dma_slots: Vec<u64> = (0..layout.dma_pages).map_while(|_| slots.alloc()).collect();
    let cfg = DmaConfig {
        frames: Source::own(RUNS, scratch, DMA_RUN),
        aspace: SELF_ASPACE,
        domain,
        bars,
        va_base: layout.dma_va,
        iova_base: layout.iova,
        mmio_va: layout.mmio_va,
        slots: dma_slots,
    };
    if let Err(e) = hal::init(cfg) {
        return fail("hal", format!("{e}"));
    }
    let mut root = PciRoot::new(RemoteConfig { sid, session });
    root.set_command(sid.device_function(), Command::MEMORY_SPACE | Command::BUS_MASTER);
    match transport(session, sid, mediated, device) {
        Ok(transport) => Ok(Opened { sid, session, transport, mediated }),
        Err(e) => fail(if mediated { "mediated virtio transport" } else { "virtio PCI transport" }, e),
    }
}

/// A transport to the function of an open session: what [`open`] makes, and
/// what a driver makes again to set its device up afresh after a reset
/// (the old transport dropped first: dropping one resets the device, and
/// the mediated one forgets its rings).  The BAR pages it needs are mapped
/// once (the Hal reuses them).
pub fn transport(session: Session, sid: Sid, mediated: bool, device: u16) -> Result<PlatformTransport<VirtioTransport>, String> {
    if mediated {
        return MediatedTransport::new(session, device).map(|t| PlatformTransport::new(VirtioTransport::Mediated(t)));
    }
    let mut root = PciRoot::new(RemoteConfig { sid, session });
    PciTransport::new::<KeepHal, _>(&mut root, sid.device_function())
        .map(|t| PlatformTransport::new(VirtioTransport::Pci(t)))
        .map_err(|e| format!("{e:?}"))
}

/// Drops the driver at `place` and makes a new one there with `make`: how a
/// driver sets its device up again after the device stopped (the old
/// driver's drop resets the device, and must come before the new one sets
/// it up; the mediated transport's drop also forgets its rings).  If
/// `make` fails, `fail` is called with why and cannot return
/// (`Infallible`): the place holds a dropped driver, and nothing else is
/// left to serve from.
pub fn remake<T>(place: &mut T, make: impl FnOnce() -> Result<T, String>, fail: impl FnOnce(String) -> core::convert::Infallible) {
    // SAFETY: the driver is dropped in place and a new one is written there
    // before anyone can read the place again: on failure `fail` neither
    // returns nor unwinds (drivers are built with panic = abort, and so is
    // a panic inside `make`).
    unsafe { core::ptr::drop_in_place(place) };
    match make() {
        // SAFETY: as above: the place holds a dropped driver.
        Ok(v) => unsafe { core::ptr::write(place, v) },
        // (rustc counts the never-returning call as unreachable code.)
        #[allow(unreachable_code)]
        Err(e) => match fail(e) {},
    }
}
