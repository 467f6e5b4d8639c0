//! `virtio_drivers::Hal` for a Keep driver: DMA memory is pages the driver
//! takes from its space bank (keep-frames: runs of pages, kept on a free
//! list when released; the memory pool for a driver started by hand with
//! one and no bank), mapped into its own address space and into
//! its DMA domain at device addresses of its choosing; the device learns
//! only those addresses, and the IOMMU lets it reach nothing else.  Buffers
//! `share` is given are copied through such pages (bounce buffers).
//!
//! The Hal's functions take no `self`, so the state is one global, set up
//! by [`init`] and torn down by [`finish`]; a driver is single-threaded.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::vec::Vec;
use core::cell::UnsafeCell;
use core::ptr::NonNull;

use keep_abi::{Aspace, DmaDomain, Result, layout, rights};
use keep_frames::{Page, Source};
use virtio_drivers::{BufferDirection, Hal, PhysAddr};

const PAGE: u64 = layout::PAGE_SIZE;

/// What the Hal works with.
pub struct DmaConfig {
    /// Where the pages come from.
    pub frames: Source,
    pub aspace: Aspace,
    pub domain: DmaDomain,
    /// DEVMEM capabilities covering the device's BARs: (slot, physical
    /// base, pages) each.
    pub bars: Vec<(u64, u64, u64)>,
    /// Where DMA pages go in the driver's address space, and in the domain.
    pub va_base: u64,
    pub iova_base: u64,
    /// Where BAR pages are mapped.
    pub mmio_va: u64,
    /// Empty slots for the page capabilities (one per DMA page).
    pub slots: Vec<u64>,
}

struct State {
    cfg: DmaConfig,
    next: u64,                   // next page index never used, from va_base / iova_base
    /// Page indices below `next` released and free to use again: each
    /// blocking request shares its buffers through fresh bounce pages, and
    /// at ever new addresses the page tables of the driver's space and of
    /// its domain would grow with every request until a mapping fails.
    free: BTreeSet<u64>,
    pages: BTreeMap<u64, u64>,   // page index -> slot of its PAGE capability
    /// Mapped BAR pages: (physical address, virtual address) each.
    mmio: Vec<(u64, u64)>,
    mmio_next: u64,
    rogue: Option<u64>,
    /// Only buffers of this length go to `rogue` (0: every buffer).
    rogue_len: u64,
    last_shared: u64,
    errors: u64,
    /// Memory the device reaches in place (no bounce): (va, len, device address).
    direct: Vec<(u64, u64, u64)>,
    /// DMA pages whose place in the driver's space shows another's page
    /// (the mediator's used ring): page index -> that page's slot.
    foreign: BTreeMap<u64, u64>,
}

struct Global(UnsafeCell<Option<State>>);
// SAFETY: drivers using this are single-threaded (one process, no threads
// touch the Hal).
unsafe impl Sync for Global {}
static STATE: Global = Global(UnsafeCell::new(None));

fn state() -> &'static mut State {
    // SAFETY: single-threaded, and no caller keeps the reference across another call.
    unsafe { (*STATE.0.get()).as_mut().expect("keep_virtio::hal::init not called") }
}

pub fn init(cfg: DmaConfig) -> Result<()> {
    let mmio_next = cfg.mmio_va;
    // SAFETY: as in state().
    unsafe { *STATE.0.get() = Some(State { cfg, next: 0, free: BTreeSet::new(), pages: BTreeMap::new(), mmio: Vec::new(), mmio_next, rogue: None, rogue_len: 0, last_shared: 0, errors: 0, direct: Vec::new(), foreign: BTreeMap::new() }) };
    Ok(())
}

/// Unmaps and reclaims every DMA page and unmaps the BARs; returns the
/// slots.  The device must be reset first (dropping the virtio driver does).
pub fn finish() -> Vec<u64> {
    let s = state();
    let pages: Vec<u64> = s.pages.keys().copied().collect();
    for p in pages {
        release(s, p);
    }
    for (_, va) in s.mmio.drain(..) {
        let _ = s.cfg.aspace.unmap(va);
    }
    // SAFETY: as in state(); s is not used after this.
    let st = unsafe { (*STATE.0.get()).take().unwrap() };
    st.cfg.slots
}

/// From now on `share` hands the device `addr` instead of a buffer the
/// driver mapped: a rogue driver pointing its device at memory it does not
/// hold (the isolation tests).  None restores honest behaviour.
pub fn set_rogue(addr: Option<u64>) {
    let s = state();
    s.rogue = addr;
    s.rogue_len = 0;
}

/// The same for the buffers of `len` bytes only (a request's data, not its
/// header and status).
pub fn set_rogue_buffer(addr: u64, len: u64) {
    let s = state();
    s.rogue = Some(addr);
    s.rogue_len = len;
}

/// The device address `share` gave last (unmapped again by `unshare`).
pub fn last_shared() -> u64 {
    state().last_shared
}

/// From now on `share` hands the device `iova + (p - va)` for a buffer at
/// `p` inside `va..va + len`, without copying: memory that is mapped in the
/// driver's space there and in its DMA domain at `iova` (a client's
/// dataspace pinned for the driver; the driver's own request headers).
pub fn add_direct(va: u64, len: u64, iova: u64) {
    state().direct.push((va, len, iova));
}

/// The driver's virtual address of device address `iova` in a DMA page the
/// Hal made (the mediated transport reads its shadow rings there).
pub fn dma_va(iova: u64) -> Option<u64> {
    let s = state();
    let p = iova.checked_sub(s.cfg.iova_base)? / PAGE;
    s.pages.contains_key(&p).then(|| s.cfg.va_base + (iova - s.cfg.iova_base))
}

/// An empty slot of the Hal's, for a capability the driver receives
/// (given back with [`give_slot`] or kept by [`adopt`]).
pub fn take_slot() -> Option<u64> {
    state().cfg.slots.pop()
}

pub fn give_slot(slot: u64) {
    state().cfg.slots.push(slot);
}

/// Shows the PAGE at `cap`, read-only, where the Hal's DMA page holding
/// device address `dev` is mapped in the driver's space: a mediated queue's
/// used ring, which only the device writes.  The Hal's own page stays
/// mapped in the domain; both go when the DMA memory is deallocated.
pub fn adopt(dev: u64, cap: u64) -> Result<()> {
    let s = state();
    let p = index(s, dev);
    let va = s.cfg.va_base + p * PAGE;
    if !s.pages.contains_key(&p) || s.foreign.contains_key(&p) {
        return Err(keep_abi::Error::INVALID_ARG);
    }
    s.cfg.aspace.unmap(va)?;
    if let Err(e) = s.cfg.aspace.map(cap, va, rights::READ) {
        let _ = s.cfg.aspace.map(s.pages[&p], va, rights::READ | rights::WRITE);
        return Err(e);
    }
    s.foreign.insert(p, cap);
    Ok(())
}

/// The driver's DMA domain.
pub fn domain() -> DmaDomain {
    state().cfg.domain
}

/// Forgets the direct range at `va` (before its pages are unpinned).
pub fn remove_direct(va: u64) {
    state().direct.retain(|&(v, _, _)| v != va);
}

/// DMA pages now mapped, and Hal operations that failed (a failing Hal panics
/// inside virtio-drivers otherwise, so failures are counted and reported).
pub fn stats() -> (u64, u64) {
    let s = state();
    (s.pages.len() as u64, s.errors)
}

/// The first of `n` free page indices in a row: the lowest run of released
/// ones, or new ones from `next`.
fn take_indices(s: &mut State, n: u64) -> u64 {
    let mut run = (0, 0); // (first, length)
    for &p in &s.free {
        run = if run.1 > 0 && p == run.0 + run.1 { (run.0, run.1 + 1) } else { (p, 1) };
        if run.1 == n {
            for q in run.0..run.0 + n {
                s.free.remove(&q);
            }
            return run.0;
        }
    }
    s.next += n;
    s.next - n
}

fn alloc_pages(s: &mut State, n: u64) -> Option<(u64, u64)> {
    let first = take_indices(s, n);
    for i in 0..n {
        let p = first + i;
        let Some(slot) = s.cfg.slots.pop() else {
            undo(s, first, p, n);
            return None;
        };
        let va = s.cfg.va_base + p * PAGE;
        let page = s.cfg.frames.page(slot);
        if let Ok(Page::Reused(empty)) = page {
            s.cfg.slots.push(empty);
        }
        let ok = page.is_ok()
            && s.cfg.aspace.map(slot, va, rights::READ | rights::WRITE).is_ok()
            && s.cfg.domain.map(slot, s.cfg.iova_base + p * PAGE, rights::READ | rights::WRITE).is_ok();
        if page.is_err() {
            s.cfg.slots.push(slot);
            s.errors += 1;
            undo(s, first, p, n);
            return None;
        }
        s.pages.insert(p, slot);
        if !ok {
            s.errors += 1;
            undo(s, first, p + 1, n);
            return None;
        }
        if matches!(page, Ok(Page::Reused(_))) {
            // A page given back earlier: the device and the driver expect zeros.
            // SAFETY: mapped writable at va just now, and nothing else uses it.
            unsafe { core::ptr::write_bytes(va as *mut u8, 0, PAGE as usize) };
        }
    }
    let va = s.cfg.va_base + first * PAGE;
    Some((s.cfg.iova_base + first * PAGE, va))
}

/// A failed allocation of `n` pages from `first`: the pages made up to
/// `made` go back, and every index is free again.
fn undo(s: &mut State, first: u64, made: u64, n: u64) {
    for p in first..made {
        release(s, p);
    }
    s.free.extend(first..first + n);
}

/// The page index of device address `dev`.
fn index(s: &State, dev: u64) -> u64 {
    (dev - s.cfg.iova_base) / PAGE
}

fn release(s: &mut State, p: u64) {
    if let Some(cap) = s.foreign.remove(&p) {
        let _ = s.cfg.aspace.unmap(s.cfg.va_base + p * PAGE);
        let _ = s.cfg.aspace.delete_cap(cap);
        s.cfg.slots.push(cap);
    }
    if let Some(slot) = s.pages.remove(&p) {
        let _ = s.cfg.domain.unmap(s.cfg.iova_base + p * PAGE);
        let _ = s.cfg.aspace.unmap(s.cfg.va_base + p * PAGE);
        match s.cfg.frames.give_back(slot) {
            Ok(Some(empty)) => s.cfg.slots.push(empty),
            Ok(None) => {}
            Err(_) => {
                s.errors += 1;
                s.cfg.slots.push(slot);
            }
        }
        s.free.insert(p);
    }
}

pub struct KeepHal;

// SAFETY: dma_alloc returns zeroed pages (fresh ones are, reused ones are
// cleared), mapped at distinct
// addresses that nothing else uses until dma_dealloc; mmio_phys_to_virt maps
// the pages asked for; share copies through pages of its own.
unsafe impl Hal for KeepHal {
    fn dma_alloc(pages: usize, _dir: BufferDirection) -> (PhysAddr, NonNull<u8>) {
        let s = state();
        let (iova, va) = alloc_pages(s, pages as u64).expect("DMA memory: out of slots, memory or account frames");
        (iova, NonNull::new(va as *mut u8).unwrap())
    }

    unsafe fn dma_dealloc(paddr: PhysAddr, _vaddr: NonNull<u8>, pages: usize) -> i32 {
        let s = state();
        let first = index(s, paddr);
        for p in first..first + pages as u64 {
            release(s, p);
        }
        0
    }

    unsafe fn mmio_phys_to_virt(paddr: PhysAddr, size: usize) -> NonNull<u8> {
        let s = state();
        let first = paddr & !(PAGE - 1);
        let pages = (paddr + size as u64 - first).div_ceil(PAGE);
        // Mapped already, page after page (a transport made again after a
        // device reset asks for the same structures): the same addresses,
        // so that resets do not use up the BAR wrappers' mapping records.
        if let Some(i) = s.mmio.iter().position(|&(pa, _)| pa == first)
            && (0..pages as usize).all(|k| s.mmio.get(i + k).is_some_and(|&(pa, va)| {
                pa == first + k as u64 * PAGE && va == s.mmio[i].1 + k as u64 * PAGE
            }))
        {
            return NonNull::new((s.mmio[i].1 + (paddr - first)) as *mut u8).unwrap();
        }
        let va0 = s.mmio_next;
        let mut pa = first;
        while pa < paddr + size as u64 {
            let va = s.mmio_next;
            let &(cap, base, _) = s.cfg.bars.iter().find(|&&(_, b, n)| pa >= b && pa < b + n * PAGE)
                .expect("MMIO outside the BARs the driver was given");
            s.cfg.aspace
                .map_device(cap, (pa - base) / PAGE, va, rights::READ | rights::WRITE)
                .expect("map a BAR page");
            s.mmio.push((pa, va));
            s.mmio_next += PAGE;
            pa += PAGE;
        }
        NonNull::new((va0 + (paddr - first)) as *mut u8).unwrap()
    }

    unsafe fn share(buffer: NonNull<[u8]>, dir: BufferDirection) -> PhysAddr {
        let s = state();
        if let Some(a) = s.rogue {
            if s.rogue_len == 0 || s.rogue_len == buffer.len() as u64 {
                return a;
            }
        }
        let (p, len) = (buffer.as_ptr() as *const u8 as u64, buffer.len() as u64);
        if let Some(&(va, _, iova)) = s.direct.iter().find(|&&(va, l, _)| p >= va && p - va <= l && len <= l - (p - va)) {
            return iova + (p - va);
        }
        let (iova, va) = alloc_pages(s, len.div_ceil(PAGE).max(1)).expect("bounce buffer");
        s.last_shared = iova;
        if dir != BufferDirection::DeviceToDriver {
            // SAFETY: the caller's buffer is valid for len bytes; va has room for them.
            unsafe { core::ptr::copy_nonoverlapping(buffer.as_ptr() as *const u8, va as *mut u8, len as usize) };
        }
        iova
    }

    unsafe fn unshare(paddr: PhysAddr, buffer: NonNull<[u8]>, dir: BufferDirection) {
        let s = state();
        if s.rogue == Some(paddr) {
            return;
        }
        let len = buffer.len() as u64;
        if s.direct.iter().any(|&(_, l, iova)| paddr >= iova && paddr - iova < l.max(1)) {
            return;
        }
        let first = index(s, paddr);
        let va = s.cfg.va_base + first * PAGE + (paddr & (PAGE - 1));
        if dir != BufferDirection::DriverToDevice {
            // SAFETY: the bounce pages at va hold len bytes; the buffer is valid for them.
            unsafe { core::ptr::copy_nonoverlapping(va as *const u8, buffer.as_ptr() as *mut u8, len as usize) };
        }
        for p in first..first + len.div_ceil(PAGE).max(1) {
            release(s, p);
        }
    }
}
