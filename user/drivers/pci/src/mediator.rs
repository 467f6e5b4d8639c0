//! Software DMA mediation (DROPS section 3; docs/pci.md, "Software DMA
//! mediation"): on a machine without an IOMMU nothing stops a device from
//! reading or writing any physical address its driver names, so for a
//! virtio PCI (1.0, "modern") function the PCI server keeps everything that
//! can name a DMA address to itself:
//!
//! - the common configuration structure (features, status, and the queue
//!   address registers): the driver reaches it only through `VIRTIO_READ`
//!   and `VIRTIO_WRITE`, which refuse the queue registers and hide every
//!   ring feature, and `GET_BAR` leaves its page out;
//! - each queue's descriptor table and available ring, in the server's own
//!   pages: the driver hands chains over with `VIRTIO_SUBMIT`, and the
//!   mediator translates every byte of every descriptor through the
//!   session's DMA domain (`DMA_DOMAIN.LOOKUP`: without an IOMMU the domain
//!   only records what is mapped, which is exactly the pages pinned for the
//!   driver) with the right the device needs, writes the physical pieces
//!   into an indirect table of its own and only then publishes the chain.
//!
//! The used ring is the server's too: a page of its own that the device
//! writes and the driver maps read-only (`VIRTIO_QUEUE` hands it a
//! read-only capability), so that the mediator learns for certain which
//! chains the device has completed.  Every frame of a chain is held in the
//! kernel (`DMA_DOMAIN.HOLD`, tag = the queue's slot and the chain's head)
//! from its submission until the used ring says the device is done with it
//! or the device has been reset: a page unpinned and destroyed under a
//! request (a client revoking its share, a driver unmapping its own page)
//! is not given to anyone while the device may still write it.  A head
//! submitted again while it is on the device is refused (`IN_USE`).

use alloc::vec::Vec;
use core::sync::atomic::{Ordering, fence};

use keep_abi::{DmaDomain, SELF_ASPACE, rights, slot};
use keep_frames::OwnPage;
use keep_pci::*;

/// Common configuration structure offsets (virtio 1.1, 4.1.4.3).
const DEVICE_FEATURE_SELECT: u64 = 0x00;
const DEVICE_FEATURE: u64 = 0x04;
const DRIVER_FEATURE_SELECT: u64 = 0x08;
const DRIVER_FEATURE: u64 = 0x0c;
const NUM_QUEUES: u64 = 0x12;
const DEVICE_STATUS: u64 = 0x14;
const QUEUE_SELECT: u64 = 0x16;
const QUEUE_SIZE: u64 = 0x18;
const QUEUE_ENABLE: u64 = 0x1c;
const QUEUE_NOTIFY_OFF: u64 = 0x1e;
const QUEUE_DESC: u64 = 0x20;
const QUEUE_DRIVER: u64 = 0x28;
const QUEUE_DEVICE: u64 = 0x30;
const COMMON_LEN: u64 = 0x38;

/// Registers a driver may write, (offset, width).
const WRITABLE: [(u64, u64); 7] = [(0x00, 4), (0x08, 4), (0x0c, 4), (0x10, 2), (0x14, 1), (0x16, 2), (0x1a, 2)];

/// Features the driver sees and may accept: the device's own (0-23),
/// VERSION_1 and ACCESS_PLATFORM.  Every ring feature (indirect
/// descriptors, event index, packed rings, in-order, notification data) is
/// the mediator's business: it changes what the rings mean.
const DRIVER_FEATURES: u64 = 0xff_ffff | 1 << 32 | 1 << 33;
const INDIRECT_DESC: u64 = 1 << 28;

const PAGE: u64 = 4096;
/// Pages of one mediated queue: the descriptor table (and the available
/// ring at 2 KiB) and the indirect tables, 1 KiB (MEDIATED_PIECES
/// descriptors) per head.
const QUEUE_PAGES: usize = 1 + (MEDIATED_QUEUE as usize * 1024).div_ceil(PAGE as usize);
const QUEUE_SLOTS: usize = 8;
const AVAIL_OFFSET: u64 = 2048;

#[repr(C, align(4096))]
struct Pool([[u8; PAGE as usize]; QUEUE_PAGES * QUEUE_SLOTS]);
/// The rings' memory: the server's own pages (its image's .bss, mapped for
/// as long as it lives, so their frames stay pinned).
static mut POOL: Pool = Pool([[0; PAGE as usize]; QUEUE_PAGES * QUEUE_SLOTS]);

fn pool_va(slot: usize, page: usize) -> u64 {
    (&raw mut POOL as *mut Pool as u64) + ((slot * QUEUE_PAGES + page) as u64) * PAGE
}

/// Where the server maps a mediated function's common configuration and
/// notification pages.
const MED_VA: u64 = 0x0000_4c00_0000_0000;
/// Where it maps each queue slot's used-ring page.
const USED_VA: u64 = 0x0000_4d00_0000_0000;
/// The capability slot of queue slot `s`'s used-ring page (main reserves them).
pub const fn used_cap(s: usize) -> u64 {
    slot::FIRST_FREE + 2 + s as u64
}
pub const USED_CAPS: usize = QUEUE_SLOTS;

/// The little-endian u16 at `o` of a VIRTIO_SUBMIT string.
fn le16(s: &[u8], o: usize) -> Option<u16> {
    s.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]))
}

/// The hold tag of `head` in queue slot `slot`.
fn tag(slot: usize, head: u16) -> u64 {
    (slot as u64) * MEDIATED_QUEUE + head as u64
}

struct Queue {
    index: u16,
    size: u16,
    slot: usize,
    avail: u16,
    notify_va: u64,
    /// Physical addresses of the slot's pages.
    pa: [u64; QUEUE_PAGES],
    /// The used ring in the server's page: where, where the page came
    /// from, and the device's index the mediator has looked at.
    used_va: u64,
    used_page: OwnPage,
    used_seen: u16,
    /// Heads on the device (bit per head): their frames are held.
    on_device: u32,
}

/// One mediated virtio function.
pub struct Virtio {
    pub common_bar: usize,
    /// Physical address of the page holding the common configuration.
    pub common_page: u64,
    common_va: u64,
    notify_va: u64,
    notify_len: u64,
    notify_mult: u64,
    device_features: u64,
    queues: Vec<Queue>,
    /// The session's domain (set by the first queue): where the holds are.
    domain: Option<DmaDomain>,
    pub published: u64,
    pub refused: u64,
}

static mut SLOTS_USED: u32 = 0;

fn take_slot() -> Option<usize> {
    // SAFETY: the server is single-threaded.
    unsafe {
        let s = (0..QUEUE_SLOTS).find(|&s| SLOTS_USED & 1 << s == 0)?;
        SLOTS_USED |= 1 << s;
        Some(s)
    }
}

fn free_slot(s: usize) {
    // SAFETY: as in take_slot.
    unsafe { SLOTS_USED &= !(1 << s) }
}

/// A virtio PCI capability (virtio 1.1, 4.1.4): (bar, offset, length, the
/// capability's own offset).
fn virtio_cap(rd: &dyn Fn(u64) -> u32, cfg_type: u32) -> Option<(usize, u64, u64, u64)> {
    let mut ptr = (rd(0x34) & 0xfc) as u64;
    let mut n = 0;
    while ptr >= 0x40 && n < 48 {
        let w = rd(ptr);
        if w & 0xff == 0x09 && (w >> 24) & 0xff == cfg_type {
            return Some(((rd(ptr + 4) & 0xff) as usize, rd(ptr + 8) as u64, rd(ptr + 12) as u64, ptr));
        }
        ptr = ((w >> 8) & 0xfc) as u64;
        n += 1;
    }
    None
}

impl Virtio {
    /// Takes over the function whose configuration space `rd` reads, BARs
    /// at `bar_base`: maps its common configuration and notification
    /// structures (through DEVMEM from `devmem_base`) at a window for
    /// function number `fidx`.  None if it is no virtio 1.0 function.
    pub fn new(rd: &dyn Fn(u64) -> u32, bar_base: &dyn Fn(usize) -> u64, devmem_base: u64, fidx: usize) -> Option<Virtio> {
        let (cbar, coff, clen, _) = virtio_cap(rd, 1)?;
        let (nbar, noff, nlen, nptr) = virtio_cap(rd, 2)?;
        if clen < COMMON_LEN || (coff & (PAGE - 1)) + COMMON_LEN > PAGE || nlen == 0 || nlen > 4 * PAGE {
            return None;
        }
        let mult = rd(nptr + 16) as u64;
        let win = MED_VA + fidx as u64 * 0x10_0000;
        let map = |pa: u64, va: u64| {
            SELF_ASPACE.map_device(slot::DEVMEM, (pa & !(PAGE - 1)).checked_sub(devmem_base)? / PAGE, va, rights::READ | rights::WRITE).ok()
        };
        let common_pa = bar_base(cbar) + coff;
        map(common_pa, win)?;
        let notify_pa = bar_base(nbar) + noff;
        let pages = ((notify_pa & (PAGE - 1)) + nlen).div_ceil(PAGE);
        for p in 0..pages {
            if map((notify_pa & !(PAGE - 1)) + p * PAGE, win + (1 + p) * PAGE).is_none() {
                for q in 0..=p {
                    let _ = SELF_ASPACE.unmap(win + q * PAGE);
                }
                return None;
            }
        }
        let mut v = Virtio {
            common_bar: cbar,
            common_page: common_pa & !(PAGE - 1),
            common_va: win + (common_pa & (PAGE - 1)),
            notify_va: win + PAGE + (notify_pa & (PAGE - 1)),
            notify_len: nlen,
            notify_mult: mult,
            device_features: 0,
            queues: Vec::new(),
            domain: None,
            published: 0,
            refused: 0,
        };
        // Whatever ran the device before (firmware, an earlier driver) is
        // forgotten: no ring of theirs is used after this.
        v.reset();
        for sel in 0..2 {
            v.write(DEVICE_FEATURE_SELECT, 4, sel);
            v.device_features |= v.read(DEVICE_FEATURE, 4) << (32 * sel);
        }
        v.write(DEVICE_FEATURE_SELECT, 4, 0);
        Some(v)
    }

    /// Resets the device, gives the rings back, unmaps the structures.
    pub fn finish(mut self, fidx: usize) {
        self.reset();
        let win = MED_VA + fidx as u64 * 0x10_0000;
        let pages = ((self.notify_va & (PAGE - 1)) + self.notify_len).div_ceil(PAGE);
        for p in 0..=pages {
            let _ = SELF_ASPACE.unmap(win + p * PAGE);
        }
    }

    fn read(&self, off: u64, width: u64) -> u64 {
        let p = self.common_va + off;
        // SAFETY: off + width <= COMMON_LEN lies in the mapped structure, aligned.
        unsafe {
            match width {
                1 => core::ptr::read_volatile(p as *const u8) as u64,
                2 => core::ptr::read_volatile(p as *const u16) as u64,
                _ => core::ptr::read_volatile(p as *const u32) as u64,
            }
        }
    }

    fn write(&self, off: u64, width: u64, v: u64) {
        let p = self.common_va + off;
        // SAFETY: as in read.
        unsafe {
            match width {
                1 => core::ptr::write_volatile(p as *mut u8, v as u8),
                2 => core::ptr::write_volatile(p as *mut u16, v as u16),
                _ => core::ptr::write_volatile(p as *mut u32, v as u32),
            }
        }
    }

    fn write64(&self, off: u64, v: u64) {
        self.write(off, 4, v & 0xffff_ffff);
        self.write(off + 4, 4, v >> 32);
    }

    /// Device reset: nothing of the old rings is used after this, so the
    /// holds go and the used pages are destroyed (the driver's read-only
    /// mappings of them with them).
    fn reset(&mut self) {
        self.write(DEVICE_STATUS, 1, 0);
        let mut n = 0;
        while self.read(DEVICE_STATUS, 1) != 0 && n < 1_000_000 {
            n += 1;
        }
        for q in self.queues.drain(..) {
            if let Some(d) = self.domain {
                let _ = d.release(tag(q.slot, 0), MEDIATED_QUEUE);
            }
            free_used(q.slot, q.used_page);
            free_slot(q.slot);
        }
    }

    /// Lets go of the holds of every chain the device has put in `q`'s
    /// used ring since the last look.
    fn harvest(q: &mut Queue, domain: DmaDomain) {
        // SAFETY: the used ring lies in the server's page at used_va (index
        // at +2, 8-byte entries from +4), u16/u32 fields aligned.
        let idx = unsafe { core::ptr::read_volatile((q.used_va + 2) as *const u16) };
        fence(Ordering::SeqCst);
        while q.used_seen != idx {
            let e = q.used_va + 4 + 8 * (q.used_seen % q.size) as u64;
            // SAFETY: as above.
            let head = unsafe { core::ptr::read_volatile(e as *const u32) };
            if head < q.size as u32 && q.on_device & 1 << head != 0 {
                let _ = domain.release(tag(q.slot, head as u16), 1);
                q.on_device &= !(1 << head);
            }
            q.used_seen = q.used_seen.wrapping_add(1);
        }
    }

    /// VIRTIO_READ.
    pub fn virtio_read(&self, off: u64, width: u64) -> Result<u64, u64> {
        if !matches!(width, 1 | 2 | 4) || off % width != 0 || off + width > COMMON_LEN {
            return Err(BAD_REQUEST);
        }
        let v = self.read(off, width);
        Ok(match off {
            DEVICE_FEATURE if width == 4 => {
                let sel = self.read(DEVICE_FEATURE_SELECT, 4);
                if sel < 2 { v & (DRIVER_FEATURES >> (32 * sel)) & 0xffff_ffff } else { 0 }
            }
            DRIVER_FEATURE if width == 4 => {
                let sel = self.read(DRIVER_FEATURE_SELECT, 4);
                if sel < 2 { v & (DRIVER_FEATURES >> (32 * sel)) & 0xffff_ffff } else { 0 }
            }
            QUEUE_SIZE if width == 2 && !self.queues.iter().any(|q| q.index as u64 == self.read(QUEUE_SELECT, 2)) => {
                v.min(MEDIATED_QUEUE)
            }
            _ => v,
        })
    }

    /// VIRTIO_WRITE.
    pub fn virtio_write(&mut self, off: u64, width: u64, v: u64) -> Result<(), u64> {
        if !matches!(width, 1 | 2 | 4) || off % width != 0 || off + width > COMMON_LEN || v >> (8 * width) != 0 {
            return Err(BAD_REQUEST);
        }
        if !WRITABLE.contains(&(off, width)) {
            return Err(DENIED);
        }
        match off {
            DRIVER_FEATURE => {
                let sel = self.read(DRIVER_FEATURE_SELECT, 4);
                let want = if sel < 2 { (v << (32 * sel)) & DRIVER_FEATURES } else { 0 };
                // The mediator's own: indirect tables hold the pieces it makes.
                let all = want | (self.device_features & INDIRECT_DESC);
                self.write(DRIVER_FEATURE, 4, if sel < 2 { (all >> (32 * sel)) & 0xffff_ffff } else { 0 });
            }
            DEVICE_STATUS if v == 0 => self.reset(),
            _ => self.write(off, width, v),
        }
        Ok(())
    }

    /// VIRTIO_QUEUE: queue `index` of `size` entries, the driver's used
    /// ring at `used` in `domain`.  The device's used ring is a page of the
    /// server's, at the same offset; a read-only capability to it goes to
    /// `give` for the driver to map there.
    pub fn queue(&mut self, domain: DmaDomain, index: u64, size: u64, used: u64, give: u64) -> Result<(), (u64, u64)> {
        if index >= self.read(NUM_QUEUES, 2) || !size.is_power_of_two() || size > MEDIATED_QUEUE {
            return Err((BAD_REQUEST, 0));
        }
        if self.queues.iter().any(|q| q.index as u64 == index) {
            return Err((IN_USE, 0));
        }
        self.write(QUEUE_SELECT, 2, index);
        if self.read(QUEUE_SIZE, 2) < size || self.read(QUEUE_ENABLE, 2) != 0 {
            return Err((BAD_REQUEST, 0));
        }
        // The driver's used ring: within one page it holds for device writes
        // (where it maps the server's page).
        let len = 6 + 8 * size;
        if used % 4 != 0 || (used & (PAGE - 1)) + len > PAGE {
            return Err((BAD_REQUEST, used));
        }
        match domain.lookup(used & !(PAGE - 1)) {
            Ok((r, _)) if r & rights::WRITE != 0 => {}
            _ => return Err((DENIED, used)),
        }
        let Some(slot) = take_slot() else { return Err((NO_RESOURCES, 0)) };
        let mut pa = [0u64; QUEUE_PAGES];
        for (p, a) in pa.iter_mut().enumerate() {
            let va = pool_va(slot, p);
            // SAFETY: the pool's page `p` of `slot` is the server's and this queue's alone.
            unsafe { core::ptr::write_bytes(va as *mut u8, 0, PAGE as usize) };
            match SELF_ASPACE.lookup(va) {
                Ok((_, frame)) => *a = frame * PAGE,
                Err(_) => {
                    free_slot(slot);
                    return Err((NO_RESOURCES, 0));
                }
            }
        }
        let notify = self.notify_va + self.read(QUEUE_NOTIFY_OFF, 2) * self.notify_mult;
        if notify + 2 > self.notify_va + self.notify_len {
            free_slot(slot);
            return Err((BAD_REQUEST, 0));
        }
        let Some((used_page, used_frame)) = new_used(slot, give) else {
            free_slot(slot);
            return Err((NO_RESOURCES, 0));
        };
        let used_va = USED_VA + slot as u64 * PAGE + (used & (PAGE - 1));
        self.domain = Some(domain);
        self.write(QUEUE_SIZE, 2, size);
        self.write64(QUEUE_DESC, pa[0]);
        self.write64(QUEUE_DRIVER, pa[0] + AVAIL_OFFSET);
        self.write64(QUEUE_DEVICE, used_frame * PAGE + (used & (PAGE - 1)));
        self.write(QUEUE_ENABLE, 2, 1);
        self.queues.push(Queue {
            index: index as u16,
            size: size as u16,
            slot,
            avail: 0,
            notify_va: notify,
            pa,
            used_va,
            used_page,
            used_seen: 0,
            on_device: 0,
        });
        Ok(())
    }

    /// VIRTIO_SUBMIT: every chain in `s` checked and translated, then all
    /// published, or none.  Err: (status, chain, address).
    pub fn submit(&mut self, domain: DmaDomain, index: u64, s: &[u8]) -> Result<(), (u64, u64, u64)> {
        let Some(qi) = self.queues.iter().position(|q| q.index as u64 == index) else {
            return Err((NOT_FOUND, 0, 0));
        };
        Self::harvest(&mut self.queues[qi], domain);
        let (size, qslot, on_device) = (self.queues[qi].size, self.queues[qi].slot, self.queues[qi].on_device);
        let u16_at = |o: usize| le16(s, o);
        let bad = Err((BAD_REQUEST, 0, 0));
        let (Some(flags), Some(chains)) = (u16_at(0), u16_at(2)) else { return bad };
        if chains == 0 || chains > size {
            return bad;
        }
        // (head, pieces: (physical address, length, device writes)); every
        // page is held under the head's tag as it is checked, and all of
        // this submission's holds go again if any chain is refused.
        let mut out: Vec<(u16, Vec<(u64, u32, bool)>)> = Vec::new();
        let mut heads = 0u32;
        let r = Self::translate(domain, s, chains, size, qslot, on_device, &mut heads, &mut out);
        if let Err(e) = r {
            for h in 0..size {
                if heads & 1 << h != 0 {
                    let _ = domain.release(tag(qslot, h), 1);
                }
            }
            return Err(e);
        }
        let q = &mut self.queues[qi];
        let desc = pool_va(q.slot, 0);
        let avail = desc + AVAIL_OFFSET;
        for (head, pieces) in &out {
            let h = *head as u64;
            let table_va = pool_va(q.slot, 1 + (h as usize * 1024) / PAGE as usize) + (h * 1024) % PAGE;
            let table_pa = q.pa[1 + (h as usize * 1024) / PAGE as usize] + (h * 1024) % PAGE;
            // SAFETY: the tables and the ring are this queue's pages of the
            // pool (16-byte descriptors, 2-byte ring entries, all aligned).
            unsafe {
                for (i, &(pa, len, write)) in pieces.iter().enumerate() {
                    let d = (table_va + 16 * i as u64) as *mut u64;
                    let more = i + 1 < pieces.len();
                    let fl = if write { DESC_WRITE } else { 0 } | if more { DESC_NEXT } else { 0 };
                    core::ptr::write_volatile(d, pa);
                    core::ptr::write_volatile(d.add(1), len as u64 | (fl as u64) << 32 | ((i as u64 + 1) * more as u64) << 48);
                }
                let d = (desc + 16 * h) as *mut u64;
                core::ptr::write_volatile(d, table_pa);
                core::ptr::write_volatile(d.add(1), (16 * pieces.len() as u64) | (DESC_INDIRECT as u64) << 32);
                let slot = (avail + 4 + 2 * (q.avail % q.size) as u64) as *mut u16;
                core::ptr::write_volatile(slot, *head);
            }
            q.avail = q.avail.wrapping_add(1);
        }
        q.on_device |= heads;
        fence(Ordering::SeqCst);
        // SAFETY: the ring's flags and index, in this queue's page.
        unsafe {
            core::ptr::write_volatile(avail as *mut u16, flags & 1);
            core::ptr::write_volatile((avail + 2) as *mut u16, q.avail);
        }
        fence(Ordering::SeqCst);
        // SAFETY: the queue's notification address lies in the mapped structure.
        unsafe { core::ptr::write_volatile(q.notify_va as *mut u16, q.index) };
        self.published += out.len() as u64;
        Ok(())
    }

    /// The chains of a VIRTIO_SUBMIT string, checked and translated
    /// through the domain with a hold on each page; `heads` gets the heads
    /// whose tags now have holds.  Err: (status, chain, address).
    #[allow(clippy::too_many_arguments)]
    fn translate(
        domain: DmaDomain,
        s: &[u8],
        chains: u16,
        size: u16,
        qslot: usize,
        on_device: u32,
        heads: &mut u32,
        out: &mut Vec<(u16, Vec<(u64, u32, bool)>)>,
    ) -> Result<(), (u64, u64, u64)> {
        let u16_at = |o: usize| le16(s, o);
        let bad = Err((BAD_REQUEST, 0, 0));
        let mut at = 8;
        for c in 0..chains as u64 {
            let (Some(head), Some(n)) = (u16_at(at), u16_at(at + 2)) else { return bad };
            at += 8;
            if head >= size || n == 0 || n > size {
                return Err((BAD_REQUEST, c, 0));
            }
            if (on_device | *heads) & 1 << head != 0 {
                return Err((IN_USE, c, 0)); // the device has not completed this head
            }
            *heads |= 1 << head;
            let mut pieces: Vec<(u64, u32, bool)> = Vec::new();
            for _ in 0..n {
                let Some(d) = s.get(at..at + 16) else { return bad };
                at += 16;
                let addr = u64::from_le_bytes(d[0..8].try_into().unwrap());
                let len = u32::from_le_bytes(d[8..12].try_into().unwrap()) as u64;
                let fl = u16::from_le_bytes([d[12], d[13]]);
                if len == 0 || fl & !(DESC_NEXT | DESC_WRITE) != 0 {
                    return Err((BAD_REQUEST, c, addr));
                }
                let write = fl & DESC_WRITE != 0;
                let need = if write { rights::WRITE } else { rights::READ };
                let Some(end) = addr.checked_add(len) else { return Err((DENIED, c, addr)) };
                let mut a = addr;
                while a < end {
                    let page = a & !(PAGE - 1);
                    let n = (page + PAGE).min(end) - a;
                    let pa = match domain.hold(page, tag(qslot, head), need) {
                        Ok((_, frame)) => frame * PAGE + (a - page),
                        Err(e) if e == keep_abi::Error::IN_USE || e == keep_abi::Error::NO_MEMORY => {
                            return Err((NO_RESOURCES, c, a));
                        }
                        Err(_) => return Err((DENIED, c, a)),
                    };
                    let full = pieces.len() == MEDIATED_PIECES;
                    match pieces.last_mut() {
                        Some(l) if l.0 + l.1 as u64 == pa && l.2 == write && l.1 as u64 + n <= u32::MAX as u64 => l.1 += n as u32,
                        _ if full => return Err((BAD_REQUEST, c, a)),
                        _ => pieces.push((pa, n as u32, write)),
                    }
                    a += n;
                }
            }
            out.push((head, pieces));
        }
        if at != s.len() {
            return bad;
        }
        Ok(())
    }
}

/// A fresh page for queue slot `slot`'s used ring: in its capability slot,
/// mapped at its place, a read-only copy at `give`.  (where it came from,
/// its frame).
fn new_used(slot: usize, give: u64) -> Option<(OwnPage, u64)> {
    let cap = used_cap(slot);
    let va = USED_VA + slot as u64 * PAGE;
    // From the server's bank, or the pool for a server started by hand.
    let page = keep_frames::own_page_kept(cap).map_err(|e| keep_rt::println!("pci: mediator: no page for a used ring: {e}")).ok()?;
    let made = SELF_ASPACE
        .map(cap, va, rights::READ | rights::WRITE)
        .and_then(|_| SELF_ASPACE.lookup(va))
        .and_then(|(_, frame)| SELF_ASPACE.copy_cap(cap, give, rights::READ).map(|_| frame));
    match made {
        Ok(frame) => Some((page, frame)),
        Err(e) => {
            keep_rt::println!("pci: mediator: the used-ring page of queue slot {slot}: {e}");
            free_used(slot, page);
            None
        }
    }
}

/// Destroys queue slot `slot`'s used page, and with it the driver's
/// read-only mapping of it.
fn free_used(slot: usize, page: OwnPage) {
    let _ = SELF_ASPACE.unmap(USED_VA + slot as u64 * PAGE);
    keep_frames::give_back_own_page(used_cap(slot), page);
}
