//! The server's heap: keep-rt's 1 MiB is too small for many processes and
//! files, so the server grows its own, mapping pages of its bank
//! (frames.rs) at the top as it needs them (keep_rt::set_allocator).  Heap
//! pages are never given back.

use core::alloc::{GlobalAlloc, Layout};
use core::ptr::{NonNull, null_mut};

use keep_abi::{SELF_ASPACE, rights};
use linked_list_allocator::LockedHeap;

/// Where the heap starts in the server's space, and how far it may grow.
const BASE: u64 = 0x0000_3000_0000_0000;
const MAX: u64 = 256 << 20;
/// Bytes mapped at a time.
const STEP: u64 = 256 << 10;
/// The slot a heap page's capability passes through (the mapping keeps
/// the page).
const SLOT: u64 = 0x13;

pub struct Growing {
    heap: LockedHeap,
}

pub static HEAP: Growing = Growing { heap: LockedHeap::empty() };

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

// SAFETY: LockedHeap serialises; grown memory is mapped before the heap
// is told about it.
unsafe impl GlobalAlloc for Growing {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let mut h = self.heap.lock();
        loop {
            if h.size() > 0
                && let Ok(p) = h.allocate_first_fit(layout)
            {
                return p.as_ptr();
            }
            let top = if h.size() == 0 { BASE } else { h.top() as u64 };
            let want = (layout.size() as u64 + layout.align() as u64 + 4096).next_multiple_of(STEP);
            if top + want > BASE + MAX || !map(top, want) {
                return null_mut();
            }
            if h.size() == 0 {
                // SAFETY: [BASE, BASE+want) was just mapped and is used by
                // nothing else.
                unsafe { h.init(BASE as *mut u8, want as usize) };
            } else {
                // SAFETY: [top, top+want) was just mapped right above the heap.
                unsafe { h.extend(want as usize) };
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: ptr came from alloc above with this layout.
        unsafe { self.heap.lock().deallocate(NonNull::new_unchecked(ptr), layout) };
    }
}
