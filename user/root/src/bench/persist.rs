//! The checkpoint's pause (docs/persistence.md, "The pause"): BEGIN for a
//! persistent working set of 16, 64 and 256 MiB of mapped data pages, and
//! what the copy-on-write costs the first writer after it; and the
//! incremental checkpoint ("Incremental checkpoints"): what a checkpoint
//! after k pages were dirtied writes, and the write-out's work per MiB.
//! Run alone in a boot of its own with a large pool (tools/bench.py:
//! `pool=288`, 1.5 GiB), as nothing else may use the pool meanwhile.

use alloc::collections::BTreeMap;

use keep_abi::{Account, Aspace, CHECKPOINT, MEMORY, PERSISTENT_MEMORY, SELF_ASPACE, layout, rights, ty};
use keep_checkpointer::store;
use keep_rt::println;

use super::{BenchResult, Ctx, RUNS, Runs, Suite, tsc};
use crate::Root;

/// Where the working set is mapped in its persistent space.
const SET_VA: u64 = 0x0000_1000_0000_0000;
/// Where the root task maps the pages it writes after BEGIN: a table of
/// its own.
const COW_VA: u64 = 0x0000_5400_0000_0000;
/// Where the root task maps the first DIRTY pages of the working set, to
/// dirty them between checkpoints (its own space: no kernel object of the
/// pool changes when it writes), and the page records are read into.
const DIRTY_VA: u64 = 0x0000_5500_0000_0000;
const DIRTY: u64 = 256;
const READ_VA: u64 = 0x0000_5600_0000_0000;
/// The pages dirtied before each incremental checkpoint.
const K: u64 = 64;
const WORDS: usize = layout::CHECKPOINT_RECORD_WORDS as usize;

/// The checkpointer's side of one checkpoint, the disk aside: BEGIN, every
/// record READ against the checkpoint of epoch `since` (0: none), each
/// record sealed again hashed (SHA-256, as the store does), and those whose
/// content differs from the last checkpoint's (the store writes only
/// those: their nonce, which follows frame and content, differs) read
/// again, as the store's write fetches them; END.  `last` holds each
/// frame's nonce in the last checkpoint.  Returns the epoch, the records
/// written, the data pages among them, and the instructions after BEGIN.
fn checkpoint(b: u64, rd: u64, since: u64, last: &mut BTreeMap<u64, u64>) -> Result<(u64, u64, u64, u64), alloc::string::String> {
    let (epoch, n) = CHECKPOINT.begin(b).ctx("BEGIN")?;
    let t0 = tsc();
    let (mut written, mut pages) = (0, 0);
    let mut i = 0;
    while i < n {
        let mut d = [0u64; WORDS];
        let (same, ..) = CHECKPOINT.read(i, rd, d.as_mut_ptr() as u64, since).ctx("READ")?;
        if same > 0 {
            i += same;
            continue;
        }
        // SAFETY: the reading page, mapped at READ_VA.
        core::hint::black_box(store::sha(unsafe { &*(READ_VA as *const store::Page) }));
        let frame = d[0] & 0xffff_ffff;
        if last.insert(frame, d[5]) != Some(d[5]) {
            CHECKPOINT.read(i, rd, d.as_mut_ptr() as u64, 0).ctx("READ again")?;
            written += 1;
            pages += (frame != 0 && d[0] >> 32 & 0xff == 4) as u64; // a data page (FRAME_PAGE)
        }
        i += 1;
    }
    let t = tsc() - t0;
    CHECKPOINT.end().ctx("END")?;
    Ok((epoch, written, pages, t))
}

fn dirty(k: u64, round: u64) {
    for i in 0..k {
        // SAFETY: the working set's first DIRTY pages, mapped writable at DIRTY_VA.
        unsafe { core::ptr::write_volatile((DIRTY_VA + i * 4096) as *mut u64, round) };
    }
}

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
    let [a, sp, pg, b, rd] = [(); 5].map(|_| root.slots.alloc());
    let [Some(a), Some(sp), Some(pg), Some(b), Some(rd)] = [a, sp, pg, b, rd] else {
        return Err("no slot".into());
    };
    CHECKPOINT.open().ctx("CHECKPOINT.OPEN (the pool must be shut: a boot of its own)")?;
    PERSISTENT_MEMORY.create_account(a).ctx("CREATE_ACCOUNT")?;
    let set = Account(a);
    // Page tables for 256 MiB of 4 KiB pages, and the space itself.
    PERSISTENT_MEMORY.donate(a, 256 * 256 / 512 + 32).ctx("DONATE")?;
    set.create_aspace(sp).ctx("CREATE_ASPACE")?;
    MEMORY.create_account(b).ctx("CREATE_ACCOUNT (shadows)")?;
    let mut pages = 0u64;
    // Incremental checkpoints of a 16 MiB working set, the root task
    // writing into its first pages between them.
    if s.wants_any("persist.checkpoint.incremental") || s.wants("persist.write") {
        while pages < 16 * 256 {
            PERSISTENT_MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            Aspace(sp).map(pg, SET_VA + pages * 4096, rights::READ | rights::WRITE).ctx("MAP")?;
            if pages < DIRTY {
                SELF_ASPACE.map(pg, DIRTY_VA + pages * 4096, rights::READ | rights::WRITE).ctx("MAP here")?;
            }
            SELF_ASPACE.delete_cap(pg).ctx("DELETE")?;
            pages += 1;
        }
        MEMORY.retype(ty::PAGE, rd).ctx("RETYPE (the reading page)")?;
        SELF_ASPACE.map(rd, READ_VA, rights::READ | rights::WRITE).ctx("MAP the reading page")?;
        fund_shadows(b)?;
        let mut last = BTreeMap::new();
        // The first checkpoint reads and writes everything.
        let (mut since, ..) = checkpoint(b, rd, 0, &mut last)?;
        let mut round = 1;
        let mut measure = |k: u64, since: &mut u64| -> Result<([u64; RUNS], [u64; RUNS], [u64; RUNS]), alloc::string::String> {
            let (mut w, mut p, mut t) = ([0u64; RUNS], [0u64; RUNS], [0u64; RUNS]);
            for r in 0..RUNS {
                dirty(k, round);
                round += 1;
                let (e, written, pages, ticks) = checkpoint(b, rd, *since, &mut last)?;
                *since = e;
                (w[r], p[r], t[r]) = (written, pages, ticks.saturating_sub(s.pair));
            }
            Ok((w, p, t))
        };
        let (w, p, _) = measure(K, &mut since)?;
        let (_, _, t0) = measure(0, &mut since)?;
        let (wm, pm, tm) = measure(DIRTY, &mut since)?;
        if p.iter().any(|&x| x != K) || pm.iter().any(|&x| x != DIRTY) {
            println!("bench: persist.checkpoint.incremental: pages written {p:?} for {K} dirtied, {pm:?} for {DIRTY}");
        }
        println!(
            "bench: persist.checkpoint.incremental: {K} pages dirtied in a 16 MiB working set: {} records written, {} of them data pages",
            Runs(w).median(),
            Runs(p).median()
        );
        s.report("persist.checkpoint.incremental", "records", Runs(w));
        s.report("persist.checkpoint.incremental.pages", "pages", Runs(p));
        // Per MiB written out: 256 pages dirtied against none, the disk's
        // writes aside.
        let mut per = [0u64; RUNS];
        let base = Runs(t0).median();
        for (x, t) in per.iter_mut().zip(tm) {
            *x = t.saturating_sub(base) * 256 / DIRTY;
        }
        let _ = (wm, SELF_ASPACE.unmap(READ_VA));
        s.report("persist.write", "instructions", Runs(per));
        for i in 0..DIRTY {
            let _ = SELF_ASPACE.unmap(DIRTY_VA + i * 4096);
        }
    }
    for (name, mib) in [("persist.pause.16m", 16u64), ("persist.pause.64m", 64), ("persist.pause.256m", 256)] {
        // Grow the working set to mib MiB: each page made, mapped, and its
        // capability dropped (the mapping keeps it).
        while pages < mib * 256 {
            PERSISTENT_MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            Aspace(sp).map(pg, SET_VA + pages * 4096, rights::READ | rights::WRITE).ctx("MAP")?;
            SELF_ASPACE.delete_cap(pg).ctx("DELETE")?;
            pages += 1;
        }
        if !s.wants(name) {
            continue;
        }
        fund_shadows(b)?;
        let mut v = [0u64; RUNS];
        for x in v.iter_mut() {
            let t0 = tsc();
            let r = CHECKPOINT.begin(b);
            let t = tsc() - t0;
            r.ctx("BEGIN")?;
            CHECKPOINT.end().ctx("END")?;
            *x = t.saturating_sub(s.pair);
        }
        s.report(name, "instructions", Runs(v));
    }
    // The first write into a table of 512 pages after BEGIN: one fault
    // lifting the protection and 512 copies.
    if s.wants("persist.cow.table512") {
        for i in 0..512 {
            PERSISTENT_MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            SELF_ASPACE.map(pg, COW_VA + i * 4096, rights::READ | rights::WRITE).ctx("MAP")?;
            SELF_ASPACE.delete_cap(pg).ctx("DELETE")?;
        }
        fund_shadows(b)?;
        let mut v = [0u64; RUNS];
        for x in v.iter_mut() {
            CHECKPOINT.begin(b).ctx("BEGIN")?;
            let t0 = tsc();
            for i in 0..512 {
                // SAFETY: the page mapped writable at COW_VA + i * 4096 above.
                unsafe { core::ptr::write_volatile((COW_VA + i * 4096) as *mut u64, i) };
            }
            *x = (tsc() - t0).saturating_sub(s.pair);
            CHECKPOINT.end().ctx("END")?;
        }
        s.report("persist.cow.table512", "instructions", Runs(v));
    }
    Ok(())
}

/// BEGIN wants a free frame in the shadows' account b for every record it
/// might copy.
fn fund_shadows(b: u64) -> BenchResult {
    let need = CHECKPOINT.info().ctx("INFO")?.3 + 8;
    let have = Account(b).info_raw().ctx("ACCOUNT.INFO")?.0;
    if have < need {
        MEMORY.donate(b, need - have).ctx("DONATE (shadows)")?;
    }
    Ok(())
}
