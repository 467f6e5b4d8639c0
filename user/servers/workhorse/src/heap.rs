//! The server's heap: keep-rt's 1 MiB is too small for many processes and
//! files, so the server grows its own, mapping pages of its bank
//! (frames.rs) at the top as it needs them (keep_rt::set_allocator).  Heap
//! pages are never given back.
//!
//! The allocator is `talc` (binned free lists: an allocation costs about
//! the same however fragmented the heap is).  Why not a first-fit list
//! allocator: its walk of every free hole makes each system call's small
//! allocations cost more the longer the server has run (the pipe round
//! trip, docs/performance.md).

use core::alloc::Layout;
use core::ptr::NonNull;

use keep_abi::{SELF_ASPACE, rights};
use talc::base::Talc;
use talc::base::binning::Binning;
use talc::source::Source;

/// Where the heap starts in the server's space, and how far it may grow.
const BASE: u64 = 0x0000_3000_0000_0000;
const MAX: u64 = 256 << 20;
/// Bytes mapped at a time.
const STEP: u64 = 256 << 10;
/// The slot a heap page's capability passes through (the mapping keeps
/// the page).
const SLOT: u64 = 0x13;

/// Maps [from, from+len) readable and writable; false when the pool or
/// the mapping refuses.
fn map(from: u64, len: u64) -> bool {
    let mut va = from;
    while va < from + len {
        // Fresh pages only: taking a page given back would free its slot,
        // which allocates, inside the allocator.
        let ok = crate::frames::fresh_page(SLOT).is_ok() && SELF_ASPACE.map(SLOT, va, rights::READ | rights::WRITE).is_ok();
        let _ = SELF_ASPACE.delete_cap(SLOT);
        if !ok {
            return false;
        }
        va += 4096;
    }
    true
}

/// Where talc's memory comes from: pages mapped at the heap's top.
#[derive(Debug)]
pub struct Pages {
    /// How far the heap is mapped.
    top: u64,
    /// The heap's end as talc knows it (after the first claim).
    end: Option<NonNull<u8>>,
}

// SAFETY: the server is single threaded; the lock serialises anyway.
unsafe impl Send for Pages {}

// SAFETY: acquire maps memory and hands it to talc through `talc` only; it
// allocates nothing (map() makes invocations, no heap use).
unsafe impl Source for Pages {
    fn acquire<B: Binning>(talc: &mut Talc<Self, B>, layout: Layout) -> Result<(), ()> {
        let top = talc.source.top;
        // Room for the request, its alignment and talc's own bookkeeping.
        let want = (layout.size() as u64 + layout.align() as u64 + 4096).next_multiple_of(STEP);
        if top + want > BASE + MAX || !map(top, want) {
            return Err(());
        }
        talc.source.top = top + want;
        let end = match talc.source.end {
            // SAFETY: [BASE, top+want) is mapped, read-write, and used by
            // nothing else.
            None => unsafe { talc.claim(BASE as *mut u8, (top + want - BASE) as usize) },
            // SAFETY: [top, top+want) was just mapped right above the heap.
            Some(e) => Some(unsafe { talc.extend(e, (top + want) as *mut u8) }),
        };
        talc.source.end = end;
        Ok(())
    }
}

pub static HEAP: talc::TalcLock<spinning_top::RawSpinlock, Pages> = talc::TalcLock::new(Pages { top: BASE, end: None });
