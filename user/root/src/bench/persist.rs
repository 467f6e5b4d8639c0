//! The checkpoint's pause (docs/persistence.md, "The pause"): BEGIN for a
//! persistent working set of 16, 64 and 256 MiB of mapped data pages, and
//! what the copy-on-write costs the first writer after it.  Run alone in a
//! boot of its own with a large pool (tools/bench.py: `pool=288`, 1.5 GiB),
//! as nothing else may use the pool meanwhile.

use keep_abi::{Account, Aspace, CHECKPOINT, MEMORY, PERSISTENT_MEMORY, SELF_ASPACE, rights, ty};

use super::{BenchResult, Ctx, RUNS, Runs, Suite, tsc};
use crate::Root;

/// Where the working set is mapped in its persistent space.
const SET_VA: u64 = 0x0000_1000_0000_0000;
/// Where the root task maps the pages it writes after BEGIN: a table of
/// its own.
const COW_VA: u64 = 0x0000_5400_0000_0000;

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
    let [a, sp, pg, b] = [(); 4].map(|_| root.slots.alloc());
    let [Some(a), Some(sp), Some(pg), Some(b)] = [a, sp, pg, b] else {
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
