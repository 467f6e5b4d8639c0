//! Kernel memory taken back from live tasks (seed 003): one page table
//! revoked and rebuilt by the next fault, a process exported and restored,
//! and how much of a live task's kernel memory its kpager can take back.

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    ACCOUNT, Account, Aspace, MEMORY, Process, SELF_ASPACE, Sender, Tag, layout, rights, slot, state,
    ty,
};
use keep_loader::{Grant, Loader, Spec};
use keep_rt::println;

use super::fault::{FAULTS, SAMPLES, handled};
use super::{BenchResult, Ctx, Suite, tsc};
use crate::Root;
use keep_loader::thread::Args;

/// Where the page-table benchmark's page lives: alone under its table.
const PT_VADDR: u64 = 0x0000_5300_0000_0000;
/// The slot the revoked table's frame comes back in (set before the run).
static DEST: AtomicU64 = AtomicU64::new(0);

/// The task side: takes its own page table back through the kpager's
/// account capability (it is in the root task, which holds it), then
/// touches the page, whose fault the root task answers with MAP.  Timed:
/// REVOKE_TABLE, giving the frame back to the pool (RECLAIM), the fault,
/// the pager's MAP (which builds the table again) and the retried write.
fn table_faulter(a: &Args) -> u64 {
    let pair = a.words[1];
    let dest = DEST.load(SeqCst);
    let mut code = 0;
    // SAFETY: PT_VADDR is this benchmark's; the first write faults it in.
    unsafe { core::ptr::write_volatile(PT_VADDR as *mut u64, 1) };
    'runs: for s in SAMPLES.iter() {
        let mut sum = 0;
        for _ in 0..FAULTS {
            let t0 = tsc();
            let r = ACCOUNT
                .revoke_table(slot::SELF_ASPACE, PT_VADDR, 1, dest)
                .and_then(|_| MEMORY.reclaim(dest));
            // SAFETY: as above: the write faults and the pager maps the page.
            unsafe { core::ptr::write_volatile(PT_VADDR as *mut u64, 2) };
            let t1 = tsc();
            if r.is_err() {
                code = 1;
                break 'runs;
            }
            sum += (t1 - t0).saturating_sub(pair);
        }
        s.store(sum / FAULTS, SeqCst);
    }
    Sender(a.words[0]).call(Tag::new(super::fault::DONE), [code, 0, 0, 0]);
    code
}

fn page_table(root: &mut Root, s: &mut Suite) -> BenchResult {
    let (page, dest) = match (root.slots.alloc(), root.slots.alloc()) {
        (Some(p), Some(d)) => (p, d),
        _ => return Err("no free slot".into()),
    };
    DEST.store(dest, SeqCst);
    let r = MEMORY.retype(ty::PAGE, page).ctx("RETYPE").and_then(|_| {
        handled(root, s, table_faulter, |m| {
            if m.words[0] != 14 || m.words[2] != PT_VADDR {
                return Err(alloc::format!("unexpected fault {:#x?}", m.words));
            }
            SELF_ASPACE.map(page, PT_VADDR, rights::READ | rights::WRITE).ctx("MAP")
        })
    });
    let _ = SELF_ASPACE.unmap(PT_VADDR);
    let _ = MEMORY.reclaim(page);
    for x in [page, dest] {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    s.report("kmem.revoke.page_table", "instructions", r?);
    Ok(())
}

/// REVOKE_PROCESS and RESTORE_PROCESS of a made (never started) process.
fn process(root: &mut Root, s: &mut Suite) -> BenchResult {
    let mut sl = [0u64; 3];
    for x in sl.iter_mut() {
        *x = root.slots.alloc().ok_or("no free slot")?;
    }
    let [asp, p, d] = sl;
    let r = (|| -> BenchResult {
        ACCOUNT.create_aspace(asp).ctx("CREATE_ASPACE")?;
        ACCOUNT.create_process(asp, p).ctx("CREATE_PROCESS")?;
        ACCOUNT.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
        ACCOUNT.restore_process(d).ctx("RESTORE_PROCESS")?;
        s.bench("kmem.revoke.process", 64, || {
            let _ = ACCOUNT.revoke_process(p, d);
            ACCOUNT.restore_process(d)
        });
        Process(p).status().ctx("STATUS after the runs")?;
        Ok(())
    })();
    let _ = ACCOUNT.destroy(p);
    let _ = ACCOUNT.destroy(asp);
    for x in sl {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    r
}

/// Data regions of the fraction task: one page in each of 16 regions 512 GiB
/// apart, so that each has its own PDPT, PD and PT (a deep, sparse tree).
const REGIONS: u64 = 16;
fn region_va(i: u64) -> u64 {
    (0x90 + i) << 39
}

/// A live task on an account of its own: `hello` sleeping 300 ms (it exits
/// 0 when it wakes) with 16 data pages mapped by its pager (here) in a deep
/// tree.  Its kpager takes back every data-region table, its capability
/// segment's tables and the process, then gives the process back (the
/// segment rebuilds itself, the pager maps the data again); the task must
/// then wake and exit 0.  Reports the
/// percentage of the account's frames in use that were taken back.
fn fraction(root: &mut Root, s: &mut Suite) -> BenchResult {
    if !s.wants("kmem.revoke.fraction") {
        return Ok(());
    }
    let img = root.image.as_ref().ok_or("no boot image")?;
    let hello = img.find("hello").ok_or("no hello in the boot image")?.data;
    let mut sl = [0u64; 3 + REGIONS as usize];
    for x in sl.iter_mut() {
        *x = root.slots.alloc().ok_or("no free slot")?;
    }
    let (acct, d, pd) = (sl[0], sl[1], sl[2]);
    let pages = &sl[3..];
    let a = Account(acct);
    let r = (|| -> BenchResult<(u64, u64)> {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct, 200).ctx("DONATE")?;
        let grants = [
            Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
            Grant { src: slot::TIMER, dest: slot::TIMER, rights: 0 },
        ];
        let spec = Spec { name: "kmemtask", elf: hello, arg0: 3, arg1: 300, grants: &grants, blob: None };
        let mut loader = Loader::new(&mut root.slots);
        loader.account = a;
        let child = loader.load(&spec).map_err(|e| alloc::format!("loading hello: {e}"))?;
        let x = Aspace(child.aspace.0);
        let r = (|| -> BenchResult<(u64, u64)> {
            for (i, &pg) in pages.iter().enumerate() {
                MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
                x.map(pg, region_va(i as u64), rights::READ | rights::WRITE).ctx("MAP data")?;
            }
            child.process.start().ctx("START")?;
            let [free0, used, taken0, _] = a.info_all().ctx("INFO")?;
            for i in 0..REGIONS {
                a.revoke_table(child.aspace.0, region_va(i), 3, d).ctx("REVOKE_TABLE")?;
                MEMORY.reclaim(d).ctx("RECLAIM")?;
            }
            // Its capability segment's tables (rebuilt from the space's
            // record when the program next looks a capability up).
            a.revoke_cap_table(child.aspace.0, 0, 3, d).ctx("REVOKE_CAP_TABLE")?;
            MEMORY.reclaim(d).ctx("RECLAIM")?;
            a.revoke_process(child.process.0, pd).ctx("REVOKE_PROCESS")?;
            let [free1, _, taken1, out] = a.info_all().ctx("INFO")?;
            let taken = taken1 - taken0 + (free1 - free0); // handed back + freed into the account
            ensure_out(out)?;
            // Give it all back: the process, and the pager maps the data again.
            a.restore_process(pd).ctx("RESTORE_PROCESS")?;
            for (i, &pg) in pages.iter().enumerate() {
                x.map(pg, region_va(i as u64), rights::READ | rights::WRITE).ctx("MAP data again")?;
            }
            let st = child.process.wait().ctx("WAIT")?;
            if st.state != state::EXITED || st.code != 0 {
                return Err(alloc::format!("the task did not come through: {st}"));
            }
            Ok((taken, used))
        })();
        let _ = loader.destroy(child);
        r
    })();
    let _ = a.destroy_all(slot::MEMORY);
    for &pg in pages {
        let _ = MEMORY.reclaim(pg);
    }
    for x in sl {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    let (taken, used) = r?;
    let pct = taken * 100 / used.max(1);
    println!("bench: kmem.revoke.fraction median={pct} min={pct} max={pct} unit=percent runs=1 ({taken} of {used} frames)");
    s.results.push(("kmem.revoke.fraction", pct));
    Ok(())
}

fn ensure_out(out: u64) -> BenchResult {
    if out != 1 {
        return Err(alloc::format!("{out} processes out, want 1"));
    }
    Ok(())
}

/// Where the wrapper benchmark keeps its copies: one cappage of slots.
const COPIES_BASE: u64 = 0x0500_0000;
const COPIES: u64 = layout::CAPPAGE_SLOTS;
/// Revocations per batch.
const REVOKES: u64 = 8;

/// Revoking (ACCOUNT.DESTROY) a wrapper with one capability to it against
/// one with COPIES more copied from it: the same work, since revocation is
/// the wrapper frame's version rising (it must stay O(1) in what was
/// derived through it, or revocation would cost what a client copied).  Untimed between revocations: making the
/// wrapper, copying it, deleting the stale copies.
fn wrapper_revoke(root: &mut Root, s: &mut Suite) -> BenchResult {
    let (w, cp) = match (root.slots.alloc(), root.slots.alloc()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err("no free slot".into()),
    };
    let r = (|| -> BenchResult {
        MEMORY.retype(ty::CAPPAGE, cp).ctx("RETYPE")?;
        SELF_ASPACE.map_cappage(cp, COPIES_BASE).ctx("MAP_CAPPAGE")?;
        let pair = s.pair;
        let batch = |copies: u64| -> BenchResult<u64> {
            let mut sum = 0;
            for _ in 0..REVOKES {
                ACCOUNT.create_wrapper(slot::TIMER, w, rights::READ).ctx("CREATE_WRAPPER")?;
                for i in 0..copies {
                    SELF_ASPACE.copy_cap(w, COPIES_BASE + i, 0).ctx("COPY_CAP")?;
                }
                let t0 = tsc();
                let e = ACCOUNT.destroy(w);
                let t1 = tsc();
                e.ctx("DESTROY")?;
                sum += (t1 - t0).saturating_sub(pair);
                SELF_ASPACE.delete_cap(w).ctx("DELETE")?;
                for i in 0..copies {
                    SELF_ASPACE.delete_cap(COPIES_BASE + i).ctx("DELETE copy")?;
                }
            }
            Ok(sum / REVOKES)
        };
        for (name, copies) in [("cap.wrapper.revoke", 0), ("cap.wrapper.revoke.copies256", COPIES)] {
            if !s.wants(name) {
                continue;
            }
            batch(copies)?;
            let mut runs = [0u64; super::RUNS];
            for r in runs.iter_mut() {
                *r = batch(copies)?;
            }
            s.report(name, "instructions", super::Runs(runs));
        }
        Ok(())
    })();
    let _ = SELF_ASPACE.unmap_cappage(COPIES_BASE);
    let _ = MEMORY.reclaim(cp);
    for x in [w, cp] {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    r
}

pub fn run(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[
        ("kmem.revoke.page_table", page_table),
        ("kmem.revoke.process", process),
        ("kmem.revoke.fraction", fraction),
        ("cap.wrapper.revoke", wrapper_revoke),
    ]);
}
