//! Where the server's frames come from: its space bank (the instance's
//! bank in slot 12, allocate, free and information only; the description's
//! `bank=` line limits it), in runs of 255 pages kept for the server's
//! life, through keep-frames (shared with the block and network servers).
//! A frame given back goes to a free list (or, still mapped in the
//! server, to a second one kept here) and is zeroed when it is used
//! again; so the server's memory is its bank's, and all of it goes back to
//! the pool when the bank is destroyed (the server killed, or crashed, and
//! reaped by init).
//!
//! A bank call uses the IPC buffer: callers must have read what a message
//! brought in it (main.rs copies a request's string first).

use alloc::vec::Vec;

use keep_abi::Error;
use keep_frames::{Frames, INSTANCE_BANK, Page};

/// Capability addresses where the runs' cappages are mapped.
const RUNS: u64 = 0x0800_0000;

static mut FRAMES: Frames = Frames::new(INSTANCE_BANK, RUNS, crate::SCRATCH_SLOT);

/// Pages given back still mapped in the server (slot, local address):
/// used again with no capability move and no mapping.
static mut MAPPED: Vec<(u64, u64)> = Vec::new();

#[allow(static_mut_refs)]
fn frames() -> &'static mut Frames {
    // SAFETY: the server is single threaded; no caller keeps it across a call.
    unsafe { &mut FRAMES }
}

/// A page into the empty slot `dest`; Ok(true) when it may hold old bytes
/// (a page given back), Ok(false) when it is fresh (zeroed).
pub fn page(dest: u64) -> Result<bool, Error> {
    match frames().page(dest)? {
        Page::Reused(s) => {
            crate::env::env().free_slot(s);
            Ok(true)
        }
        Page::Fresh => Ok(false),
    }
}

/// A fresh (zeroed) page into the empty slot `dest`, never one given back;
/// allocates nothing on the heap (the heap grows with it).
pub fn fresh_page(dest: u64) -> Result<(), Error> {
    frames().fresh_page(dest)
}

/// Takes back the page in slot `s` (mapped nowhere now); the slot is the
/// free list's until the page is used again.
pub fn give_back(s: u64) {
    frames().give_back(s);
}

/// Takes back the page in slot `s`, still mapped in the server at `local`
/// (and nowhere else); [`take_mapped`] gives it out again as it is.
#[allow(static_mut_refs)]
pub fn give_back_mapped(s: u64, local: u64) {
    // SAFETY: the server is single threaded.
    unsafe { MAPPED.push((s, local)) }
}

/// A page given back with [`give_back_mapped`]: (slot, local address);
/// its contents are the last user's.
#[allow(static_mut_refs)]
pub fn take_mapped() -> Option<(u64, u64)> {
    // SAFETY: as above.
    unsafe { MAPPED.pop() }
}

/// A cappage into the empty slot `dest` (one bank object each).
pub fn cappage(dest: u64) -> Result<(), Error> {
    keep_frames::cappage(INSTANCE_BANK, dest)
}

/// Frames the server could still have: what its bank has left, and the
/// pages given back (for sysinfo, statfs and /proc/meminfo).
pub fn available() -> u64 {
    // SAFETY: as above.
    #[allow(static_mut_refs)]
    let mapped = unsafe { MAPPED.len() } as u64;
    frames().available() + mapped
}
