//! MEMORY.REVOKE's restart point (docs/kernel-manual.md, "Objects"): a
//! revoke searches the address spaces in parts of REVOKE_TABLES page tables
//! and its invocation restarts from the system call between them.  These
//! tests build far more tables than a part searches, so that the revoke
//! restarts many times (KERNEL.INFO REVOKE_RESTARTS counts the parts), and
//! check that the result is complete and exact: every mapping of the frame
//! gone, in every space, user half and capability segment, and nothing
//! else.

use alloc::vec::Vec;

use keep_abi::{Account, Aspace, Error, KERNEL, MEMORY, SELF_ASPACE, info, layout, rights, slot, ty};

use crate::{Ctx, Cx, TestResult, expect_err};

const RW: u64 = rights::READ | rights::WRITE;
/// Address spaces made for the test, and 2 MiB regions (a page table each)
/// the page is mapped in, in each of them.
const SPACES: usize = 3;
const REGIONS: u64 = 48;
const BASE: u64 = 0x6000_0000_0000;
const STEP: u64 = 2 << 20;
/// In ktest's own space too, far from everything else it maps.
const OWN_BASE: u64 = 0x6100_0000_0000;
const OWN_REGIONS: u64 = 4;

fn restarts() -> Result<u64, alloc::string::String> {
    KERNEL.info(info::REVOKE_RESTARTS).ctx("INFO REVOKE_RESTARTS")
}

fn invariants() -> TestResult {
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariant violations");
    Ok(())
}

fn new_account(cx: &mut Cx, frames: u64) -> Result<Account, alloc::string::String> {
    let s = cx.slot()?;
    MEMORY.create_account(s).ctx("CREATE_ACCOUNT")?;
    MEMORY.donate(s, frames).ctx("DONATE")?;
    Ok(Account(s))
}

/// A page mapped in every region of three new spaces (twice in the first
/// region of each) and of ktest's own, beside another page in the same
/// tables: REVOKE removes exactly the first page's mappings, restarting
/// along the way, and gives its frame back.
pub fn page_everywhere(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, SPACES as u64 * (REGIONS + 4) + 16)?;
    let spaces = cx.slots::<SPACES>()?;
    let victim = cx.retype(ty::PAGE)?;
    let other = cx.retype(ty::PAGE)?;
    let r = (|| {
        let mut all: Vec<Aspace> = Vec::new();
        for &s in &spaces {
            a.create_aspace(s).ctx("CREATE_ASPACE")?;
            all.push(Aspace(s));
        }
        let mut want = 0u64;
        for x in &all {
            for i in 0..REGIONS {
                x.map(victim, BASE + i * STEP, RW).ctx("MAP the page")?;
                x.map(other, BASE + i * STEP + 0x1000, rights::READ).ctx("MAP the other page")?;
                want += 1;
            }
            x.map(victim, BASE + 0x2000, rights::READ).ctx("MAP the page twice")?;
            want += 1;
        }
        for i in 0..OWN_REGIONS {
            SELF_ASPACE.map(victim, OWN_BASE + i * STEP, RW).ctx("MAP in ktest")?;
            SELF_ASPACE.map(other, OWN_BASE + i * STEP + 0x1000, RW).ctx("MAP the other in ktest")?;
            want += 1;
        }
        let (_, other_frame) = SELF_ASPACE.lookup(OWN_BASE + 0x1000).ctx("LOOKUP the other page")?;
        let (before, pool) = (restarts()?, MEMORY.free().ctx("FREE")?);

        let n = MEMORY.revoke(victim).ctx("REVOKE")?;
        ensure!(n == want, "REVOKE removed {n} mappings, want {want}");
        let parts = restarts()? - before;
        // At least every page table of the test's spaces was searched.
        let least = (SPACES as u64 * REGIONS).div_ceil(layout::REVOKE_TABLES) - 1;
        ensure!(parts >= least, "REVOKE restarted {parts} times, want at least {least}");
        ensure!(!SELF_ASPACE.identify_cap(victim).ctx("IDENTIFY_CAP")?.live, "the page's capability is still live");
        ensure!(MEMORY.free().ctx("FREE")? == pool + 1, "the page's frame did not come back");
        for x in all.iter().chain([&SELF_ASPACE]) {
            let (base, regions) = if x.0 == SELF_ASPACE.0 { (OWN_BASE, OWN_REGIONS) } else { (BASE, REGIONS) };
            for i in 0..regions {
                expect_err(x.lookup(base + i * STEP), Error::NOT_MAPPED, "LOOKUP of the page after REVOKE")?;
                let (_, f) = x.lookup(base + i * STEP + 0x1000).ctx("LOOKUP of the other page after REVOKE")?;
                ensure!(f == other_frame, "the other page's mapping changed: frame {f:#x}, want {other_frame:#x}");
            }
            if x.0 != SELF_ASPACE.0 {
                expect_err(x.lookup(BASE + 0x2000), Error::NOT_MAPPED, "LOOKUP of the second mapping")?;
            }
        }
        // A page that was never revoked maps as before.
        all[0].map(other, BASE + 0x3000, rights::READ).ctx("MAP the other page again")?;
        for i in 0..OWN_REGIONS {
            SELF_ASPACE.unmap(OWN_BASE + i * STEP + 0x1000).ctx("UNMAP the other page")?;
        }
        invariants()
    })();
    for i in 0..OWN_REGIONS {
        let _ = SELF_ASPACE.unmap(OWN_BASE + i * STEP);
        let _ = SELF_ASPACE.unmap(OWN_BASE + i * STEP + 0x1000);
    }
    let _ = a.destroy_all(slot::MEMORY);
    let _ = MEMORY.reclaim(other);
    cx.drop_slots(&spaces);
    cx.drop_slots(&[a.0, victim, other]);
    r
}

/// Capability addresses a capability-segment page table apart (a cappage
/// covers 4 KiB of the segment, a table 2 MiB).
const CAP_STEP: u64 = 512 * layout::CAPPAGE_SLOTS;
/// More cappage mappings than an address space's record holds: the first
/// ones go with their records, the rest are found in the segment's tables.
const CAPPAGE_MAPS: u64 = 300;

/// A cappage mapped at 300 capability addresses of one space, each in a
/// table of its own, and another cappage beside it: REVOKE removes every
/// mapping of the first (recorded or not), restarting along the way; the
/// other's slots still work.
pub fn cappage_everywhere(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, CAPPAGE_MAPS + 32)?;
    let [asp, got] = cx.slots::<2>()?;
    let victim = cx.retype(ty::CAPPAGE)?;
    let other = cx.retype(ty::CAPPAGE)?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        let x = Aspace(asp);
        x.map_cappage(other, 0).ctx("MAP_CAPPAGE the other")?;
        x.insert_cap(slot::CONSOLE, 1, 0).ctx("INSERT_CAP into the other")?;
        for i in 1..=CAPPAGE_MAPS {
            x.map_cappage(victim, i * CAP_STEP).ctx("MAP_CAPPAGE")?;
        }
        x.insert_cap(slot::CONSOLE, CAP_STEP + 1, 0).ctx("INSERT_CAP into the cappage")?;
        let (before, pool) = (restarts()?, MEMORY.free().ctx("FREE")?);

        let n = MEMORY.revoke(victim).ctx("REVOKE the cappage")?;
        ensure!(n == CAPPAGE_MAPS, "REVOKE removed {n} mappings, want {CAPPAGE_MAPS}");
        let parts = restarts()? - before;
        let least = CAPPAGE_MAPS.div_ceil(layout::REVOKE_TABLES) - 1;
        ensure!(parts >= least, "REVOKE restarted {parts} times, want at least {least}");
        ensure!(MEMORY.free().ctx("FREE")? == pool + 1, "the cappage's frame did not come back");
        for i in [1, 2, CAPPAGE_MAPS / 2, CAPPAGE_MAPS] {
            expect_err(x.extract_cap(i * CAP_STEP + 1, got, 0), Error::NO_CAPPAGE, "a slot of the revoked cappage")?;
        }
        x.extract_cap(1, got, 0).ctx("EXTRACT_CAP from the other cappage")?;
        SELF_ASPACE.delete_cap(got).ctx("DELETE")?;
        // Its addresses are free again.
        x.map_cappage(other, CAP_STEP).ctx("MAP_CAPPAGE where the revoked one was")?;
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    let _ = MEMORY.reclaim(other);
    cx.drop_slots(&[a.0, asp, got, victim, other]);
    r
}

/// An account whose space maps pages in 64 regions (a page table each) and
/// whose 40 processes run there: DESTROY_ALL goes in parts, restarting
/// along the way, and gives every frame back, the pages' mappings gone.
pub fn destroy_all_parts(cx: &mut Cx) -> TestResult {
    const DREGIONS: u64 = 64;
    const PROCS: usize = 40;
    let donated = DREGIONS + PROCS as u64 + 24;
    let a = new_account(cx, donated)?;
    let [asp, p] = cx.slots::<2>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        let pool = MEMORY.free().ctx("FREE")?;
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        let x = Aspace(asp);
        for i in 0..DREGIONS {
            x.map(page, BASE + i * STEP, RW).ctx("MAP")?;
        }
        for _ in 0..PROCS {
            a.create_process(asp, p).ctx("CREATE_PROCESS")?;
            SELF_ASPACE.delete_cap(p).ctx("DELETE")?;
        }
        expect_err(MEMORY.reclaim(page), Error::IN_USE, "RECLAIM of the mapped page")?;
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        let least = (PROCS as u64 - 1) / 32 + DREGIONS / layout::DESTROY_TABLES - 1;
        ensure!(parts >= least, "DESTROY_ALL restarted {parts} times, want at least {least}");
        expect_err(x.lookup(BASE), Error::STALE, "the space after DESTROY_ALL")?;
        MEMORY.reclaim(page).ctx("RECLAIM after DESTROY_ALL: the page is mapped nowhere")?;
        let back = MEMORY.free().ctx("FREE")?;
        // The frames donated, the account's own and the page.
        let want = pool + donated + 2;
        ensure!(back == want, "the pool has {back} frames after DESTROY_ALL and RECLAIM, want {want}");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&[a.0, asp, p, page]);
    r
}

/// Frames moved in the tests of DONATE, RECLAIM and DESTROY_ALL's parts:
/// several parts of MOVE_FRAMES and a last one that is not whole.
const MOVED: u64 = 5 * layout::MOVE_FRAMES + 123;

fn move_restarts() -> Result<u64, alloc::string::String> {
    KERNEL.info(info::MOVE_RESTARTS).ctx("INFO MOVE_RESTARTS")
}

/// DONATE of MOVED frames goes in parts (KERNEL.INFO MOVE_RESTARTS counts
/// the restarts) and ends as DONATEs of one part each do: the account
/// holds exactly MOVED unused frames, the pool has exactly MOVED fewer.
/// RECLAIM of them goes in parts too and gives exactly those back.
pub fn donate_reclaim_parts(cx: &mut Cx) -> TestResult {
    let [big, small] = cx.slots::<2>()?;
    let r = (|| {
        MEMORY.create_account(big).ctx("CREATE_ACCOUNT")?;
        MEMORY.create_account(small).ctx("CREATE_ACCOUNT")?;
        let (big, small) = (Account(big), Account(small));
        let pool = MEMORY.free().ctx("FREE")?;
        let before = move_restarts()?;
        MEMORY.donate(big.0, MOVED).ctx("DONATE")?;
        let parts = move_restarts()? - before;
        let least = MOVED / layout::MOVE_FRAMES;
        ensure!(parts >= least, "DONATE of {MOVED} frames restarted {parts} times, want at least {least}");
        ensure!(MEMORY.free().ctx("FREE")? == pool - MOVED, "the pool did not give exactly {MOVED} frames");
        // The same frames donated a part at a time, none restarting.
        let mut left = MOVED;
        while left > 0 {
            let n = left.min(layout::MOVE_FRAMES);
            MEMORY.donate(small.0, n).ctx("DONATE a part")?;
            left -= n;
        }
        let (b, s) = (big.info_raw().ctx("INFO")?, small.info_raw().ctx("INFO")?);
        ensure!(b == s, "the account donated in one call holds {b:?}, the one donated in parts {s:?}");
        ensure!(b.0 == MOVED && b.1 == 0, "the account holds {} unused and {} used frames, want {MOVED} and 0", b.0, b.1);
        // RECLAIM of more than it holds moves nothing, even in parts.
        let pool = MEMORY.free().ctx("FREE")?;
        expect_err(big.reclaim(slot::MEMORY, MOVED + 1), Error::NO_MEMORY, "RECLAIM of one frame too many")?;
        ensure!(big.info_raw().ctx("INFO")?.0 == MOVED, "RECLAIM of too many moved frames");
        let before = move_restarts()?;
        big.reclaim(slot::MEMORY, MOVED).ctx("RECLAIM")?;
        let parts = move_restarts()? - before;
        ensure!(parts >= least, "RECLAIM of {MOVED} frames restarted {parts} times, want at least {least}");
        ensure!(big.info_raw().ctx("INFO")?.0 == 0, "the account kept unused frames after RECLAIM of all");
        ensure!(MEMORY.free().ctx("FREE")? == pool + MOVED, "the pool did not get exactly {MOVED} frames back");
        invariants()
    })();
    let _ = Account(big).destroy_all(slot::MEMORY);
    let _ = Account(small).destroy_all(slot::MEMORY);
    cx.drop_slots(&[big, small]);
    r
}

/// DESTROY_ALL of an account with MOVED unused frames beside a space and a
/// process gives the frames back in parts (DESTROY_RESTARTS), and the pool
/// ends with every frame it gave.
pub fn destroy_all_frames(cx: &mut Cx) -> TestResult {
    let [acct, asp, p] = cx.slots::<3>()?;
    let r = (|| {
        let pool = MEMORY.free().ctx("FREE")?;
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        let a = Account(acct);
        MEMORY.donate(acct, MOVED).ctx("DONATE")?;
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        a.create_process(asp, p).ctx("CREATE_PROCESS")?;
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        let least = MOVED / layout::MOVE_FRAMES;
        ensure!(parts >= least, "DESTROY_ALL of {MOVED} unused frames restarted {parts} times, want at least {least}");
        expect_err(a.info_raw(), Error::STALE, "the account after DESTROY_ALL")?;
        expect_err(Aspace(asp).lookup(BASE), Error::STALE, "its space after DESTROY_ALL")?;
        let back = MEMORY.free().ctx("FREE")?;
        ensure!(back == pool, "the pool has {back} frames after DESTROY_ALL, want {pool}");
        invariants()
    })();
    let _ = Account(acct).destroy_all(slot::MEMORY);
    cx.drop_slots(&[acct, asp, p]);
    r
}

/// Three spaces, each with a page mapped in a whole number of parts'
/// worth of page tables: a part that ends exactly with a space's last
/// table leaves nothing for the next space, so DESTROY_ALL restarts all
/// along, and every frame comes back.
pub fn destroy_all_whole_parts(cx: &mut Cx) -> TestResult {
    const TABLES: u64 = 12 * layout::DESTROY_TABLES;
    let donated = SPACES as u64 * (TABLES + 4) + 8;
    let a = new_account(cx, donated)?;
    let spaces = cx.slots::<SPACES>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        let pool = MEMORY.free().ctx("FREE")?;
        for &s in &spaces {
            a.create_aspace(s).ctx("CREATE_ASPACE")?;
            for i in 0..TABLES {
                Aspace(s).map(page, BASE + i * STEP, RW).ctx("MAP")?;
            }
        }
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        let least = SPACES as u64 * TABLES / layout::DESTROY_TABLES - 1;
        ensure!(parts >= least, "DESTROY_ALL of {SPACES} spaces of {TABLES} tables restarted {parts} times, want at least {least}");
        MEMORY.reclaim(page).ctx("RECLAIM after DESTROY_ALL: the page is mapped nowhere")?;
        let back = MEMORY.free().ctx("FREE")?;
        let want = pool + donated + 2;
        ensure!(back == want, "the pool has {back} frames after DESTROY_ALL and RECLAIM, want {want}");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    let _ = MEMORY.reclaim(page);
    cx.drop_slots(&spaces);
    cx.drop_slots(&[a.0, page]);
    r
}

/// A DMA domain mapping a page in 64 tables of its own (2 MiB apart):
/// ACCOUNT.DESTROY of it, and DESTROY_ALL of an account holding another
/// such domain, go in parts of DESTROY_TABLES tables (DESTROY_RESTARTS),
/// unpin the page and give every frame back.
pub fn dma_domain_parts(cx: &mut Cx) -> TestResult {
    use keep_abi::DmaDomain;
    const DTABLES: u64 = 64;
    let donated = 2 * (DTABLES + 8);
    let a = new_account(cx, donated)?;
    let [one, two] = cx.slots::<2>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        let pool = MEMORY.free().ctx("FREE")?;
        for &d in &[one, two] {
            a.create_dma_domain(d).ctx("CREATE_DMA_DOMAIN")?;
            for i in 0..DTABLES {
                DmaDomain(d).map(page, i * STEP, RW).ctx("DMA_DOMAIN.MAP")?;
            }
        }
        let (free, used, _, _) = a.info_raw().ctx("INFO")?;
        ensure!(used >= 2 * DTABLES, "the domains use {used} frames, want at least {}", 2 * DTABLES);
        let least = DTABLES / layout::DESTROY_TABLES - 1;
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy(one).ctx("DESTROY of the domain")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        ensure!(parts >= least, "DESTROY of a domain of {DTABLES} tables restarted {parts} times, want at least {least}");
        expect_err(DmaDomain(one).lookup(0), Error::STALE, "the domain after DESTROY")?;
        let (free2, used2, _, _) = a.info_raw().ctx("INFO")?;
        ensure!(free2 + used2 == free + used && used2 == used / 2, "after DESTROY the account holds {free2} free and {used2} used, want {} and {}", free + used / 2, used / 2);
        expect_err(MEMORY.reclaim(page), Error::IN_USE, "RECLAIM of the page the other domain maps")?;
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        ensure!(parts >= least, "DESTROY_ALL of a domain of {DTABLES} tables restarted {parts} times, want at least {least}");
        expect_err(DmaDomain(two).lookup(0), Error::STALE, "the other domain after DESTROY_ALL")?;
        MEMORY.reclaim(page).ctx("RECLAIM after both domains went: the page is pinned nowhere")?;
        let back = MEMORY.free().ctx("FREE")?;
        let want = pool + donated + 2;
        ensure!(back == want, "the pool has {back} frames after DESTROY_ALL and RECLAIM, want {want}");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    let _ = MEMORY.reclaim(page);
    cx.drop_slots(&[a.0, one, two, page]);
    r
}

/// REVOKE0008: ACCOUNT.DESTROY_ALL of an account whose 40 processes are
/// all exported drops the exports in parts of 32, as it destroys live
/// processes (DESTROY_RESTARTS); the exports then open nowhere, their
/// pages are reclaimed as any page, and the pool has every frame back.
pub fn destroy_all_exports_in_parts(cx: &mut Cx) -> TestResult {
    const PROCS: usize = 40;
    let pool = MEMORY.free().ctx("FREE")?;
    let donated = PROCS as u64 + 24;
    let a = new_account(cx, donated)?;
    let asp = cx.slot()?;
    let mut procs = Vec::new();
    let mut exports = Vec::new();
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        for _ in 0..PROCS {
            let (p, d) = (cx.slot()?, cx.slot()?);
            procs.push(p);
            exports.push(d);
            a.create_process(asp, p).ctx("CREATE_PROCESS")?;
            a.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
        }
        ensure!(a.info_all().ctx("INFO")?[3] == PROCS as u64, "{PROCS} exported, INFO says otherwise");
        let before = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let parts = KERNEL.info(info::DESTROY_RESTARTS).ctx("INFO DESTROY_RESTARTS")? - before;
        let least = (PROCS as u64 - 1) / 32;
        ensure!(parts >= least, "DESTROY_ALL of {PROCS} exported processes restarted {parts} times, want at least {least}");
        for &d in &exports {
            expect_err(keep_abi::ACCOUNT.restore_process(d), Error::BAD_SEAL, "RESTORE_PROCESS of an export after DESTROY_ALL")?;
            MEMORY.reclaim(d).ctx("RECLAIM the export's page")?;
        }
        let back = MEMORY.free().ctx("FREE")?;
        // As before the account was made: its own frame and those donated.
        let want = pool;
        ensure!(back == want, "the pool has {back} frames after DESTROY_ALL and RECLAIM, want {want}");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&procs);
    cx.drop_slots(&exports);
    cx.drop_slots(&[a.0, asp]);
    r
}
