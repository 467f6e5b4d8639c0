//! Where a program's own frames come from: its space bank (the instance's
//! bank in slot 12, [`INSTANCE_BANK`]; the description's `bank=` line
//! limits it), so that everything the program holds is its bank's and goes
//! back to the pool when the bank is destroyed (the program killed, or
//! crashed, and reaped by init).
//!
//! - [`Frames`]: pages taken from the bank in runs of 255 (`ALLOC_PAGES`:
//!   one bank object per run, since the bank server holds a slot per
//!   object and has a few thousand), kept for the program's life.  A page
//!   given back goes to a free list and is handed out again (its old bytes
//!   still in it: the caller clears it).  The workhorse, the block and the
//!   network servers (through keep-virtio's Hal) use it.
//! - [`own_cappage`]: one cappage, for a growing slot pool
//!   (`keep_loader::SlotPool::growable_from`); [`own_page`]: one page.
//! - [`Source`]: the bank's frames, or, for a program started by hand with
//!   the memory pool in slot 5 (ktest's driver tests, the benchmarks),
//!   the pool's.
//!
//! A bank call uses the IPC buffer: callers must have read what a message
//! brought in it first.

#![no_std]

extern crate alloc;

use alloc::vec::Vec;

use keep_abi::{Error, MEMORY, Memory, SELF_ASPACE, layout::CAPPAGE_SLOTS, slot, ty};
use keep_spacebank::{Bank, BankError, MAX_RUN};

/// The bank a constructor's instance holds (keep_constructor::INSTANCE_BANK),
/// with ALLOC, FREE and INFO.
pub const INSTANCE_BANK: u64 = 0xc;

/// A bank status or failed call as the kernel error a frame user expects:
/// NO_MEMORY for every refusal (over the limit, the pool empty, the bank
/// server full or the bank destroyed: the program cannot have the frame).
fn kernel(e: BankError) -> Error {
    match e {
        BankError::Call(e) => Error(e),
        BankError::Status(_) => Error::NO_MEMORY,
    }
}

/// What [`Frames::page`] handed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Page {
    /// A fresh page: zeroed.
    Fresh,
    /// A page given back earlier (its old bytes still in it); the slot it
    /// was kept in is empty now and the caller's again.
    Reused(u64),
}

/// Pages from a bank in runs, and a free list of pages given back.
pub struct Frames {
    bank: Bank,
    /// Capability address where the first run's cappage is mapped; run `i`
    /// at `runs_at + i * 256`.  The range must be the frames' alone.
    runs_at: u64,
    /// An empty slot for a new run's cappage until it is mapped.
    scratch: u64,
    /// Pages a run (1 to MAX_RUN): one bank object, charged run + 2.
    run: u64,
    /// Runs mapped so far; the next page of the last one.
    runs: u64,
    next: u64,
    /// Slots holding pages given back.
    free: Vec<u64>,
}

impl Frames {
    /// Pages from the bank whose capability is in slot `bank`, in runs of
    /// MAX_RUN (255).
    pub const fn new(bank: u64, runs_at: u64, scratch: u64) -> Frames {
        Frames { bank: Bank(bank), runs_at, scratch, run: MAX_RUN, runs: 0, next: MAX_RUN, free: Vec::new() }
    }

    /// The same in runs of `run` pages (clamped to 1..=MAX_RUN): a program
    /// that needs few pages wastes fewer of its bank's frames.
    pub const fn with_run(mut self, run: u64) -> Frames {
        self.run = if run == 0 { 1 } else if run > MAX_RUN { MAX_RUN } else { run };
        self.next = self.run;
        self
    }

    /// A page into the empty slot `dest`: one given back if there is one,
    /// else a fresh one.
    pub fn page(&mut self, dest: u64) -> Result<Page, Error> {
        if let Some(s) = self.free.pop() {
            if let Err(e) = SELF_ASPACE.move_cap(s, dest) {
                self.free.push(s);
                return Err(e);
            }
            return Ok(Page::Reused(s));
        }
        self.fresh_page(dest).map(|_| Page::Fresh)
    }

    /// A fresh (zeroed) page into the empty slot `dest`, never one given
    /// back; allocates nothing on the heap (a heap may grow with it).
    pub fn fresh_page(&mut self, dest: u64) -> Result<(), Error> {
        if self.next == self.run {
            let at = self.runs_at + self.runs * CAPPAGE_SLOTS;
            self.bank.alloc_pages(self.run, self.scratch).map_err(kernel)?;
            let r = SELF_ASPACE.map_cappage(self.scratch, at);
            // The mapping keeps the cappage; the bank keeps the run.
            let _ = SELF_ASPACE.delete_cap(self.scratch);
            r?;
            self.runs += 1;
            self.next = 0;
        }
        let src = self.runs_at + (self.runs - 1) * CAPPAGE_SLOTS + self.next;
        SELF_ASPACE.move_cap(src, dest)?;
        self.next += 1;
        Ok(())
    }

    /// Takes back the page in slot `s` (mapped nowhere now); the slot is
    /// the free list's until the page is handed out again.
    pub fn give_back(&mut self, s: u64) {
        self.free.push(s);
    }

    /// Frames the program could still have: what its bank has left, the
    /// pages given back and the rest of the current run.
    pub fn available(&self) -> u64 {
        let left = self.bank.info().map_or(0, |i| i.limit.saturating_sub(i.used));
        left + self.free.len() as u64 + (self.run - self.next)
    }

    /// Pages taken from the bank so far (whole runs) and pages on the free list.
    pub fn held(&self) -> (u64, u64) {
        (self.runs * self.run, self.free.len() as u64)
    }
}

/// A cappage from the bank in slot `bank` into the empty slot `dest` (one
/// bank object).
pub fn cappage(bank: u64, dest: u64) -> Result<(), Error> {
    Bank(bank).alloc_cappage(dest).map(drop).map_err(kernel)
}

/// Was the program given the memory pool (slot 5 holds a MEMORY
/// capability)?  Only a program started by hand is (ktest's driver tests,
/// the benchmarks: they put other capabilities in slot 12, the PCI
/// server's, say); a constructor's instance never is and has its bank in
/// [`INSTANCE_BANK`].
pub fn has_pool() -> bool {
    SELF_ASPACE.identify_cap(slot::MEMORY).is_ok_and(|c| c.ty == ty::MEMORY && c.live)
}

/// A cappage for the program's slot pool into the empty slot `dest`: from
/// its bank, or from the memory pool if it was started with one.
pub fn own_cappage(dest: u64) -> Result<(), Error> {
    if has_pool() { MEMORY.retype(ty::CAPPAGE, dest) } else { cappage(INSTANCE_BANK, dest) }
}

/// Where a page of [`own_page_kept`] came from, for [`give_back_own_page`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OwnPage {
    Pool,
    /// The bank's handle of it.
    Bank(u64),
}

/// One zeroed page into the empty slot `dest`, as [`own_cappage`]: from the
/// pool if the program was started with one, else from its bank.
pub fn own_page(dest: u64) -> Result<(), Error> {
    own_page_kept(dest).map(drop)
}

/// The same, for a page the program gives back before it ends.
pub fn own_page_kept(dest: u64) -> Result<OwnPage, Error> {
    if has_pool() {
        MEMORY.retype(ty::PAGE, dest).map(|_| OwnPage::Pool)
    } else {
        Bank(INSTANCE_BANK).alloc_page(dest).map(OwnPage::Bank).map_err(kernel)
    }
}

/// Destroys the page at `dest` that [`own_page_kept`] made, wherever it
/// is mapped, and empties the slot.
pub fn give_back_own_page(dest: u64, from: OwnPage) {
    match from {
        OwnPage::Pool => drop(MEMORY.revoke(dest)),
        OwnPage::Bank(h) => drop(Bank(INSTANCE_BANK).free(h)),
    }
    let _ = SELF_ASPACE.delete_cap(dest);
}

/// Where a driver's pages come from.
pub enum Source {
    Bank(Frames),
    /// The memory pool (a program started by hand with MEMORY, no bank).
    Pool(Memory),
}

impl Source {
    /// The program's own: the pool in slot 5 if it was given one (started
    /// by hand), else its bank's runs of `run` pages (mapped from
    /// `runs_at`, a run's cappage passing through `scratch`).
    pub fn own(runs_at: u64, scratch: u64, run: u64) -> Source {
        if has_pool() {
            Source::Pool(Memory(slot::MEMORY))
        } else {
            Source::Bank(Frames::new(INSTANCE_BANK, runs_at, scratch).with_run(run))
        }
    }

    /// A page into the empty slot `dest`, as [`Frames::page`].
    pub fn page(&mut self, dest: u64) -> Result<Page, Error> {
        match self {
            Source::Bank(f) => f.page(dest),
            Source::Pool(m) => m.retype(ty::PAGE, dest).map(|_| Page::Fresh),
        }
    }

    /// Takes back the page in slot `s` (mapped nowhere now).  Some(s): the
    /// slot is empty again and the caller's (the pool took the frame);
    /// None: the frames keep it.
    pub fn give_back(&mut self, s: u64) -> Result<Option<u64>, Error> {
        match self {
            Source::Bank(f) => {
                f.give_back(s);
                Ok(None)
            }
            Source::Pool(m) => m.reclaim(s).map(|_| Some(s)),
        }
    }
}
