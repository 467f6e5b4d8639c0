//! A program that tries to get a message out: run as a constructor's
//! instance (ktest CTOR0001/0002), it invokes every capability it holds in
//! every IPC mode and with every label 0-16, fetches what it can through
//! any address space or cappage it holds and tries those too, and tries to
//! map every page it holds writable and mark it.  Whoever set the test up
//! watches for messages and marks; the exit code is the number of
//! capabilities the program found in its first cappage (what it was given).

#![no_std]
#![no_main]

use keep_abi::{Aspace, SELF_ASPACE, Tag, invoke_raw, ipc, rights, tag, ty};

keep_rt::entry!(main);

/// Own slots (below the first free slot nothing else uses): where fetched
/// capabilities land, and a capability address for a held cappage.
const FETCHED: u64 = 200;
const SCRATCH: u64 = 201;
const CAPPAGE_AT: u64 = 0x1000;
const VA: u64 = 0x4000_0000_0000;
/// What a successful write leaves in a page.
pub const MARK: u64 = 0x1ea4_1ea4;

/// Slots that are the program's own objects (not a way out): its process,
/// address space and account are tried only with label 0 (no method), so
/// that it cannot stop, end or unmap itself before it has tried everything
/// else.
fn own(s: u64) -> bool {
    matches!(s, 3 | 4 | 6)
}

fn try_cap(s: u64, depth: u32) {
    let Ok(info) = SELF_ASPACE.identify_cap(s) else { return };
    if info.ty == ty::NULL {
        return;
    }
    // Every IPC mode: kernel objects answer a CALL (label = method).
    for label in 0..=16u64 {
        if own(s) && label != 0 {
            break;
        }
        let words = [SCRATCH, 1, 0, 0];
        // No time-out: a timed call answered by the fast path stays on the
        // kernel's list of sleepers, and the next one corrupts it (reported
        // to the kernel's maintainer).  Everything this program can call
        // answers: the bank, constructors, kernel objects, and in the
        // not-confined test the spy.
        let _ = ipc(s, Tag::new(label).with_mode(tag::MODE_CALL), words, 0);
        let _ = ipc(s, Tag::new(label).with_mode(tag::MODE_SEND).send_nonblocking(), words, 0);
        let _ = ipc(s, Tag::new(label).with_mode(tag::MODE_SEND_RECV).send_nonblocking().recv_nonblocking(), words, 0);
        let _ = SELF_ASPACE.delete_cap(SCRATCH);
    }
    if !own(s) {
        for method in 1..=16u64 {
            let _ = invoke_raw(s, method, [SCRATCH, VA, rights::READ | rights::WRITE, 0]);
            let _ = SELF_ASPACE.delete_cap(SCRATCH);
            let _ = SELF_ASPACE.unmap(VA);
        }
    }
    match info.ty {
        ty::PAGE => {
            if SELF_ASPACE.map(s, VA, rights::READ | rights::WRITE).is_ok() {
                // SAFETY: just mapped writable at VA.
                unsafe { (VA as *mut u64).write_volatile(MARK) };
                let _ = SELF_ASPACE.unmap(VA);
            }
        }
        ty::ASPACE if depth == 0 && s != 4 => {
            for t in 0..256 {
                if Aspace(s).extract_cap(t, FETCHED, 0).is_ok() {
                    try_cap(FETCHED, depth + 1);
                    let _ = SELF_ASPACE.delete_cap(FETCHED);
                }
            }
        }
        ty::CAPPAGE if depth == 0 => {
            if SELF_ASPACE.map_cappage(s, CAPPAGE_AT).is_ok() {
                for t in CAPPAGE_AT..CAPPAGE_AT + 256 {
                    try_cap(t, depth + 1);
                }
                let _ = SELF_ASPACE.unmap_cappage(CAPPAGE_AT);
            }
        }
        _ => {}
    }
}

fn main(_: u64, _: u64) -> i32 {
    let held = (0..256).filter(|&s| SELF_ASPACE.identify_cap(s).is_ok_and(|i| i.ty != ty::NULL)).count();
    for s in 0..256 {
        if s != FETCHED && s != SCRATCH {
            try_cap(s, 0);
        }
    }
    held as i32
}
