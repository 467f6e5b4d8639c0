//! The space-bank server (protocol in `lib.rs`, docs/space-banks.md).  It
//! holds the memory pool (MEMORY) and, in its own capability space, the
//! master capability of every object it has handed out: a page, cappage or
//! account lives exactly as long as its record here.  arg0 is the prime
//! bank's limit in frames.
//!
//! Costs: an allocation is one kernel invocation (RETYPE, or CREATE_ACCOUNT
//! and DONATE) plus one check per bank above the one asked; freeing a page
//! is one MEMORY.RECLAIM if it is mapped nowhere, else a MEMORY.REVOKE (a
//! search of every space and DMA domain), an account one
//! ACCOUNT.DESTROY_ALL; destroying a bank frees each of its
//! objects and its sub-banks' so.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec::Vec;

use keep_abi::proto::Answer;
use keep_abi::{Account, Error, IpcBuffer, MEMORY, Msg, Return, SELF_ASPACE, SELF_PROCESS, Tag, rights as krights, ty};
use keep_loader::SlotPool;
use keep_rt::println;
use keep_spacebank::*;

keep_rt::entry!(main);

/// Where each call's return capability arrives.
const RET: u64 = keep_abi::slot::FIRST_FREE;
/// A slot for the sender capabilities the server mints for a reply.
const MINTED: u64 = keep_abi::slot::FIRST_FREE + 1;
/// A run's cappage (ALLOC_PAGES) is mapped in the server's capability
/// space at RUNS + its region * 256 while it lives: its slots 0 to n-1 hold
/// the master capabilities of the pages, slot 255 the client's cappage.
const RUNS: u64 = 0x1000_0000;
/// Where the client's cappage is mapped while it is filled.
const RUN_FILL: u64 = 0x0f00_0000;
const RUN_CLIENT: u64 = MAX_RUN;

struct Object {
    kind: u64,
    bank: usize,
    /// Its place in its bank's `objects` (so that freeing it is O(1)).
    pos: usize,
    /// The master capability, in the server's space.
    slot: u64,
    frames: u64,
    generation: u64,
    /// A run's region (its cappage at RUNS + region * 256).
    region: u64,
}

struct BankState {
    generation: u64,
    alive: bool,
    parent: usize,
    limit: u64,
    /// Frames charged to this bank: its objects' and its sub-banks' used.
    used: u64,
    children: Vec<usize>,
    /// Indices into `Server::objects`.
    objects: Vec<usize>,
}

struct Server {
    banks: Vec<BankState>,
    objects: Vec<Option<Object>>,
    /// Object generations, kept when a record is freed so that a handle to
    /// a freed object never names its successor.
    object_generation: Vec<u64>,
    /// Indices of `objects` that are free.
    free_objects: Vec<usize>,
    slots: SlotPool,
    /// Regions of RUNS free for a run's cappage, and the next never used.
    free_regions: Vec<u64>,
    next_region: u64,
    /// The bank of the request being answered (`admit`).
    current: usize,
}

/// A handle: the object's index in bits 0-31, its generation above.
fn handle(index: usize, generation: u64) -> u64 {
    index as u64 | (generation << 32)
}

type Reply = Result<([u64; 3], Option<u64>), u64>;

fn kernel_status(e: Error) -> u64 {
    if e == Error::NO_MEMORY { status::NO_MEMORY } else { status::KERNEL }
}

impl Server {
    fn new(limit: u64) -> Server {
        let mut slots = SlotPool::growable(MEMORY, SELF_ASPACE);
        // Grow the slot pool to its full size now, so that the server's own
        // cappages are taken at start-up and never while serving a bank
        // (whose destruction must return the pool to what it was).
        let mut taken = Vec::new();
        while let Some(s) = slots.alloc() {
            taken.push(s);
        }
        for s in taken {
            slots.free(s);
        }
        slots.reserve(RET);
        slots.reserve(MINTED);
        let prime = BankState {
            generation: PRIME_GENERATION,
            alive: true,
            parent: usize::MAX,
            limit,
            used: 0,
            children: Vec::new(),
            objects: Vec::new(),
        };
        Server {
            banks: alloc::vec![prime],
            objects: Vec::new(),
            object_generation: Vec::new(),
            free_objects: Vec::new(),
            slots,
            free_regions: Vec::new(),
            next_region: 0,
            current: 0,
        }
    }

    /// The bank a payload names, if it is alive.
    fn bank_of(&self, payload: u64) -> Option<usize> {
        let i = payload_index(payload);
        let b = self.banks.get(i)?;
        (b.alive && b.generation == payload_generation(payload)).then_some(i)
    }

    /// Checks that `frames` more fit in `bank` and every bank above it.
    fn fits(&self, mut bank: usize, frames: u64) -> bool {
        loop {
            let b = &self.banks[bank];
            if b.used.checked_add(frames).is_none_or(|u| u > b.limit) {
                return false;
            }
            if b.parent == usize::MAX {
                return true;
            }
            bank = b.parent;
        }
    }

    /// Adds (or with `add` false, takes away) `frames` on `bank` and above.
    fn charge(&mut self, mut bank: usize, frames: u64, add: bool) {
        while bank != usize::MAX {
            let b = &mut self.banks[bank];
            b.used = if add { b.used + frames } else { b.used - frames };
            bank = b.parent;
        }
    }

    fn record(&mut self, bank: usize, kind: u64, slot: u64, frames: u64) -> u64 {
        let index = match self.free_objects.pop() {
            Some(i) => i,
            None => {
                self.objects.push(None);
                self.object_generation.push(0);
                self.objects.len() - 1
            }
        };
        self.object_generation[index] += 1;
        let generation = self.object_generation[index];
        let pos = self.banks[bank].objects.len();
        self.objects[index] = Some(Object { kind, bank, pos, slot, frames, generation, region: 0 });
        self.banks[bank].objects.push(index);
        self.charge(bank, frames, true);
        handle(index, generation)
    }

    /// The index of the live object `h` names in `bank`.
    fn find(&self, bank: usize, h: u64) -> Option<usize> {
        let index = (h & 0xffff_ffff) as usize;
        let o = self.objects.get(index)?.as_ref()?;
        (o.generation == h >> 32 && o.bank == bank).then_some(index)
    }

    fn alloc_frame(&mut self, bank: usize, kind: u64) -> Reply {
        if !self.fits(bank, 1) {
            return Err(status::OVER_LIMIT);
        }
        let slot = self.slots.alloc().ok_or(status::FULL)?;
        let t = if kind == kind::PAGE { ty::PAGE } else { ty::CAPPAGE };
        if let Err(e) = MEMORY.retype(t, slot) {
            self.slots.free(slot);
            return Err(kernel_status(e));
        }
        let h = self.record(bank, kind, slot, 1);
        Ok(([h, 0, 0], Some(slot)))
    }

    /// ALLOC_PAGES: a run of `n` pages, one object.  The server keeps the
    /// master capabilities in a cappage of its own, mapped in its
    /// capability space for the run's life (so a run costs it one slot);
    /// the client gets a second cappage holding copies.
    fn alloc_run(&mut self, bank: usize, n: u64) -> Reply {
        if n == 0 || n > MAX_RUN {
            return Err(status::BAD_REQUEST);
        }
        if !self.fits(bank, n + 2) {
            return Err(status::OVER_LIMIT);
        }
        let slot = self.slots.alloc().ok_or(status::FULL)?;
        let region = self.free_regions.pop().unwrap_or_else(|| {
            self.next_region += 1;
            self.next_region - 1
        });
        let base = RUNS + region * 256;
        let made = self.fill_run(slot, base, n);
        if let Err(e) = made {
            self.empty_run(slot, base, n);
            self.slots.free(slot);
            self.free_regions.push(region);
            return Err(e);
        }
        let h = self.record(bank, kind::RUN, slot, n + 2);
        let index = (h & 0xffff_ffff) as usize;
        self.objects[index].as_mut().expect("recorded").region = region;
        Ok(([h, 0, 0], Some(base + RUN_CLIENT)))
    }

    fn fill_run(&mut self, slot: u64, base: u64, n: u64) -> Result<(), u64> {
        MEMORY.retype(ty::CAPPAGE, slot).map_err(kernel_status)?;
        SELF_ASPACE.map_cappage(slot, base).map_err(kernel_status)?;
        for i in 0..n {
            MEMORY.retype(ty::PAGE, base + i).map_err(kernel_status)?;
        }
        MEMORY.retype(ty::CAPPAGE, base + RUN_CLIENT).map_err(kernel_status)?;
        SELF_ASPACE.map_cappage(base + RUN_CLIENT, RUN_FILL).map_err(kernel_status)?;
        let copied = (0..n).try_for_each(|i| SELF_ASPACE.copy_cap(base + i, RUN_FILL + i, 0));
        let _ = SELF_ASPACE.unmap_cappage(RUN_FILL);
        copied.map_err(kernel_status)
    }

    /// Destroys what a run holds (as much as was made): its pages, the
    /// client's cappage (wherever they are mapped), its own cappage.
    fn empty_run(&mut self, slot: u64, base: u64, n: u64) {
        let mut failed = None;
        for s in (0..n).map(|i| base + i).chain([base + RUN_CLIENT]) {
            if !SELF_ASPACE.identify_cap(s).is_ok_and(|c| c.ty != ty::NULL) {
                continue;
            }
            let r = match MEMORY.reclaim(s) {
                Err(Error::IN_USE) => MEMORY.revoke(s).map(drop),
                r => r,
            };
            if let Err(e) = r {
                failed = Some(e);
            }
            let _ = SELF_ASPACE.delete_cap(s);
        }
        let _ = SELF_ASPACE.unmap_cappage(base);
        if SELF_ASPACE.identify_cap(slot).is_ok_and(|c| c.ty != ty::NULL) {
            if let Err(e) = MEMORY.reclaim(slot) {
                failed = Some(e);
            }
            let _ = SELF_ASPACE.delete_cap(slot);
        }
        if let Some(e) = failed {
            println!("spacebank: destroying a run of pages failed: {e}");
        }
    }

    fn alloc_account(&mut self, bank: usize, frames: u64) -> Reply {
        if frames > MAX_FUND {
            return Err(status::BAD_REQUEST);
        }
        if !self.fits(bank, frames + 1) {
            return Err(status::OVER_LIMIT);
        }
        let slot = self.slots.alloc().ok_or(status::FULL)?;
        if let Err(e) = MEMORY.create_account(slot) {
            self.slots.free(slot);
            return Err(kernel_status(e));
        }
        if frames > 0
            && let Err(e) = MEMORY.donate(slot, frames)
        {
            let _ = Account(slot).destroy_all(MEMORY.0);
            let _ = SELF_ASPACE.delete_cap(slot);
            self.slots.free(slot);
            return Err(kernel_status(e));
        }
        let h = self.record(bank, kind::ACCOUNT, slot, frames + 1);
        Ok(([h, 0, 0], Some(slot)))
    }

    fn fund(&mut self, bank: usize, h: u64, frames: u64) -> Reply {
        if frames == 0 || frames > MAX_FUND {
            return Err(status::BAD_REQUEST);
        }
        let index = self.find(bank, h).ok_or(status::NOT_FOUND)?;
        let o = self.objects[index].as_ref().expect("found");
        if o.kind != kind::ACCOUNT {
            return Err(status::BAD_REQUEST);
        }
        if !self.fits(bank, frames) {
            return Err(status::OVER_LIMIT);
        }
        MEMORY.donate(o.slot, frames).map_err(kernel_status)?;
        self.objects[index].as_mut().expect("found").frames += frames;
        self.charge(bank, frames, true);
        Ok(([0; 3], None))
    }

    /// Destroys object `index` of `bank`: revoked wherever it is mapped, or
    /// (an account) destroyed whole; its frames go back to the pool.  With
    /// `unlist`, it leaves its bank's list (a bank being destroyed has
    /// taken its list already).
    fn destroy_object(&mut self, bank: usize, index: usize, unlist: bool) {
        let o = self.objects[index].take().expect("live object");
        self.free_objects.push(index);
        if o.kind == kind::RUN {
            self.empty_run(o.slot, RUNS + o.region * 256, o.frames - 2);
            self.free_regions.push(o.region);
        }
        let r = match o.kind {
            kind::RUN => Ok(()),
            kind::ACCOUNT => Account(o.slot).destroy_all(MEMORY.0),
            // RECLAIM first: a frame mapped nowhere (the usual case once the
            // bank's accounts, and with them the address spaces that mapped
            // its pages, are gone) then costs no search of every address
            // space and DMA domain, which REVOKE makes even for none.
            _ => match MEMORY.reclaim(o.slot) {
                Err(Error::IN_USE) => MEMORY.revoke(o.slot).map(drop),
                r => r,
            },
        };
        if let Err(e) = r {
            // Cannot happen while the server holds the master capability;
            // say so rather than lose track of it silently.
            println!("spacebank: destroying object {index} failed: {e}");
        }
        // REVOKE clears the slot; DESTROY_ALL leaves a stale account there.
        let _ = SELF_ASPACE.delete_cap(o.slot);
        self.slots.free(o.slot);
        if unlist {
            let list = &mut self.banks[bank].objects;
            list.swap_remove(o.pos);
            if let Some(&moved) = list.get(o.pos) {
                self.objects[moved].as_mut().expect("listed object").pos = o.pos;
            }
        }
        self.charge(bank, o.frames, false);
    }

    fn free(&mut self, bank: usize, h: u64) -> Reply {
        let index = self.find(bank, h).ok_or(status::NOT_FOUND)?;
        self.destroy_object(bank, index, true);
        Ok(([0; 3], None))
    }

    /// Mints a sender capability for `payload` into MINTED for the reply.
    fn mint(&mut self, payload: u64) -> Result<u64, u64> {
        let _ = SELF_ASPACE.delete_cap(MINTED);
        SELF_PROCESS
            .mint(MINTED, payload, krights::WRITE | krights::CALL)
            .map_err(|_| status::KERNEL)?;
        Ok(MINTED)
    }

    fn create_bank(&mut self, parent: usize, limit: u64) -> Reply {
        let p = &self.banks[parent];
        if limit == 0 {
            return Err(status::BAD_REQUEST);
        }
        if limit > p.limit - p.used {
            return Err(status::OVER_LIMIT);
        }
        // A dead bank's place is reused with the next generation.
        let index = match self.banks.iter().position(|b| !b.alive) {
            Some(i) => i,
            None if self.banks.len() < MAX_BANKS => {
                self.banks.push(BankState {
                    generation: 0,
                    alive: false,
                    parent: 0,
                    limit: 0,
                    used: 0,
                    children: Vec::new(),
                    objects: Vec::new(),
                });
                self.banks.len() - 1
            }
            None => return Err(status::FULL),
        };
        let generation = self.banks[index].generation + 1;
        let slot = self.mint(payload(index as u64, generation, rights::ALL))?;
        let b = &mut self.banks[index];
        b.generation = generation;
        b.alive = true;
        b.parent = parent;
        b.limit = limit;
        b.used = 0;
        self.banks[parent].children.push(index);
        Ok(([index as u64, 0, 0], Some(slot)))
    }

    /// Destroys `bank`'s sub-banks, then its objects, then the bank.
    fn destroy_bank(&mut self, bank: usize) {
        while let Some(&child) = self.banks[bank].children.last() {
            self.destroy_bank(child);
        }
        // Accounts first: their address spaces go, and with them most
        // mappings of the bank's pages, which makes each REVOKE cheaper.
        let mut objects = core::mem::take(&mut self.banks[bank].objects);
        objects.sort_by_key(|&i| self.objects[i].as_ref().is_some_and(|o| o.kind != kind::ACCOUNT));
        for i in objects {
            self.destroy_object(bank, i, false);
        }
        let parent = self.banks[bank].parent;
        self.banks[parent].children.retain(|&c| c != bank);
        let b = &mut self.banks[bank];
        b.alive = false;
        b.limit = 0;
        debug_assert_eq!(b.used, 0);
    }

    fn info(&self, bank: usize) -> Reply {
        let b = &self.banks[bank];
        let counts = b.objects.len() as u64 | (b.children.len() as u64) << 24 | (bank as u64) << 48;
        Ok(([b.limit, b.used, counts], None))
    }

    /// Writes the subtree of `bank` (banks in preorder, then their
    /// accounts) into the string area; returns (banks, accounts) written.
    fn report(&self, bank: usize, buf: &mut IpcBuffer) -> Reply {
        let mut order = Vec::new();
        let mut stack = alloc::vec![(bank, 0u64)];
        while let Some((b, depth)) = stack.pop() {
            order.push((b, depth));
            for &c in self.banks[b].children.iter().rev() {
                stack.push((c, depth + 1));
            }
        }
        let mut words: Vec<u64> = Vec::new();
        let mut nb = 0;
        for &(b, depth) in order.iter().take(REPORT_RECORDS) {
            let s = &self.banks[b];
            words.extend([b as u64, depth, s.limit, s.used, s.children.len() as u64, s.objects.len() as u64]);
            nb += 1;
        }
        let mut na = 0;
        'out: for &(b, _) in &order {
            for &i in &self.banks[b].objects {
                if nb + na >= REPORT_RECORDS {
                    break 'out;
                }
                let o = self.objects[i].as_ref().expect("live object");
                if o.kind != kind::ACCOUNT {
                    continue;
                }
                let info = Account(o.slot).info_all().unwrap_or([0; 4]);
                words.extend([b as u64, handle(i, o.generation), info[0], info[1], info[2], info[3]]);
                na += 1;
            }
        }
        let mut bytes = Vec::with_capacity(words.len() * 8);
        for w in words {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        buf.set_string(&bytes);
        Ok(([nb as u64, na as u64, 0], None))
    }

    /// What every request checks before its method runs: the bank the
    /// capability names is alive (else STALE) and the capability holds the
    /// rights the request needs (`needs`, from abi/services/spacebank.toml;
    /// else NO_RIGHTS).  The bank is kept for the method.
    fn admit(&mut self, m: &keep_abi::Msg) -> Result<(), u64> {
        let bank = self.bank_of(m.payload).ok_or(status::STALE)?;
        let need = needs(m.tag.label());
        if payload_rights(m.payload) & need != need {
            return Err(status::NO_RIGHTS);
        }
        self.current = bank;
        Ok(())
    }
}

/// A method's reply as the generated protocol's answer: the capability it
/// minted goes in the send slots, the string it wrote stays in the buffer.
fn answer(r: Reply) -> Answer {
    let buf = keep_rt::ipc_buffer();
    match r {
        Ok((w, cap)) => {
            let mut a = Answer::ok(w);
            if let Some(c) = cap {
                a = a.with_caps(buf.set_send_caps(&[(c, 0)]));
            }
            if buf.send_len > 0 { a.with_string() } else { a }
        }
        Err(s) => Answer::refuse(s),
    }
}

/// The requests (abi/services/spacebank.toml), each on the bank `admit`
/// found.
impl Handler for Server {
    fn alloc_page(&mut self, _: &Msg) -> Answer {
        answer(self.alloc_frame(self.current, kind::PAGE))
    }
    fn alloc_cappage(&mut self, _: &Msg) -> Answer {
        answer(self.alloc_frame(self.current, kind::CAPPAGE))
    }
    fn alloc_pages(&mut self, _: &Msg, n: u64) -> Answer {
        answer(self.alloc_run(self.current, n))
    }
    fn alloc_account(&mut self, _: &Msg, frames: u64) -> Answer {
        answer(Server::alloc_account(self, self.current, frames))
    }
    fn fund(&mut self, _: &Msg, handle: u64, frames: u64) -> Answer {
        answer(Server::fund(self, self.current, handle, frames))
    }
    fn free(&mut self, _: &Msg, handle: u64) -> Answer {
        answer(Server::free(self, self.current, handle))
    }
    fn create_bank(&mut self, _: &Msg, limit: u64) -> Answer {
        answer(Server::create_bank(self, self.current, limit))
    }
    /// A capability to the same bank with fewer rights (never more).
    fn restrict(&mut self, m: &Msg, mask: u64) -> Answer {
        if mask & !rights::ALL != 0 {
            return Answer::refuse(status::BAD_REQUEST);
        }
        let bank = self.current;
        let g = self.banks[bank].generation;
        answer(self.mint(payload(bank as u64, g, payload_rights(m.payload) & mask)).map(|slot| ([0; 3], Some(slot))))
    }
    fn info(&mut self, _: &Msg) -> Answer {
        answer(Server::info(self, self.current))
    }
    fn destroy(&mut self, _: &Msg) -> Answer {
        self.destroy_bank(self.current);
        Answer::ok([0; 3])
    }
    fn report(&mut self, _: &Msg) -> Answer {
        answer(Server::report(self, self.current, keep_rt::ipc_buffer()))
    }
}

fn main(limit: u64, _: u64) -> i32 {
    let mut server = Server::new(limit);
    let buf = keep_rt::ipc_buffer();
    buf.set_recv_slots(&[RET]);
    let mut m = keep_abi::recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 || !m.tag.is_called() {
            m = keep_abi::recv(Tag::new(0).with_slots(1), 0);
            continue;
        }
        buf.send_len = 0;
        let a = match server.admit(&m) {
            Ok(()) => dispatch(&mut server, &m),
            Err(s) => Answer::refuse(s),
        };
        // The receive slots stay [RET]: a reply's capability goes out, none comes in.
        m = Return(RET).reply_recv(a.tag().with_slots(1), a.words(), 0);
    }
}
