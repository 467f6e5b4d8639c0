//! MSI-X for a virtio PCI driver (docs/devices.md, "MSI and MSI-X"): the
//! PCI server routes one MSI-X table entry to an MSI line for the function
//! (`GET_MSI`); the driver binds the line to itself and points the device's
//! virtqueues at that entry through the common configuration structure
//! (`queue_msix_vector`, virtio 1.1 section 4.1.4.3), which lies in a BAR
//! the driver maps.  Call it after the virtio-drivers device is made: making
//! it resets the device, and a reset forgets the vectors.

use alloc::format;
use alloc::string::String;

use keep_abi::{Interrupt, SELF_PROCESS, rights};
use keep_pci::Session;
use virtio_drivers::Hal;

use crate::hal::KeepHal;

const CAP_VENDOR: u32 = 0x09;
const COMMON_CFG: u32 = 1;
const QUEUE_SELECT: usize = 0x16;
const QUEUE_MSIX_VECTOR: usize = 0x1a;
/// VIRTIO_MSI_NO_VECTOR: what the device answers when it refuses a vector.
pub const NO_VECTOR: u16 = 0xffff;

/// Physical address of the function's common configuration structure.
fn common_cfg(session: Session) -> Result<u64, String> {
    let rd = |off: u64| session.config_read(off).map_err(|e| format!("config read {off:#x}: {e}"));
    let mut ptr = (rd(0x34)? & 0xfc) as u64;
    for _ in 0..48 {
        if ptr < 0x40 {
            break;
        }
        let w = rd(ptr)?;
        if w & 0xff == CAP_VENDOR && (w >> 24) & 0xff == COMMON_CFG {
            let bar = (rd(ptr + 4)? & 0xff) as u64;
            let offset = rd(ptr + 8)? as u64;
            let lo = rd(0x10 + 4 * bar)?;
            let hi = if (lo >> 1) & 3 == 2 { rd(0x14 + 4 * bar)? as u64 } else { 0 };
            return Ok((hi << 32 | (lo & !0xf) as u64) + offset);
        }
        ptr = ((w >> 8) & 0xfc) as u64;
    }
    Err("no virtio common configuration capability".into())
}

/// Asks the PCI server for MSI-X entry `entry` of the session's function
/// (its INTERRUPT capability arrives at `irq_slot`), binds the line to this
/// process through a sender minted at `me_slot` with `payload`, and points
/// virtqueues 0..queues at the entry.  Returns the line; the driver's
/// receives then get an `IRQ` message (word 0 the line, `payload`) for each
/// interrupt, and need no `ACK` (an MSI line is never masked).
pub fn route_queues(session: Session, entry: u16, queues: u16, irq_slot: u64, me_slot: u64, payload: u64) -> Result<u64, String> {
    let (line, _, _) = session.msi(entry as u64, irq_slot).map_err(|e| format!("GET_MSI {entry}: {e}"))?;
    SELF_PROCESS.mint(me_slot, payload, rights::WRITE).map_err(|e| format!("MINT: {e}"))?;
    Interrupt(irq_slot).bind(line, me_slot).map_err(|e| format!("BIND line {line}: {e}"))?;
    point_queues(session, entry, queues)?;
    Ok(line)
}

/// Points virtqueues 0..queues at MSI-X entry `entry` (routed already by
/// [`route_queues`]): again after a device reset, which forgets the vectors.
pub fn point_queues(session: Session, entry: u16, queues: u16) -> Result<(), String> {
    if crate::mediated::active() {
        for q in 0..queues {
            let got = crate::mediated::set_queue_vector(session, q, entry);
            if got != entry {
                return Err(format!("queue {q} refused MSI-X vector {entry} (reads {got:#x})"));
            }
        }
        return Ok(());
    }
    let pa = common_cfg(session)?;
    // SAFETY: the common configuration structure lies in a BAR the Hal was
    // given; mmio_phys_to_virt maps its pages.
    let va = unsafe { KeepHal::mmio_phys_to_virt(pa, 0x38) }.as_ptr();
    for q in 0..queues {
        // SAFETY: both registers lie in the mapped structure (offsets 0x16
        // and 0x1a of its 0x38 bytes), 2-aligned.
        let got = unsafe {
            core::ptr::write_volatile(va.add(QUEUE_SELECT) as *mut u16, q);
            core::ptr::write_volatile(va.add(QUEUE_MSIX_VECTOR) as *mut u16, entry);
            core::ptr::read_volatile(va.add(QUEUE_MSIX_VECTOR) as *const u16)
        };
        if got != entry {
            return Err(format!("queue {q} refused MSI-X vector {entry} (reads {got:#x})"));
        }
    }
    Ok(())
}
