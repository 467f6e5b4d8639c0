//! The PCI server (docs/pci.md, "The PCI server"; protocol in lib.rs).
//! It answers through the generated `dispatch` (protocol.rs, from
//! abi/services/pci.toml), one method of [`Handler`] per request, after
//! it has checked that the session a payload names is live.
//! It is given DEVMEM, INTERRUPT and an account; it keeps bus 0's configuration space
//! (the ECAM window) to itself, lists the functions, and opens a session
//! per function for one driver at a time, with a DMA domain the function
//! is attached to.
//!
//! Started from the system description, its drivers call it through the
//! name service's senders: each may open only the functions its grant in
//! the description selects (asked of init once, `names::GRANT`), and an
//! OPEN of a function that the same described driver holds already takes
//! it over: a restarted driver gets its function back, reset.

#![no_std]
#![no_main]

extern crate alloc;

mod mediator;

use alloc::vec::Vec;

use keep_abi::proto::Answer;
use keep_abi::{
    ACCOUNT, Account, Msg, DEVMEM, DevMem, DmaDomain, Error, INTERRUPT, Interrupt, MEMORY, Return, SELF_ASPACE, SELF_PROCESS, Tag,
    layout, recv, rights, slot, ty,
};
use keep_pci::budget::{self, Funding};
use keep_spacebank::Bank;
use keep_loader::SlotPool;
use keep_pci::*;
use keep_rt::println;
use keep_system::grant::PciSelector;
use keep_system::names;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const ECAM_SLOT: u64 = slot::FIRST_FREE + 1;
/// q35's ECAM base (its MCFG table says so; user level reads no ACPI yet).
const ECAM_BASE: u64 = 0xb000_0000;
const CFG_VA: u64 = 0x0000_4000_0000_0000;

#[derive(Clone, Copy, Default)]
struct Bar {
    base: u64,
    size: u64,
    io: bool,
    upper: bool, // the high half of a 64-bit BAR
}

/// The function's MSI-X capability: where its table lies and how long it is.
#[derive(Clone, Copy)]
struct Msix {
    cap: u64,
    bar: usize,
    offset: u64,
    entries: u64,
}

struct Func {
    sid: u16,
    vendor: u16,
    device: u16,
    class: u32,
    bars: [Bar; 6],
    msix_bars: [bool; 6],
    read_only: Vec<(u64, u64)>, // MSI and MSI-X capability ranges
    msix: Option<Msix>,
    msi: Option<u64>,       // the MSI capability's offset (used when there is no MSI-X)
    vectors: Vec<(u64, u64)>, // (entry, MSI line) handed to the session's driver
    grants: Vec<u64>,         // wrappers of the BARs and lines handed to it: destroyed at RELEASE
    generation: u64,
    domain: Option<u64>, // slot of the DMA domain while a session is open
    /// The session's account (its domain and wrappers are made from it),
    /// and its handle in the server's bank when the bank pays for it.
    account: Option<(Account, Option<u64>)>,
    opener: u64,         // the payload of the capability the session was opened through
    sizing: [bool; 6],
    /// No IOMMU confines this session's DMA: a virtio function is mediated
    /// (mediator.rs), any other may not master the bus.
    unconfined: bool,
    virtio: Option<mediator::Virtio>,
}

fn cfg_ptr(sid: u16, off: u64) -> *mut u32 {
    (CFG_VA + ((sid as u64) << 12) + off) as *mut u32
}
fn rd(sid: u16, off: u64) -> u32 {
    // SAFETY: bus 0's configuration pages are mapped at CFG_VA (main).
    unsafe { core::ptr::read_volatile(cfg_ptr(sid, off)) }
}
fn wr(sid: u16, off: u64, v: u32) {
    // SAFETY: as in rd, and writable.
    unsafe { core::ptr::write_volatile(cfg_ptr(sid, off), v) }
}

/// Sizes the BARs (decode off meanwhile, every value restored).
fn probe_bars(sid: u16) -> [Bar; 6] {
    let mut bars = [Bar::default(); 6];
    let cmd = rd(sid, 4);
    wr(sid, 4, cmd & 0xffff & !3);
    let mut i = 0;
    while i < 6 {
        let off = 0x10 + 4 * i as u64;
        let orig = rd(sid, off);
        wr(sid, off, 0xffff_ffff);
        let lo = rd(sid, off);
        wr(sid, off, orig);
        if orig & 1 == 1 {
            let mask = (lo & !3) as u64 | 0xffff_0000_0000_0000 | 0xffff_0000;
            bars[i] = Bar { base: (orig & !3) as u64, size: (!mask).wrapping_add(1) & 0xffff, io: true, upper: false };
        } else if (orig >> 1) & 3 == 2 && i < 5 {
            let orig_hi = rd(sid, off + 4);
            wr(sid, off + 4, 0xffff_ffff);
            let hi = rd(sid, off + 4);
            wr(sid, off + 4, orig_hi);
            let mask = (hi as u64) << 32 | (lo & !0xf) as u64;
            let size = if mask == 0 { 0 } else { (!mask).wrapping_add(1) };
            bars[i] = Bar { base: (orig_hi as u64) << 32 | (orig & !0xf) as u64, size, io: false, upper: false };
            bars[i + 1] = Bar { base: 0, size, io: false, upper: true };
            i += 1;
        } else {
            let mask = (lo & !0xf) as u64;
            let size = if mask == 0 { 0 } else { (!mask).wrapping_add(1) & 0xffff_ffff };
            bars[i] = Bar { base: (orig & !0xf) as u64, size, io: false, upper: false };
        }
        i += 1;
    }
    wr(sid, 4, cmd & 0xffff);
    bars
}

fn scan() -> Vec<Func> {
    let mut out = Vec::new();
    for sid in 0..256u16 {
        let id = rd(sid, 0);
        if id & 0xffff == 0xffff {
            continue;
        }
        let header = (rd(sid, 0xc) >> 16) & 0x7f;
        let mut f = Func {
            sid,
            vendor: id as u16,
            device: (id >> 16) as u16,
            class: rd(sid, 8) >> 8,
            bars: [Bar::default(); 6],
            msix_bars: [false; 6],
            read_only: Vec::new(),
            msix: None,
            msi: None,
            vectors: Vec::new(),
            grants: Vec::new(),
            generation: 0,
            domain: None,
            account: None,
            opener: 0,
            sizing: [false; 6],
            unconfined: false,
            virtio: None,
        };
        if header == 0 {
            f.bars = probe_bars(sid);
        }
        if rd(sid, 4) >> 16 & 0x10 != 0 {
            let mut ptr = (rd(sid, 0x34) & 0xfc) as u64;
            let mut n = 0;
            while ptr >= 0x40 && n < 48 {
                let w = rd(sid, ptr);
                match w & 0xff {
                    0x05 => {
                        f.read_only.push((ptr, 24));
                        f.msi = Some(ptr);
                    }
                    // virtio's capabilities, among them the window into the
                    // BARs through configuration space (VIRTIO_PCI_CAP_PCI_CFG),
                    // which would reach the mediated common configuration.
                    0x09 if id & 0xffff == 0x1af4 => f.read_only.push((ptr, ((w >> 16) & 0xff).max(4) as u64)),
                    0x11 => {
                        f.read_only.push((ptr, 12));
                        let table = rd(sid, ptr + 4);
                        f.msix = Some(Msix { cap: ptr, bar: (table & 7) as usize % 6, offset: (table & !7) as u64, entries: ((w >> 16) & 0x7ff) as u64 + 1 });
                        f.msix_bars[(rd(sid, ptr + 4) & 7) as usize % 6] = true;
                        f.msix_bars[(rd(sid, ptr + 8) & 7) as usize % 6] = true;
                    }
                    _ => {}
                }
                ptr = ((w >> 8) & 0xfc) as u64;
                n += 1;
            }
        }
        out.push(f);
    }
    out
}

struct Server {
    slots: SlotPool,
    funcs: Vec<Func>,
    drop_after_reply: Vec<u64>,
    msi_lines: u64, // MSI lines handed out (bit n: line IRQ_LINES + n)
    devmem_base: u64,
    /// Described drivers' grants, asked of init once: (payload, selector).
    grants: Vec<(u64, PciSelector)>,
    /// The function of the session the request came through (`admit`).
    current: usize,
    /// Set by QUIT: every session is released once the reply is sent.
    quit: bool,
}

/// Where the server maps an MSI-X table page while it writes an entry.
const MSIX_VA: u64 = 0x0000_4800_0000_0000;

type Reply = (u64, [u64; 3], Vec<u64>); // status, words, capability slots to send

fn status(s: u64) -> Reply {
    (s, [0; 3], Vec::new())
}

impl Server {
    /// The functions a described driver (a name-service payload) may open:
    /// its grant from the description, asked of init the first time.
    fn selector(&mut self, payload: u64) -> Option<PciSelector> {
        if let Some(&(_, sel)) = self.grants.iter().find(|(p, _)| *p == payload) {
            return Some(sel);
        }
        let text = match names::grant(names::NAMES_SLOT, payload, keep_rt::ipc_buffer()) {
            Ok(t) => t,
            Err(e) => {
                println!("pci: no grant for a described driver ({})", names::status::name(e));
                return None;
            }
        };
        match keep_system::grant::pci(&text) {
            Ok(sel) => {
                self.grants.push((payload, sel));
                Some(sel)
            }
            Err(why) => {
                println!("pci: a described driver's grant: {why}");
                None
            }
        }
    }

    fn open(&mut self, ids: u64, instance: u64, payload: u64) -> Reply {
        let (vendor, device) = (ids as u16, (ids >> 16) as u16);
        let sel = if payload == 0 {
            None
        } else {
            match self.selector(payload) {
                Some(sel) => Some(sel),
                None => return status(DENIED),
            }
        };
        let wanted = |f: &Func| f.vendor == vendor && f.device == device;
        let Some(idx) = self.funcs.iter().enumerate().filter(|(_, f)| wanted(f)).nth(instance as usize).map(|(i, _)| i) else {
            return status(NOT_FOUND);
        };
        let f = &self.funcs[idx];
        if sel.is_some_and(|sel| !sel.matches(f.sid, f.vendor, f.device, f.class)) {
            return status(DENIED);
        }
        // Bridges (class 06: q35's host bridge holds the ECAM base and the
        // RAM and SMRAM windows, the LPC bridge the chipset's register block
        // and the INTx routing) place the machine's memory, ports and
        // interrupts: a driver writing their registers could move them under
        // the kernel, and no driver of Keep's needs one.
        if f.class >> 16 == 0x06 {
            return status(DENIED);
        }
        if f.domain.is_some() {
            if payload == 0 || f.opener != payload {
                return status(IN_USE);
            }
            // The same described driver again: its last instance ended (or
            // is being replaced).  Take the function back from that
            // session first: MSIs off and unrouted, bus mastering off, its
            // domain destroyed (every page it pinned unpinned); the new
            // driver resets the device itself (virtio: status 0).
            println!("pci: {} opened again by its driver: the previous session is released", sid_string(f.sid as u64));
            self.release(idx);
        }
        let (Some(d), Some(s)) = (self.slots.alloc(), self.slots.alloc()) else {
            return status(NO_RESOURCES);
        };
        let Some(acct) = self.session_account() else {
            self.slots.free(d);
            self.slots.free(s);
            return status(NO_RESOURCES);
        };
        self.funcs[idx].account = Some(acct);
        let account = acct.0;
        let sid = self.funcs[idx].sid;
        let mut unconfined = false;
        let made = account.create_dma_domain(d).and_then(|_| match DmaDomain(d).attach(ECAM_SLOT, sid as u64) {
            Err(Error::BAD_STATE) => {
                unconfined = true; // no IOMMU: the domain confines nothing (INFO says so)
                Ok(())
            }
            r => r,
        });
        let virtio = if unconfined && made.is_ok() && self.funcs[idx].vendor == 0x1af4 {
            let f = &self.funcs[idx];
            let bars = f.bars;
            // The mediator reaches the function's BAR from now on.
            wr(sid, 4, (rd(sid, 4) & 0xffff) | 0x2);
            mediator::Virtio::new(&|off| rd(sid, off), &|b| bars.get(b).map_or(0, |x| x.base), self.devmem_base, idx)
        } else {
            None
        };
        if unconfined && virtio.is_none() {
            // Nothing confines this function's DMA: it masters no bus.
            wr(sid, 4, (rd(sid, 4) & 0xffff) & !0x4);
        }
        let f = &mut self.funcs[idx];
        f.unconfined = unconfined;
        f.virtio = virtio;
        let session = f.generation << 16 | (idx as u64 + 1);
        if made.is_err() || SELF_PROCESS.mint(s, session, rights::WRITE | rights::CALL).is_err() {
            println!("pci: cannot open {}: {:?}", sid_string(sid as u64), made);
            if let Some(v) = f.virtio.take() {
                v.finish(idx);
            }
            let _ = account.destroy(d);
            let _ = SELF_ASPACE.delete_cap(d);
            let _ = SELF_ASPACE.delete_cap(s);
            self.slots.free(d);
            self.slots.free(s);
            self.end_account(idx);
            return status(NO_RESOURCES);
        }
        f.domain = Some(d);
        f.opener = payload;
        f.sizing = [false; 6];
        self.drop_after_reply.push(s);
        (OK, [sid as u64, 0, 0], alloc::vec![s, d])
    }

    /// Writes MSI-X table entry `entry` of `f` (address, data, vector control).
    fn msix_entry(&self, f: &Func, m: &Msix, entry: u64, addr: u64, data: u32, masked: bool) -> Result<(), Error> {
        let pa = f.bars[m.bar].base + m.offset + 16 * entry;
        let page = (pa & !0xfff) - self.devmem_base;
        SELF_ASPACE.map_device(slot::DEVMEM, page / 4096, MSIX_VA, rights::READ | rights::WRITE)?;
        let p = (MSIX_VA + (pa & 0xfff)) as *mut u32;
        // SAFETY: the table's page is mapped at MSIX_VA; an entry is 16
        // bytes, 16-aligned, so it lies within the page.
        unsafe {
            core::ptr::write_volatile(p.add(3), 1); // masked while it changes
            core::ptr::write_volatile(p, addr as u32);
            core::ptr::write_volatile(p.add(1), (addr >> 32) as u32);
            core::ptr::write_volatile(p.add(2), data);
            core::ptr::write_volatile(p.add(3), masked as u32);
        }
        SELF_ASPACE.unmap(MSIX_VA)
    }

    /// GET_MSI: MSI-X table entry `entry` (or, for a function with MSI
    /// only, its one message, entry 0) routed through a free MSI line.
    fn msi(&mut self, idx: usize, entry: u64) -> Reply {
        let f = &self.funcs[idx];
        let max = match (f.msix, f.msi) {
            (Some(m), _) => m.entries,
            (None, Some(_)) => 1,
            (None, None) => return status(NOT_FOUND),
        };
        if entry >= max {
            return status(BAD_REQUEST);
        }
        if f.vectors.iter().any(|&(e, _)| e == entry) {
            return status(IN_USE);
        }
        let Some(s) = self.slots.alloc() else {
            return status(NO_RESOURCES);
        };
        let sid = f.sid as u64;
        // The first free line the kernel routes: another PCI server (a
        // test's, netd's beside the system description's) may hold some;
        // the kernel says IN_USE for those and they are skipped.
        let mut routed = None;
        for n in (0..layout::MSI_LINES).filter(|n| self.msi_lines & 1 << n == 0) {
            let line = layout::IRQ_LINES + n;
            match INTERRUPT.route_msi(line, ECAM_SLOT, sid) {
                Ok(m) => {
                    routed = Some((n, line, m));
                    break;
                }
                Err(Error::IN_USE) => continue,
                Err(e) => {
                    println!("pci: ROUTE_MSI of line {line} for {}: {e}", sid_string(sid));
                    break;
                }
            }
        }
        let Some((n, line, (addr, data))) = routed else {
            self.slots.free(s);
            return status(NO_RESOURCES);
        };
        let f = &self.funcs[idx];
        let sid = f.sid;
        let cmd = rd(sid, 4) & 0xffff;
        wr(sid, 4, cmd | 0x2); // the table lies in memory space
        let programmed = if let Some(m) = f.msix {
            let ctl = rd(sid, m.cap);
            wr(sid, m.cap, ctl | 1 << 31); // MSI-X on (the function mask stays as it is)
            self.msix_entry(f, &m, entry, addr, data as u32, false)
        } else {
            let c = f.msi.unwrap();
            let ctl = rd(sid, c);
            let wide = ctl >> 16 & 0x80 != 0;
            wr(sid, c + 4, addr as u32);
            if wide {
                wr(sid, c + 8, (addr >> 32) as u32);
            }
            let data_off = if wide { c + 12 } else { c + 8 };
            let old = rd(sid, data_off & !3);
            wr(sid, data_off, (old & 0xffff_0000) | data as u32);
            wr(sid, c, (ctl & !(0x70 << 16)) | 1 << 16); // one message, MSI on
            Ok(())
        };
        if let Err(e) = programmed.and_then(|_| INTERRUPT.restrict(line, 1, s)) {
            println!("pci: cannot program MSI entry {entry} of {}: {e}", sid_string(sid as u64));
            let _ = INTERRUPT.unroute_msi(line);
            self.slots.free(s);
            return status(NO_RESOURCES);
        }
        self.msi_lines |= 1 << n;
        self.funcs[idx].vectors.push((entry, line));
        let Some(t) = self.hand_out(idx, s) else {
            return status(NO_RESOURCES); // the line stays routed until RELEASE
        };
        self.drop_after_reply.push(t);
        (OK, [line, addr, data], alloc::vec![t])
    }

    /// The device capability in slot `s` (the server's own restricted copy),
    /// handed to the session's driver as a wrapper that RELEASE destroys:
    /// with it go the driver's mappings of the BAR and its bindings of the
    /// line (docs/pci.md, "Taking a device back").  Returns the slot of
    /// the copy to send; `s` is freed either way.
    fn hand_out(&mut self, idx: usize, s: u64) -> Option<u64> {
        let account = self.account(idx);
        let w = self.slots.alloc();
        let t = self.slots.alloc();
        let made = match (w, t) {
            (Some(w), Some(t)) => account
                .create_wrapper(s, w, rights::READ | rights::WRITE)
                .and_then(|_| SELF_ASPACE.copy_cap(w, t, rights::READ | rights::WRITE).inspect_err(|_| {
                    let _ = account.destroy(w);
                    let _ = SELF_ASPACE.delete_cap(w);
                }))
                .is_ok(),
            _ => false,
        };
        let _ = SELF_ASPACE.delete_cap(s);
        self.slots.free(s);
        if !made {
            w.into_iter().chain(t).for_each(|x| self.slots.free(x));
            return None;
        }
        self.funcs[idx].grants.push(w.unwrap());
        t
    }

    /// Every MSI the session's driver was given: masked, unrouted (its
    /// binding goes with it), MSI and MSI-X off.
    fn release_msi(&mut self, idx: usize) {
        let vectors = core::mem::take(&mut self.funcs[idx].vectors);
        let f = &self.funcs[idx];
        for &(entry, line) in &vectors {
            if let Some(m) = f.msix {
                let _ = self.msix_entry(f, &m, entry, 0, 0, true);
            }
            let _ = INTERRUPT.unroute_msi(line);
            self.msi_lines &= !(1 << (line - layout::IRQ_LINES));
        }
        if let Some(m) = f.msix {
            wr(f.sid, m.cap, rd(f.sid, m.cap) & !(1 << 31));
        }
        if let Some(c) = f.msi {
            wr(f.sid, c, rd(f.sid, c) & !(1 << 16));
        }
    }

    fn release(&mut self, idx: usize) -> Reply {
        let account = self.account(idx);
        for w in core::mem::take(&mut self.funcs[idx].grants) {
            let _ = account.destroy(w);
            let _ = SELF_ASPACE.delete_cap(w);
            self.slots.free(w);
        }
        self.release_msi(idx);
        let f = &mut self.funcs[idx];
        if let Some(v) = f.virtio.take() {
            v.finish(idx); // the device reset: it uses none of the rings any more
        }
        if let Some(d) = f.domain.take() {
            // Bus mastering off first: the device issues no more DMA.
            let cmd = rd(f.sid, 4) & 0xffff;
            wr(f.sid, 4, cmd & !0x6);
            let _ = account.destroy(d); // detaches the function, unpins every page
            let _ = SELF_ASPACE.delete_cap(d);
            self.slots.free(d);
        }
        f.generation += 1;
        self.end_account(idx);
        status(OK)
    }

    /// The account session `idx`'s objects are made from.
    fn account(&self, idx: usize) -> Account {
        self.funcs[idx].account.map_or(ACCOUNT, |(a, _)| a)
    }

    /// A new session's account of budget::SESSION_FRAMES frames, from the
    /// server's bank or the pool (budget::funding); the server's own where
    /// it has neither.  None: the bank or the pool cannot pay.
    fn session_account(&mut self) -> Option<(Account, Option<u64>)> {
        let has_bank = SELF_ASPACE.identify_cap(keep_frames::INSTANCE_BANK).is_ok_and(|c| c.live && c.ty == ty::SENDER);
        match budget::funding(has_bank, keep_frames::has_pool()) {
            Funding::Shared => Some((ACCOUNT, None)),
            Funding::Bank => {
                let a = self.slots.alloc()?;
                match Bank(keep_frames::INSTANCE_BANK).alloc_account(budget::SESSION_FRAMES, a) {
                    Ok(h) => Some((Account(a), Some(h))),
                    Err(e) => {
                        println!("pci: no account for a session from the bank: {e:?}");
                        self.slots.free(a);
                        None
                    }
                }
            }
            Funding::Pool => {
                let a = self.slots.alloc()?;
                let made = MEMORY.create_account(a).and_then(|_| {
                    MEMORY.donate(a, budget::SESSION_FRAMES).inspect_err(|_| {
                        let _ = Account(a).destroy_all(slot::MEMORY);
                    })
                });
                match made {
                    Ok(()) => Some((Account(a), None)),
                    Err(e) => {
                        println!("pci: no account for a session from the pool: {e}");
                        let _ = SELF_ASPACE.delete_cap(a);
                        self.slots.free(a);
                        None
                    }
                }
            }
        }
    }

    /// Ends session `idx`'s account (its objects destroyed already): every
    /// frame back to the bank or the pool that paid for it.
    fn end_account(&mut self, idx: usize) {
        let Some((a, handle)) = self.funcs[idx].account.take() else { return };
        if a.0 == ACCOUNT.0 {
            return;
        }
        match handle {
            Some(h) => {
                let _ = Bank(keep_frames::INSTANCE_BANK).free(h);
            }
            None => {
                let _ = a.destroy_all(slot::MEMORY);
            }
        }
        let _ = SELF_ASPACE.delete_cap(a.0);
        self.slots.free(a.0);
    }

    fn config_read(&self, f: &Func, off: u64) -> Reply {
        if off & 3 != 0 || off >= 4096 {
            return status(BAD_REQUEST);
        }
        if (0x10..0x28).contains(&off) {
            let i = ((off - 0x10) / 4) as usize;
            if f.sizing[i] {
                let b = f.bars[i];
                let mask = if b.size == 0 { 0 } else { !(b.size - 1) };
                let v = if b.upper {
                    (mask >> 32) as u32
                } else if b.io {
                    (mask as u32 & !3) | 1
                } else {
                    (mask as u32 & !0xf) | (rd(f.sid, off) & 0xf)
                };
                return (OK, [v as u64, 0, 0], Vec::new());
            }
        }
        (OK, [rd(f.sid, off) as u64, 0, 0], Vec::new())
    }

    fn config_write(&mut self, idx: usize, off: u64, v: u64) -> Reply {
        let f = &mut self.funcs[idx];
        if off & 3 != 0 || off >= 4096 || v >> 32 != 0 {
            return status(BAD_REQUEST);
        }
        let v = v as u32;
        match off {
            0x04 if f.unconfined && f.virtio.is_none() && v & 0x4 != 0 => return status(DENIED),
            0x04 => {
                let keep = rd(f.sid, 4) & 0xffff & !0x406;
                wr(f.sid, 4, keep | (v & 0x406));
            }
            0x10..0x28 => {
                let i = ((off - 0x10) / 4) as usize;
                if v == 0xffff_ffff {
                    f.sizing[i] = true;
                } else if v == rd(f.sid, off) {
                    f.sizing[i] = false;
                } else {
                    return status(DENIED);
                }
            }
            0x3c => {
                let cur = rd(f.sid, 0x3c);
                wr(f.sid, 0x3c, (cur & !0xff) | (v & 0xff));
            }
            _ if off < 0x40 => return status(DENIED),
            _ if f.read_only.iter().any(|&(a, n)| off + 4 > a && off < a + n) => return status(DENIED),
            _ => wr(f.sid, off, v),
        }
        status(OK)
    }

    fn bar(&mut self, idx: usize, i: u64) -> Reply {
        let f = &self.funcs[idx];
        let Some(b) = f.bars.get(i as usize).copied() else {
            return status(BAD_REQUEST);
        };
        if b.size == 0 || b.upper {
            return status(NOT_FOUND);
        }
        if b.io || f.msix_bars[i as usize] {
            return status(DENIED);
        }
        let mut first = b.base & !0xfff;
        let mut pages = (b.base + b.size - first).div_ceil(4096);
        // Mediated: the page of the common configuration structure stays the server's.
        if let Some(v) = f.virtio.as_ref().filter(|v| v.common_bar == i as usize) {
            if v.common_page == first && pages > 1 {
                first += 4096;
                pages -= 1;
            } else if v.common_page == first + (pages - 1) * 4096 && pages > 1 {
                pages -= 1;
            } else {
                return status(DENIED);
            }
        }
        let Some(s) = self.slots.alloc() else {
            return status(NO_RESOURCES);
        };
        if DEVMEM.restrict(first, pages, s).is_err() {
            self.slots.free(s);
            return status(NO_RESOURCES); // e.g. a BAR above 4 GiB, beyond DEVMEM
        }
        let Some(t) = self.hand_out(idx, s) else {
            return status(NO_RESOURCES);
        };
        self.drop_after_reply.push(t);
        (OK, [first.max(b.base), (first + pages * 4096).min(b.base + b.size) - first.max(b.base), 0], alloc::vec![t])
    }

    /// The mediator's calls (mediator.rs); NOT_FOUND for a session that is
    /// not mediated.
    fn mediate(&mut self, idx: usize, label: u64, w: [u64; 4], string: Option<&[u8]>) -> Reply {
        let f = &mut self.funcs[idx];
        let domain = DmaDomain(f.domain.unwrap());
        let Some(v) = f.virtio.as_mut() else { return status(NOT_FOUND) };
        match label {
            VIRTIO_READ => match v.virtio_read(w[0], w[1]) {
                Ok(x) => (OK, [x, 0, 0], Vec::new()),
                Err(st) => status(st),
            },
            VIRTIO_WRITE => match v.virtio_write(w[0], w[1], w[2]) {
                Ok(()) => status(OK),
                Err(st) => status(st),
            },
            VIRTIO_QUEUE => {
                let Some(give) = self.slots.alloc() else { return status(NO_RESOURCES) };
                match v.queue(domain, w[0], w[1], w[2], give) {
                Ok(()) => {
                    self.drop_after_reply.push(give);
                    (OK, [0, 0, 0], alloc::vec![give])
                }
                Err((st, addr)) => {
                    self.slots.free(give);
                    println!("pci: mediator: {} queue {}: used ring at {addr:#x} refused ({})", sid_string(f.sid as u64), w[0], status_name(st));
                    (st, [0, addr, 0], Vec::new())
                }
                }
            }
            VIRTIO_SUBMIT => match v.submit(domain, w[0], string.unwrap_or(&[])) {
                Ok(()) => status(OK),
                Err((st, chain, addr)) => {
                    v.refused += 1;
                    let why = match st {
                        DENIED => "is not pinned for the driver with the right the device needs",
                        NOT_FOUND => "names a queue not set up",
                        IN_USE => "has a head the device has not completed",
                        NO_RESOURCES => "could not be held (the domain's hold table or account is full)",
                        _ => "is in a malformed chain",
                    };
                    println!("pci: mediator: {} queue {}: chain {chain} refused ({}): address {addr:#x} {why}; nothing written",
                             sid_string(f.sid as u64), w[0], status_name(st));
                    (st, [chain, addr, 0], Vec::new())
                }
            },
            _ => (OK, [v.published, v.refused, 0], Vec::new()),
        }
    }

    fn irq(&mut self, idx: usize) -> Reply {
        let sid = self.funcs[idx].sid;
        let (slot_no, pin) = ((sid >> 3) & 31, (rd(sid, 0x3c) >> 8) & 0xff);
        if sid >> 8 != 0 || !(1..=24).contains(&slot_no) || !(1..=4).contains(&pin) {
            return status(NOT_FOUND);
        }
        let line = 20 + (slot_no as u64 + pin as u64 - 1) % 4;
        let Some(s) = self.slots.alloc() else {
            return status(NO_RESOURCES);
        };
        if Interrupt(slot::INTERRUPT).restrict(line, 1, s).is_err() {
            self.slots.free(s);
            return status(NO_RESOURCES);
        }
        let Some(t) = self.hand_out(idx, s) else {
            return status(NO_RESOURCES);
        };
        self.drop_after_reply.push(t);
        (OK, [line, 0, 0], alloc::vec![t])
    }

    /// What a request through a session checks before its method runs:
    /// the session its payload names is live (else STALE).  The function's
    /// index is kept for the method.  The server's own requests
    /// (keep_pci::public) name no session.
    fn admit(&mut self, payload: u64) -> Result<(), u64> {
        if public(payload) {
            return Ok(());
        }
        let idx = ((payload & 0xffff) as usize).wrapping_sub(1);
        if !self.funcs.get(idx).is_some_and(|f| f.generation == payload >> 16 && f.domain.is_some()) {
            return Err(STALE);
        }
        self.current = idx;
        Ok(())
    }

    /// The request's string, if one came (VIRTIO_SUBMIT's chains).
    fn string(m: &Msg) -> Option<Vec<u8>> {
        let buf = keep_rt::ipc_buffer();
        m.tag.has_string().then(|| {
            let mut b = alloc::vec![0u8; buf.received_len().min(layout::MAX_STRING as usize)];
            buf.read_string(&mut b);
            b
        })
    }
}

/// A method's reply as the generated protocol's answer: the capabilities
/// it names go in the send slots.
fn answer((st, w, caps): Reply) -> Answer {
    let caps: Vec<(u64, u64)> = caps.iter().map(|&c| (c, 0)).collect();
    let a = Answer::refuse(st).with_results(w);
    if caps.is_empty() { a } else { a.with_caps(keep_rt::ipc_buffer().set_send_caps(&caps)) }
}

/// The requests (abi/services/pci.toml); a session's on the function
/// `admit` found.
impl Handler for Server {
    fn list(&mut self, _: &Msg, index: u64) -> Answer {
        match self.funcs.iter().enumerate().find(|(i, _)| *i as u64 >= index) {
            Some((i, f)) => Answer::ok([i as u64 + 1, f.sid as u64, f.vendor as u64 | (f.device as u64) << 16 | (f.class as u64) << 32]),
            None => Answer::refuse(NOT_FOUND),
        }
    }
    fn open(&mut self, m: &Msg, ids: u64, instance: u64) -> Answer {
        answer(Server::open(self, ids, instance, m.payload))
    }
    fn quit(&mut self, _: &Msg) -> Answer {
        self.quit = true;
        Answer::ok([0; 3])
    }
    fn config_read(&mut self, _: &Msg, offset: u64) -> Answer {
        answer(Server::config_read(self, &self.funcs[self.current], offset))
    }
    fn config_write(&mut self, _: &Msg, offset: u64, value: u64) -> Answer {
        answer(Server::config_write(self, self.current, offset, value))
    }
    fn get_bar(&mut self, _: &Msg, index: u64) -> Answer {
        answer(self.bar(self.current, index))
    }
    fn release(&mut self, _: &Msg) -> Answer {
        answer(Server::release(self, self.current))
    }
    fn get_irq(&mut self, _: &Msg) -> Answer {
        answer(self.irq(self.current))
    }
    fn get_msi(&mut self, _: &Msg, entry: u64) -> Answer {
        answer(self.msi(self.current, entry))
    }
    fn virtio_read(&mut self, m: &Msg, _: u64, _: u64) -> Answer {
        answer(self.mediate(self.current, VIRTIO_READ, m.words, None))
    }
    fn virtio_write(&mut self, m: &Msg, _: u64, _: u64, _: u64) -> Answer {
        answer(self.mediate(self.current, VIRTIO_WRITE, m.words, None))
    }
    fn virtio_queue(&mut self, m: &Msg, _: u64, _: u64, _: u64) -> Answer {
        answer(self.mediate(self.current, VIRTIO_QUEUE, m.words, None))
    }
    fn virtio_submit(&mut self, m: &Msg, _: u64) -> Answer {
        let s = Server::string(m);
        answer(self.mediate(self.current, VIRTIO_SUBMIT, m.words, s.as_deref()))
    }
    fn virtio_stats(&mut self, m: &Msg) -> Answer {
        answer(self.mediate(self.current, VIRTIO_STATS, m.words, None))
    }
}

fn main(_: u64, _: u64) -> i32 {
    let mut slots = SlotPool::new();
    slots.reserve(RET);
    slots.reserve(ECAM_SLOT);
    for q in 0..mediator::USED_CAPS {
        slots.reserve(mediator::used_cap(q));
    }
    let (base, _) = match DevMem(slot::DEVMEM).info() {
        Ok(i) => i,
        Err(e) => {
            println!("pci: no DEVMEM capability: {e}");
            return 1;
        }
    };
    // Bus 0's configuration space: 32 devices x 8 functions x 4 KiB.
    if let Err(e) = DEVMEM.restrict(ECAM_BASE, 256, ECAM_SLOT).and_then(|_| {
        (0..256).try_for_each(|p| SELF_ASPACE.map_device(ECAM_SLOT, p, CFG_VA + p * 4096, rights::READ | rights::WRITE))
    }) {
        println!("pci: cannot map ECAM at {ECAM_BASE:#x} (DEVMEM from {base:#x}): {e}");
        return 1;
    }
    let mut s = Server { slots, funcs: scan(), drop_after_reply: Vec::new(), msi_lines: 0, devmem_base: base, grants: Vec::new(), current: 0, quit: false };
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[RET]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        for c in s.drop_after_reply.drain(..) {
            let _ = SELF_ASPACE.delete_cap(c);
            s.slots.free(c);
        }
        if m.err != 0 || !m.tag.is_called() {
            m = recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        let a = match s.admit(m.payload) {
            Ok(()) => dispatch(&mut s, &m),
            Err(st) => Answer::refuse(st),
        };
        if s.quit {
            for i in 0..s.funcs.len() {
                s.release(i);
            }
            let _ = Return(RET).reply(Tag::new(0), [OK, 0, 0, 0]);
            return 0;
        }
        buf.set_recv_slots(&[RET]);
        m = Return(RET).reply_recv(a.tag().with_slots(1), a.words(), 0);
    }
}
