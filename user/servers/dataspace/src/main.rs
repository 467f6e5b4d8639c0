//! The dataspace manager (protocol: lib.rs; docs/dataspaces.md).  It
//! answers through the generated `dispatch` (protocol.rs, from
//! abi/services/dataspace.toml), one method of [`Handler`] per request,
//! after it has looked up the handle a dataspace capability names; what it
//! accepts of a request's arguments is keep_dataspace::rules.  It holds,
//! in its own capability space, the PAGE capability of every page of every
//! dataspace: clients never hold one, so every mapping and every DMA pin of
//! a page is one the manager made and recorded, and the manager can take
//! each back.
//!
//! The client pays (EROS: the requester supplies the bank): CREATE carries
//! the client's bank capability, and the pages are runs (ALLOC_PAGES, at
//! most 255 pages each) from that bank, whose cappages the manager maps
//! into its capability space.  The manager keeps a copy of the bank
//! capability to FREE the runs when the dataspace is destroyed.  When the
//! bank is destroyed first (its program killed), the runs' pages are
//! revoked everywhere and their cappages leave the manager's space: the
//! manager notices (a run's first slot no longer holds a live page) before
//! it serves the dataspace, or sweeps for it at CREATE and STATS, forgets
//! its records and answers GONE on its handles.  Its own frames (the slot
//! pool's cappages) come from its own bank (slot 12), whose server is also
//! the one a client's bank must belong to.
//!
//! Before it removes a mapping or a pin it looks the address up and checks
//! that the frame there is still the one it mapped: a client that unmapped
//! a page and put something else at that address keeps it.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use keep_abi::proto::Answer;
use keep_abi::{Aspace, DmaDomain, Error, Msg, Return, SELF_ASPACE, SELF_PROCESS, Tag, err, layout::CAPPAGE_SLOTS, recv, rights, ty};
use keep_dataspace::*;
use keep_dataspace::quota::{self, Held, Kind};
use keep_dataspace::target::{self, Target};
use core::result::Result;
use keep_frames::INSTANCE_BANK;
use keep_loader::SlotPool;
use keep_rt::println;
use keep_spacebank::{Bank, BankError, MAX_RUN, status as bank_status};

keep_rt::entry!(main);

/// Where a call's return capability arrives, and the capability it carries.
const RET: u64 = keep_abi::slot::FIRST_FREE;
const ARG: u64 = keep_abi::slot::FIRST_FREE + 1;
/// The sender capability minted for a reply.
const MINTED: u64 = keep_abi::slot::FIRST_FREE + 2;
/// Where a run's cappage arrives from the client's bank.
const RUN_IN: u64 = keep_abi::slot::FIRST_FREE + 3;
/// The manager's own bank: a client's bank must be of the same server.
const OWN_BANK: u64 = INSTANCE_BANK;
/// Run `r`'s cappage is mapped at RUNS + r * 256 while its dataspace lives.
const RUNS: u64 = 0x1000_0000;
/// Runs mapped at once at most (a dataspace of MAX_PAGES is 17).  Every
/// dataspace has one at least, and brings its own quota of handles,
/// mappings and pins (keep_dataspace::quota): those tables grow with the
/// dataspaces and have no limit of their own.
const MAX_RUNS: u64 = 1024;

/// A run of pages from the client's bank: its handle there, and where its
/// cappage is mapped (its region).
struct Run {
    handle: u64,
    region: u64,
}

struct Space {
    live: bool,
    /// PAGE capabilities in page order: capability addresses in the runs'
    /// cappages.
    pages: Vec<u64>,
    /// The owner's handle (the root of the share tree).
    owner: usize,
    runs: Vec<Run>,
    /// The slot holding the manager's copy of the client's bank capability.
    bank: u64,
}

struct Handle {
    live: bool,
    /// Its dataspace went with the bank that paid for it (GONE, not STALE).
    gone: bool,
    generation: u64,
    space: usize,
    rights: u64,
    /// The handle it was shared from (None for the owner's).
    parent: Option<usize>,
}

/// A mapping (in an address space) or a pin (in a DMA domain) the manager
/// made: the target's capability (a copy in the manager's space), where,
/// and the frames it put there.
struct Record {
    handle: usize,
    target: u64,
    at: u64,
    frames: Vec<u64>,
}

struct Server {
    spaces: Vec<Space>,
    handles: Vec<Handle>,
    maps: Vec<Option<Record>>,
    pins: Vec<Option<Record>>,
    slots: SlotPool,
    /// Regions of RUNS free for a run's cappage, and the next never used.
    free_regions: Vec<u64>,
    next_region: u64,
    /// The handle of the request being answered (`admit`).
    current: usize,
    /// Set by QUIT: the manager ends once the reply is sent.
    quit: bool,
}

/// (status, words 1-3, capability to send, string of u64s).
type Reply = (u64, [u64; 3], Option<u64>, Vec<u64>);

/// A refusal with word 1.
fn refused((st, w): (u64, u64)) -> Reply {
    (st, [w, 0, 0], None, Vec::new())
}

fn status(st: u64) -> Reply {
    (st, [0; 3], None, Vec::new())
}

fn ok(w: [u64; 3]) -> Reply {
    (OK, w, None, Vec::new())
}

fn kernel(e: Error) -> Reply {
    if e == Error::NO_MEMORY { status(NO_MEMORY) } else { (KERNEL, [e.0, 0, 0], None, Vec::new()) }
}

/// A bank's refusal as the manager's status and word 1 (the bank's status).
fn bank_refused(e: BankError) -> (u64, u64) {
    match e {
        BankError::Status(s @ (bank_status::OVER_LIMIT | bank_status::NO_MEMORY)) => (NO_MEMORY, s),
        BankError::Status(s) => (BANK, s),
        BankError::Call(_) => (NOT_A_BANK, 0),
    }
}

impl Server {
    /// The handle a payload names, if it is live.
    fn handle(&self, payload: u64) -> Result<usize, u64> {
        let i = payload_index(payload);
        match self.handles.get(i) {
            Some(h) if h.generation == payload_generation(payload) => {
                if h.live {
                    Ok(i)
                } else if h.gone {
                    Err(GONE)
                } else {
                    Err(STALE)
                }
            }
            Some(_) => Err(STALE),
            None => Err(BAD_REQUEST),
        }
    }

    /// What dataspace `space` holds now: its live handles, and the
    /// mappings and pins made through them.
    fn held(&self, space: usize) -> Held {
        let of = |h: usize| self.handles[h].space == space;
        Held {
            handles: self.handles.iter().filter(|h| h.live && h.space == space).count(),
            mappings: self.maps.iter().flatten().filter(|r| of(r.handle)).count(),
            pins: self.pins.iter().flatten().filter(|r| of(r.handle)).count(),
        }
    }

    /// A new handle; its capability is minted at MINTED.  (Its dataspace's
    /// quota is checked by the caller: SHARE.)
    fn new_handle(&mut self, space: usize, r: u64, parent: Option<usize>) -> Result<usize, u64> {
        let i = match self.handles.iter().position(|h| !h.live) {
            Some(i) => i,
            None => {
                self.handles.push(Handle { live: false, gone: false, generation: 0, space: 0, rights: 0, parent: None });
                self.handles.len() - 1
            }
        };
        let generation = self.handles[i].generation + 1;
        if SELF_PROCESS.mint(MINTED, payload(i, generation), rights::WRITE | rights::CALL).is_err() {
            return Err(FULL);
        }
        self.handles[i] = Handle { live: true, gone: false, generation, space, rights: r, parent };
        Ok(i)
    }

    /// CREATE: `pages` pages paid by the bank whose capability came in ARG.
    fn create(&mut self, pages: u64, cap: bool) -> Reply {
        if let Err(st) = rules::create(pages) {
            return status(st);
        }
        self.sweep();
        // A bank of the manager's own bank server (not a server of the
        // client's choosing, nor anything else), with ALLOC and FREE: FREE of
        // a handle no object has is NOT_FOUND with the right, NO_RIGHTS
        // without it (the bank checks rights first), STALE for a destroyed bank.
        let is_bank = cap
            && SELF_ASPACE.identify_cap(ARG).is_ok_and(|c| c.ty == ty::SENDER)
            && SELF_ASPACE.compare_cap(ARG, OWN_BANK).is_ok_and(|(same, _)| same);
        if !is_bank {
            return status(NOT_A_BANK);
        }
        let bank = Bank(ARG);
        match bank.free(0) {
            Err(BankError::Status(bank_status::NOT_FOUND)) => {}
            Ok(()) => return status(NOT_A_BANK),
            Err(e) => {
                let (st, w) = bank_refused(e);
                return (st, [w, 0, 0], None, Vec::new());
            }
        }
        let nruns = pages.div_ceil(MAX_RUN);
        let space = self.spaces.iter().position(|d| !d.live).unwrap_or(self.spaces.len());
        let Some(keep) = self.slots.alloc() else { return status(FULL) };
        if self.live_runs() + nruns > MAX_RUNS {
            self.slots.free(keep);
            return status(FULL);
        }
        let mut runs = Vec::new();
        let mut slots = Vec::new();
        let mut failed = None;
        for r in 0..nruns {
            let n = (pages - r * MAX_RUN).min(MAX_RUN);
            let handle = match bank.alloc_pages(n, RUN_IN) {
                Ok(h) => h,
                Err(e) => {
                    failed = Some(bank_refused(e));
                    break;
                }
            };
            let region = self.free_regions.pop().unwrap_or_else(|| {
                self.next_region += 1;
                self.next_region - 1
            });
            let at = RUNS + region * CAPPAGE_SLOTS;
            let mapped = SELF_ASPACE.map_cappage(RUN_IN, at);
            // The mapping keeps the cappage; the bank keeps the run.
            let _ = SELF_ASPACE.delete_cap(RUN_IN);
            runs.push(Run { handle, region });
            if let Err(e) = mapped {
                failed = Some(if e == Error::NO_MEMORY { (FULL, 0) } else { (KERNEL, e.0) });
                break;
            }
            slots.extend((0..n).map(|i| at + i));
        }
        let h = match failed {
            None => self.new_handle(space, READ | WRITE, None).map_err(|st| (st, 0)),
            Some(f) => Err(f),
        };
        let h = match h {
            Ok(h) => h,
            Err((st, w)) => {
                // Nothing stays: every run made goes back to the bank.
                Self::free_runs(bank, &mut runs, &mut self.free_regions);
                self.slots.free(keep);
                return (st, [w, 0, 0], None, Vec::new());
            }
        };
        let _ = SELF_ASPACE.move_cap(ARG, keep);
        let d = Space { live: true, pages: slots, owner: h, runs, bank: keep };
        if space == self.spaces.len() {
            self.spaces.push(d);
        } else {
            self.spaces[space] = d;
        }
        (OK, [h as u64, 0, 0], Some(MINTED), Vec::new())
    }

    fn live_runs(&self) -> u64 {
        self.spaces.iter().filter(|d| d.live).map(|d| d.runs.len() as u64).sum()
    }

    /// Unmaps each run's cappage from the manager's space and FREEs the run
    /// through `bank` (STALE if the bank is gone: nothing to give back then).
    fn free_runs(bank: Bank, runs: &mut Vec<Run>, free_regions: &mut Vec<u64>) {
        for r in runs.drain(..) {
            let _ = SELF_ASPACE.unmap_cappage(RUNS + r.region * CAPPAGE_SLOTS);
            let _ = bank.free(r.handle);
            free_regions.push(r.region);
        }
    }

    /// Are all of the dataspace's pages still there?  Its bank's DESTROY (or
    /// a FREE of a run through it) revokes a run's pages and its cappage,
    /// which then leaves the manager's capability space.
    fn intact(&self, space: usize) -> bool {
        let d = &self.spaces[space];
        d.runs.iter().all(|r| {
            SELF_ASPACE.identify_cap(RUNS + r.region * CAPPAGE_SLOTS).is_ok_and(|c| c.ty == ty::PAGE && c.live)
        })
    }

    /// Forgets a dataspace whose bank took its pages: its handles answer
    /// GONE, its records go (nothing left to unmap: the bank revoked every
    /// mapping and pin of its pages), its runs' regions are free again.
    fn reap(&mut self, space: usize) {
        let owner = self.spaces[space].owner;
        let doomed: Vec<usize> =
            (0..self.handles.len()).filter(|&i| self.handles[i].live && self.below(i, owner)).collect();
        self.revoke_tree(owner);
        for i in doomed {
            self.handles[i].gone = true;
        }
        self.end(space);
        println!("dataspace: a dataspace's bank was destroyed; its records are gone");
    }

    /// Ends dataspace `space` (its handles already revoked): its pages
    /// forgotten, its runs freed by its bank (the pages revoked if someone
    /// mapped one behind the manager's back, were the kernel to allow it,
    /// and the cappages), the bank's capability dropped.
    fn end(&mut self, space: usize) {
        let d = &mut self.spaces[space];
        d.live = false;
        d.pages.clear();
        let bank = d.bank;
        let mut runs = core::mem::take(&mut d.runs);
        Self::free_runs(Bank(bank), &mut runs, &mut self.free_regions);
        let _ = SELF_ASPACE.delete_cap(bank);
        self.slots.free(bank);
    }

    /// Reaps every dataspace whose pages went with its bank.
    fn sweep(&mut self) {
        for i in 0..self.spaces.len() {
            if self.spaces[i].live && !self.intact(i) {
                self.reap(i);
            }
        }
    }

    /// Is `h` the handle `root` or a share made below it?
    fn below(&self, mut h: usize, root: usize) -> bool {
        for _ in 0..self.handles.len() {
            if h == root {
                return true;
            }
            match self.handles[h].parent {
                Some(p) => h = p,
                None => return false,
            }
        }
        false
    }

    /// The pages of the handle's dataspace.
    fn pages(&self, h: usize) -> u64 {
        self.spaces[self.handles[h].space].pages.len() as u64
    }

    /// A free entry of `list` (mappings or pins), the list grown if none is.
    fn free_record(list: &mut Vec<Option<Record>>) -> usize {
        match list.iter().position(|r| r.is_none()) {
            Some(i) => i,
            None => {
                list.push(None);
                list.len() - 1
            }
        }
    }

    fn map(&mut self, h: usize, w: [u64; 4], cap: bool) -> Reply {
        let [vaddr, first, count, r] = w;
        if let Err(st) = rules::map(cap, vaddr, first, count, r, self.handles[h].rights, self.pages(h)) {
            return status(st);
        }
        if let Err(e) = quota::may_add(self.held(self.handles[h].space), Kind::Mapping) {
            return refused(e);
        }
        if let Err(e) = target::check(Target::Aspace, SELF_ASPACE.identify_cap(ARG).ok().map(|c| c.ty)) {
            return kernel(e);
        }
        let id = Self::free_record(&mut self.maps);
        let aspace = Aspace(ARG);
        let pages = &self.spaces[self.handles[h].space].pages;
        let mut frames = Vec::new();
        for i in 0..count {
            let va = vaddr.wrapping_add(i * PAGE);
            let done = aspace.map(pages[(first + i) as usize], va, r).and_then(|_| {
                aspace.lookup(va).inspect_err(|_| { let _ = aspace.unmap(va); })
            });
            match done {
                Ok((_, frame)) => frames.push(frame),
                Err(e) => {
                    // Undo what this request mapped, and only that.
                    for k in 0..frames.len() as u64 {
                        let _ = aspace.unmap(vaddr + k * PAGE);
                    }
                    return kernel(e);
                }
            }
        }
        let Some(keep) = self.slots.alloc() else {
            for k in 0..count {
                let _ = aspace.unmap(vaddr + k * PAGE);
            }
            return status(FULL);
        };
        let _ = SELF_ASPACE.move_cap(ARG, keep);
        self.maps[id] = Some(Record { handle: h, target: keep, at: vaddr, frames });
        ok([id as u64, 0, 0])
    }

    fn pin(&mut self, h: usize, w: [u64; 4], cap: bool) -> Reply {
        let [first, count, dev_addr, r] = w;
        if let Err(st) = rules::pin(cap, first, count, dev_addr, r, self.handles[h].rights, self.pages(h)) {
            return status(st);
        }
        if let Err(e) = quota::may_add(self.held(self.handles[h].space), Kind::Pin) {
            return refused(e);
        }
        if let Err(e) = target::check(Target::Domain, SELF_ASPACE.identify_cap(ARG).ok().map(|c| c.ty)) {
            return kernel(e);
        }
        let id = Self::free_record(&mut self.pins);
        let domain = DmaDomain(ARG);
        let remapping = match domain.info() {
            Ok(i) => i.remapping,
            Err(e) => return kernel(e),
        };
        let pages = &self.spaces[self.handles[h].space].pages;
        let mut frames = Vec::new();
        for i in 0..count {
            let a = dev_addr.wrapping_add(i * PAGE);
            let done = domain.map(pages[(first + i) as usize], a, r).and_then(|_| {
                domain.lookup(a).inspect_err(|_| { let _ = domain.unmap(a); })
            });
            match done {
                Ok((_, frame)) => frames.push(frame),
                Err(e) => {
                    for k in 0..frames.len() as u64 {
                        let _ = domain.unmap(dev_addr + k * PAGE);
                    }
                    return kernel(e);
                }
            }
        }
        let Some(keep) = self.slots.alloc() else {
            for k in 0..count {
                let _ = domain.unmap(dev_addr + k * PAGE);
            }
            return status(FULL);
        };
        let _ = SELF_ASPACE.move_cap(ARG, keep);
        // What the device is told: the domain's address where the IOMMU
        // translates, the frame's physical address where nothing does.
        let addrs = (0..count)
            .map(|i| if remapping { dev_addr + i * PAGE } else { frames[i as usize] * PAGE })
            .collect();
        self.pins[id] = Some(Record { handle: h, target: keep, at: dev_addr, frames });
        (OK, [id as u64, 0, 0], None, addrs)
    }

    /// Removes a mapping: each page still holding the frame the manager
    /// put there is unmapped.  Returns how many were.
    fn drop_map(&mut self, id: usize) -> u64 {
        let Some(rec) = self.maps[id].take() else { return 0 };
        let a = Aspace(rec.target);
        let mut n = 0;
        for (i, &f) in rec.frames.iter().enumerate() {
            let va = rec.at + i as u64 * PAGE;
            if a.lookup(va).is_ok_and(|(_, g)| g == f) && a.unmap(va).is_ok() {
                n += 1;
            }
        }
        let _ = SELF_ASPACE.delete_cap(rec.target);
        self.slots.free(rec.target);
        n
    }

    fn drop_pin(&mut self, id: usize) -> u64 {
        let Some(rec) = self.pins[id].take() else { return 0 };
        let d = DmaDomain(rec.target);
        let mut n = 0;
        for (i, &f) in rec.frames.iter().enumerate() {
            let a = rec.at + i as u64 * PAGE;
            // UNMAP invalidates the IOMMU's caches before it returns.
            if d.lookup(a).is_ok_and(|(_, g)| g == f) && d.unmap(a).is_ok() {
                n += 1;
            }
        }
        let _ = SELF_ASPACE.delete_cap(rec.target);
        self.slots.free(rec.target);
        n
    }

    /// Revokes handle `root` and every share below it: (handles, mappings, pins).
    fn revoke_tree(&mut self, root: usize) -> (u64, u64, u64) {
        let doomed: Vec<usize> =
            (0..self.handles.len()).filter(|&i| self.handles[i].live && self.below(i, root)).collect();
        let (mut maps, mut pins) = (0, 0);
        for id in 0..self.maps.len() {
            if self.maps[id].as_ref().is_some_and(|r| doomed.contains(&r.handle)) {
                self.drop_map(id);
                maps += 1;
            }
        }
        for id in 0..self.pins.len() {
            if self.pins[id].as_ref().is_some_and(|r| doomed.contains(&r.handle)) {
                self.drop_pin(id);
                pins += 1;
            }
        }
        for &i in &doomed {
            self.handles[i].live = false;
        }
        (doomed.len() as u64, maps, pins)
    }

    fn destroy(&mut self, h: usize) -> Reply {
        let space = self.handles[h].space;
        if self.spaces[space].owner != h {
            return status(NO_RIGHTS);
        }
        self.revoke_tree(h);
        self.end(space);
        ok([0; 3])
    }

    /// What a request through a dataspace capability checks before its
    /// method runs: the handle its payload names is live (else STALE, GONE,
    /// or BAD_REQUEST for an index that was never a handle) and its
    /// dataspace's pages are still its bank's (else GONE, the records
    /// reaped).  The handle is kept for the method.  The manager's own
    /// requests (keep_dataspace::manager) name no handle.
    fn admit(&mut self, m: &Msg) -> Result<(), u64> {
        if manager(m.payload) {
            return Ok(());
        }
        let h = self.handle(m.payload)?;
        let space = self.handles[h].space;
        if !self.intact(space) {
            self.reap(space);
            return Err(GONE);
        }
        self.current = h;
        Ok(())
    }

    /// Is `id` an entry of `list` made through the current handle?
    fn mine(&self, list: &[Option<Record>], id: u64) -> bool {
        list.get(id as usize).and_then(|r| r.as_ref()).is_some_and(|r| r.handle == self.current)
    }
}

/// Did the request bring a capability (beside its return capability)?
fn brought_cap(m: &Msg) -> bool {
    m.tag.caps() >= 2
}

/// A method's reply as the generated protocol's answer: the capability it
/// minted goes in the send slots, the device addresses of a pin in the
/// string.
fn answer((st, w, give, addrs): Reply) -> Answer {
    let buf = keep_rt::ipc_buffer();
    let mut a = Answer::refuse(st).with_results(w);
    if let Some(c) = give {
        a = a.with_caps(buf.set_send_caps(&[(c, 0)]));
    }
    if !addrs.is_empty() {
        let mut bytes = Vec::with_capacity(addrs.len() * 8);
        for x in &addrs {
            bytes.extend_from_slice(&x.to_le_bytes());
        }
        buf.set_string(&bytes);
        a = a.with_string();
    }
    a
}

/// The requests (abi/services/dataspace.toml); those through a dataspace
/// capability on the handle `admit` found.
impl Handler for Server {
    fn create(&mut self, m: &Msg, pages: u64) -> Answer {
        answer(Server::create(self, pages, brought_cap(m)))
    }
    fn stats(&mut self, _: &Msg) -> Answer {
        self.sweep();
        let live = self.handles.iter().filter(|h| h.live).count() as u64;
        let maps = self.maps.iter().flatten().count() as u64;
        let pins = self.pins.iter().flatten().count() as u64;
        Answer::ok([self.spaces.iter().filter(|d| d.live).count() as u64, live, maps | pins << 32])
    }
    fn quit(&mut self, _: &Msg) -> Answer {
        self.quit = true;
        Answer::ok([0; 3])
    }
    fn info(&mut self, _: &Msg) -> Answer {
        let h = self.current;
        Answer::ok([self.pages(h), self.handles[h].rights, h as u64])
    }
    fn map(&mut self, m: &Msg, vaddr: u64, first: u64, count: u64, rights: u64) -> Answer {
        answer(Server::map(self, self.current, [vaddr, first, count, rights], brought_cap(m)))
    }
    fn unmap(&mut self, _: &Msg, mapping: u64) -> Answer {
        if !self.mine(&self.maps, mapping) {
            return Answer::refuse(NOT_FOUND);
        }
        self.drop_map(mapping as usize);
        Answer::ok([0; 3])
    }
    fn share(&mut self, _: &Msg, r: u64) -> Answer {
        let h = self.current;
        if let Err(st) = rules::share(r, self.handles[h].rights) {
            return Answer::refuse(st);
        }
        if let Err((st, w)) = quota::may_add(self.held(self.handles[h].space), Kind::Handle) {
            return Answer::refuse(st).with_results([w, 0, 0]);
        }
        match self.new_handle(self.handles[h].space, r, Some(h)) {
            Ok(n) => answer((OK, [n as u64, 0, 0], Some(MINTED), Vec::new())),
            Err(st) => Answer::refuse(st),
        }
    }
    fn revoke(&mut self, _: &Msg, handle: u64) -> Answer {
        let (h, t) = (self.current, handle as usize);
        if t == h || t >= self.handles.len() || !self.handles[t].live || !self.below(t, h) {
            return Answer::refuse(NOT_FOUND);
        }
        let (a, b, c) = self.revoke_tree(t);
        Answer::ok([a, b, c])
    }
    fn pin(&mut self, m: &Msg, first: u64, count: u64, dev_addr: u64, rights: u64) -> Answer {
        answer(Server::pin(self, self.current, [first, count, dev_addr, rights], brought_cap(m)))
    }
    fn unpin(&mut self, _: &Msg, pin: u64) -> Answer {
        if !self.mine(&self.pins, pin) {
            return Answer::refuse(NOT_FOUND);
        }
        self.drop_pin(pin as usize);
        Answer::ok([0; 3])
    }
    fn destroy(&mut self, _: &Msg) -> Answer {
        answer(Server::destroy(self, self.current))
    }
}

fn main(_: u64, _: u64) -> i32 {
    // Its cappages from its own bank (the pool only if started with one).
    let mut slots = SlotPool::growable_from(keep_frames::own_cappage, SELF_ASPACE);
    for s in [RET, ARG, MINTED, RUN_IN] {
        slots.reserve(s);
    }
    if !SELF_ASPACE.identify_cap(OWN_BANK).is_ok_and(|c| c.ty == ty::SENDER) {
        println!("dataspace: no bank of its own in slot 12: every CREATE is NOT_A_BANK");
    }
    let mut s = Server {
        spaces: Vec::new(),
        handles: Vec::new(),
        maps: Vec::new(),
        pins: Vec::new(),
        slots,
        free_regions: Vec::new(),
        next_region: 0,
        current: 0,
        quit: false,
    };
    loop {
        keep_rt::ipc_buffer().set_recv_slots(&[RET, ARG]);
        let m = recv(Tag::new(0).with_slots(2), 0);
        if m.err != err::OK || !m.tag.is_called() {
            let _ = SELF_ASPACE.delete_cap(ARG);
            continue;
        }
        let a = match s.admit(&m) {
            Ok(()) => dispatch(&mut s, &m),
            Err(st) => Answer::refuse(st),
        };
        if s.quit {
            let _ = Return(RET).reply(a.tag(), a.words());
            let _ = SELF_ASPACE.delete_cap(ARG);
            for h in 0..s.spaces.len() {
                if s.spaces[h].live {
                    let owner = s.spaces[h].owner;
                    s.destroy(owner);
                }
            }
            return 0;
        }
        // A capability that came with the request and was not kept goes.
        let _ = SELF_ASPACE.delete_cap(ARG);
        if Return(RET).reply(a.tag(), a.words()).is_err() {
            // The caller went away; nothing to undo (what it asked for
            // stays recorded under its handle).
            println!("dataspace: a reply was lost");
        }
        let _ = SELF_ASPACE.delete_cap(RET);
        if a.caps > 0 {
            let _ = SELF_ASPACE.delete_cap(MINTED);
        }
    }
}
