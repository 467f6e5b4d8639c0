//! Where the server's frames come from: its space bank (the instance's
//! bank in slot 12, allocate, free and information only; the description's
//! `bank=` line limits it), in runs of 255 pages (`ALLOC_PAGES`: one bank
//! object per run, since the bank server holds a slot per object and has
//! a few thousand), kept for the server's life.  A frame given back goes to
//! a free list (mapped in the server still, when it was) and is zeroed when
//! it is used again; so the server's memory
//! is its bank's, and all of it goes back to the pool when the bank is
//! destroyed (the server killed, or crashed, and reaped by init).
//!
//! A bank call uses the IPC buffer: callers must have read what a message
//! brought in it (main.rs copies a request's string first).

use alloc::vec::Vec;

use keep_abi::{Error, SELF_ASPACE, Sender, layout::CAPPAGE_SLOTS};

/// The instance's bank (keep_constructor::INSTANCE_BANK).
const BANK: u64 = 0xc;
/// Capability addresses where the runs' cappages are mapped.
const RUNS: u64 = 0x0800_0000;
/// Pages per run (keep_spacebank::MAX_RUN).
const RUN: u64 = 255;

/// spacebank's protocol (keep_spacebank, not linked here: it would bring
/// the loader's client side twice).
mod req {
    pub const ALLOC_CAPPAGE: u64 = 2;
    pub const INFO: u64 = 8;
    pub const ALLOC_PAGES: u64 = 11;
}

struct Frames {
    /// Runs mapped so far; the next page of the last one.
    runs: u64,
    next: u64,
    /// Slots holding pages given back (their contents not cleared yet).
    free: Vec<u64>,
    /// Pages given back still mapped in the server (slot, local address):
    /// used again with no capability move and no mapping.
    mapped: Vec<(u64, u64)>,
}

static mut FRAMES: Frames = Frames { runs: 0, next: RUN, free: Vec::new(), mapped: Vec::new() };

#[allow(static_mut_refs)]
fn frames() -> &'static mut Frames {
    // SAFETY: the server is single threaded; no caller keeps it across a call.
    unsafe { &mut FRAMES }
}

/// A bank request whose reply's capability (if any) goes to `dest`:
/// word 0 of the reply is its status.
fn bank(label: u64, w0: u64, dest: Option<u64>) -> Result<[u64; 4], Error> {
    let buf = keep_rt::ipc_buffer();
    let mut tag = keep_abi::Tag::new(label);
    if let Some(d) = dest {
        tag = tag.with_slots(buf.set_recv_slots(&[d]));
    }
    buf.send_len = 0;
    let m = Sender(BANK).call(tag, [w0, 0, 0, 0]);
    if m.err != 0 {
        return Err(Error(m.err));
    }
    if m.words[0] != 0 {
        return Err(Error::NO_MEMORY);
    }
    Ok(m.words)
}

/// A page into the empty slot `dest`; Ok(true) when it may hold old bytes
/// (a page given back), Ok(false) when it is fresh (zeroed).
pub fn page(dest: u64) -> Result<bool, Error> {
    let f = frames();
    if let Some(s) = f.free.pop() {
        if let Err(e) = SELF_ASPACE.move_cap(s, dest) {
            f.free.push(s);
            return Err(e);
        }
        crate::env::env().free_slot(s);
        return Ok(true);
    }
    fresh_page(dest).map(|_| false)
}

/// A fresh (zeroed) page into the empty slot `dest`, never one given back;
/// allocates nothing on the heap (the heap grows with it).
pub fn fresh_page(dest: u64) -> Result<(), Error> {
    let f = frames();
    if f.next == RUN {
        let at = RUNS + f.runs * CAPPAGE_SLOTS;
        let tmp = crate::SCRATCH_SLOT;
        bank(req::ALLOC_PAGES, RUN, Some(tmp))?;
        let r = SELF_ASPACE.map_cappage(tmp, at);
        let _ = SELF_ASPACE.delete_cap(tmp);
        r?;
        f.runs += 1;
        f.next = 0;
    }
    let src = RUNS + (f.runs - 1) * CAPPAGE_SLOTS + f.next;
    SELF_ASPACE.move_cap(src, dest)?;
    f.next += 1;
    Ok(())
}

/// Takes back the page in slot `s` (mapped nowhere now); the slot is the
/// free list's until the page is used again.
pub fn give_back(s: u64) {
    frames().free.push(s);
}

/// Takes back the page in slot `s`, still mapped in the server at `local`
/// (and nowhere else); [`take_mapped`] gives it out again as it is.
pub fn give_back_mapped(s: u64, local: u64) {
    frames().mapped.push((s, local));
}

/// A page given back with [`give_back_mapped`]: (slot, local address);
/// its contents are the last user's.
pub fn take_mapped() -> Option<(u64, u64)> {
    frames().mapped.pop()
}

/// A cappage into the empty slot `dest` (one bank object each).
pub fn cappage(dest: u64) -> Result<(), Error> {
    bank(req::ALLOC_CAPPAGE, 0, Some(dest)).map(drop)
}

/// Frames the server could still have: what its bank has left, and the
/// pages given back (for sysinfo, statfs and /proc/meminfo).
pub fn available() -> u64 {
    let f = frames();
    let left = bank(req::INFO, 0, None).map_or(0, |w| w[1].saturating_sub(w[2]));
    left + f.free.len() as u64 + f.mapped.len() as u64 + (RUN - f.next)
}
