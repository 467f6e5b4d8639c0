//! The guard over pages a client pays for and a server touches
//! (docs/network.md, "Frame rings"; docs/block.md, "Request rings"): a
//! client can take such pages away whenever it likes (it revokes its
//! share, destroys the dataspace, or destroys the bank that paid for it),
//! and the server's next touch of them then faults.  init's notice covers
//! a client that ends; this covers the rest, so that no client can make
//! the server crash.
//!
//! A thread of the server's, at a priority above it, is the server's
//! fault handler (`start`).  A page fault at an address inside a watched
//! window (`watch`) is answered by mapping a scratch page of the server's
//! own there and resuming: the server's operation finishes on bytes that
//! mean nothing (only the client that took its pages away is harmed: what
//! it finds there is checked like anything else of the client's), and the
//! window is noted as lost.  The server's loop asks `lost` and lets go of
//! those windows (`unwatch` unmaps the scratch pages).  Any other fault is
//! not the guard's: it removes itself as the handler and resumes, so the
//! fault stops the server as before (init reports and restarts it).

#![no_std]

extern crate alloc;

use core::sync::atomic::{AtomicU64, Ordering};

use keep_abi::{Return, SELF_ASPACE, SELF_PROCESS, Tag, label, recv, reply, rights};
use keep_loader::SlotPool;
use keep_loader::spawn::{STACK_PAGES, STACK_TOP};
use keep_loader::thread::{self, Args, Thread};
/// Windows a server may watch (bit i of `lost`: window i).
pub const WINDOWS: usize = 64;
const WATCHED: usize = WINDOWS;

const PAGE: u64 = 4096;
const PAGE_FAULT: u64 = 14;
/// Above the server's own priority (the default, 10): the guard runs as
/// soon as the server faults.
const PRIORITY: u64 = 11;

/// Each window: where it is mapped and how many pages (0: none).  Written by the server, read by the guard while the server is
/// stopped in a fault.
static WINDOW_VA: [AtomicU64; WATCHED] = [const { AtomicU64::new(0) }; WATCHED];
static WINDOW_PAGES: [AtomicU64; WATCHED] = [const { AtomicU64::new(0) }; WATCHED];
/// The pages of each window the scratch page is mapped at (a window has
/// at most 128 pages).
static SCRATCH_AT: [[AtomicU64; 2]; WATCHED] = [const { [const { AtomicU64::new(0) }; 2] }; WATCHED];
/// Bit i: window i lost a page since `lost` last asked.
static LOST: AtomicU64 = AtomicU64::new(0);

/// The guard thread (kept for the server's life).
pub struct Guard {
    thread: Thread,
}

/// Starts the guard thread and makes it the server's fault handler.  The
/// guard replaces the constructor's handler, which pages a lazily loaded
/// instance's zero pages in on first touch: the heap and the stack are
/// touched first (about 270 frames of the server's bank).
pub fn start(slots: &mut SlotPool, name: &str) -> Result<Guard, alloc::string::String> {
    keep_rt::touch_heap();
    touch_stack();
    // The guard's own statics too: it must not fault on them itself (a
    // lazily loaded instance gets its zero pages on first touch).
    for i in 0..WATCHED {
        WINDOW_VA[i].store(0, Ordering::Relaxed);
        WINDOW_PAGES[i].store(0, Ordering::Relaxed);
        SCRATCH_AT[i].iter().for_each(|w| w.store(0, Ordering::Relaxed));
    }
    LOST.store(0, Ordering::Relaxed);
    let (Some(ret), Some(scratch), Some(snd)) = (slots.alloc(), slots.alloc(), slots.alloc()) else {
        return Err("no slot".into());
    };
    keep_frames::own_page(scratch).map_err(|e| alloc::format!("its scratch page: {e}"))?;
    let t = thread::spawn(slots, name, PRIORITY, guard, &[ret, scratch])?;
    if let Err(e) = t.process.mint(snd, 0, 0).and_then(|_| SELF_PROCESS.set_fault_handler(snd)) {
        t.kill(slots);
        return Err(alloc::format!("installing the fault handler: {e}"));
    }
    Ok(Guard { thread: t })
}

impl Guard {
    /// Removes the fault handler and ends the thread (before the server
    /// exits: its address space cannot go while the thread is in it).
    pub fn stop(self, slots: &mut SlotPool) {
        let _ = SELF_PROCESS.set_fault_handler(0);
        self.thread.kill(slots);
    }
}

/// Touches the pages of the main stack below the one in use (the loader's
/// STACK_PAGES under STACK_TOP), writing back what each holds.
#[inline(never)]
fn touch_stack() {
    let bottom = STACK_TOP - STACK_PAGES * PAGE;
    let mut a = bottom;
    while a < STACK_TOP {
        // SAFETY: a lies in the server's own stack; the byte read is
        // written back, and nothing else runs meanwhile.
        unsafe { core::ptr::write_volatile(a as *mut u8, core::ptr::read_volatile(a as *const u8)) };
        a += PAGE;
    }
}

/// Window `i` is mapped at `va` (`pages` pages, at most 128) from now on.
pub fn watch(i: usize, va: u64, pages: u64) {
    WINDOW_VA[i].store(va, Ordering::Relaxed);
    WINDOW_PAGES[i].store(pages, Ordering::Relaxed);
}

/// Window `i` is let go of: the scratch page is unmapped wherever the
/// guard put it in the window (the rest of the window the dataspace
/// manager unmapped).
pub fn unwatch(i: usize) {
    let va = WINDOW_VA[i].load(Ordering::Relaxed);
    WINDOW_PAGES[i].store(0, Ordering::Relaxed);
    for (w, word) in SCRATCH_AT[i].iter().enumerate() {
        let mut bits = word.swap(0, Ordering::Relaxed);
        while bits != 0 {
            let k = bits.trailing_zeros() as u64;
            bits &= bits - 1;
            let _ = SELF_ASPACE.unmap(va + (w as u64 * 64 + k) * PAGE);
        }
    }
}

/// The windows that lost pages since the last call (bit i: window i).
#[inline(always)]
pub fn lost() -> u64 {
    if LOST.load(Ordering::Relaxed) == 0 { 0 } else { LOST.swap(0, Ordering::Relaxed) }
}

/// Puts the scratch page at the faulting page if `addr` lies in a watched
/// window; false if it does not (or the page cannot be mapped).
fn cover(addr: u64, scratch: u64) -> bool {
    for i in 0..WATCHED {
        let (va, pages) = (WINDOW_VA[i].load(Ordering::Relaxed), WINDOW_PAGES[i].load(Ordering::Relaxed));
        if pages == 0 || addr < va || addr >= va + pages * PAGE {
            continue;
        }
        let k = (addr - va) / PAGE;
        if SELF_ASPACE.map(scratch, va + k * PAGE, rights::READ | rights::WRITE).is_err() {
            return false;
        }
        SCRATCH_AT[i][(k / 64) as usize].fetch_or(1 << (k % 64), Ordering::Relaxed);
        LOST.fetch_or(1 << i, Ordering::Relaxed);
        return true;
    }
    false
}

/// The guard thread (must not allocate).  words: its receive slot, the
/// scratch page.
fn guard(a: &Args) -> u64 {
    let (ret, scratch) = (a.words[0], a.words[1]);
    loop {
        a.buf().set_recv_slots(&[ret]);
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 || m.tag.label() != label::EXCEPTION || !m.tag.is_called() {
            continue;
        }
        let (vector, addr) = (m.words[0], m.words[2]);
        if !(vector == PAGE_FAULT && cover(addr, scratch)) {
            // Not a watched window's: the fault stops the server, as without a guard.
            let _ = SELF_PROCESS.set_fault_handler(0);
        }
        let _ = Return(ret).reply(Tag::new(reply::RESUME), [0; 4]);
    }
}
