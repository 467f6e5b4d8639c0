//! The persistent pool and the checkpoint object (docs/persistence.md):
//! the shut pool and what it refuses, the rule that persistent objects
//! name persistent objects, a capture that holds the pool as it was at
//! BEGIN, sealed records whose nonce follows their content, and the
//! errors of every method.  Restoring needs a shut pool, which only a
//! fresh boot has: tools/test_checkpoint.py restores across boots.

use alloc::vec::Vec;

use keep_abi::{
    ACCOUNT, Account, Aspace, CHECKPOINT, Checkpoint, DmaDomain, Error, MEMORY, PERSISTENT_MEMORY, SELF_ASPACE, layout, rights,
    ty,
};

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

const VA: u64 = 0x0000_5f00_0000_0000;
const WORDS: usize = layout::CHECKPOINT_RECORD_WORDS as usize;
const SHUT: u64 = 0;
const OPEN: u64 = 2;
const CAPTURED: u64 = 3;
// Frame types as the kernel's frame table has them (kernel/mm/frame.h).
const F_PAGE: u64 = 4;
const F_PAGETABLE: u64 = 5;
const F_ASPACE: u64 = 6;
const F_PROCESS: u64 = 8;
const F_ACCOUNT: u64 = 9;
const F_KFREE: u64 = 10;
const F_NUMBERS: u64 = 13;

fn state() -> Result<u64, alloc::string::String> {
    Ok(CHECKPOINT.info().ctx("CHECKPOINT.INFO")?.0)
}

/// CKPT0001: from boot the pool is shut: nothing is made from it, nothing
/// is captured, forged or malformed records are refused with the pool
/// still shut; OPEN opens it once.
pub fn shut_pool(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [s, ro, pg]| {
        let (st, _, frames, used) = CHECKPOINT.info().ctx("INFO")?;
        ensure!(st == SHUT, "the pool is in state {st} at the start, not shut");
        ensure!(
            frames == layout::PERSISTENT_POOL_MIB * 256 && used == 0,
            "pool of {frames} frames with {used} in use, want {} and 0",
            layout::PERSISTENT_POOL_MIB * 256
        );
        ensure!(PERSISTENT_MEMORY.free().ctx("FREE")? == frames, "FREE of the shut pool");
        expect_err(PERSISTENT_MEMORY.retype(ty::PAGE, s), Error::BAD_STATE, "RETYPE from the shut pool")?;
        expect_err(PERSISTENT_MEMORY.create_account(s), Error::BAD_STATE, "CREATE_ACCOUNT from the shut pool")?;
        expect_err(PERSISTENT_MEMORY.donate(keep_abi::slot::ACCOUNT, 1), Error::BAD_STATE, "DONATE from the shut pool")?;
        expect_err(CHECKPOINT.begin(keep_abi::slot::ACCOUNT), Error::BAD_STATE, "BEGIN while shut")?;
        MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
        let mut d = [0u64; WORDS];
        let dp = d.as_mut_ptr() as u64;
        expect_err(CHECKPOINT.read(0, pg, dp, 0), Error::BAD_STATE, "READ while shut")?;
        expect_err(CHECKPOINT.end(), Error::BAD_STATE, "END while shut")?;
        expect_err(CHECKPOINT.resume(), Error::BAD_STATE, "RESUME with nothing restored")?;
        // Forged records: a kernel record with a made-up tag, one without
        // the nonce's mark, a frame outside the pool, a type that does not
        // persist, a descriptor the kernel cannot read.
        let restore = |d: [u64; WORDS]| CHECKPOINT.restore(pg, d.as_ptr() as u64);
        expect_err(restore([0, 0, 0x1234, 0x5678, 1, 1 << 63 | 42]), Error::BAD_SEAL, "RESTORE of a forged kernel record")?;
        expect_err(restore([0, 0, 0x1234, 0x5678, 1, 42]), Error::BAD_SEAL, "RESTORE with a nonce not the kernel's")?;
        expect_err(restore([1 | F_PAGE << 32, 0, 0, 0, 1, 1 << 63]), Error::INVALID_ARG, "RESTORE of frame 1 (outside the pool)")?;
        expect_err(CHECKPOINT.restore(pg, 0x10), Error::FAULT, "RESTORE with an unreadable descriptor")?;
        expect_err(CHECKPOINT.restore(s, dp), Error::INVALID_CAP, "RESTORE from an empty slot")?;
        ensure!(state()? == SHUT, "refused records left the pool in state {}", state()?);
        // Rights: a READ-only copy reads the state and changes nothing.
        SELF_ASPACE.copy_cap(keep_abi::slot::CHECKPOINT, ro, rights::READ).ctx("COPY")?;
        let weak = Checkpoint(ro);
        ensure!(weak.info().ctx("INFO through READ")?.0 == SHUT, "INFO through the READ copy");
        expect_err(weak.open(), Error::NO_RIGHTS, "OPEN through a READ copy")?;
        expect_err(weak.set_key(dp), Error::NO_RIGHTS, "SET_KEY through a READ copy")?;
        CHECKPOINT.open().ctx("OPEN")?;
        ensure!(state()? == OPEN, "OPEN left state {}", state()?);
        expect_err(CHECKPOINT.open(), Error::BAD_STATE, "a second OPEN")?;
        expect_err(CHECKPOINT.restore(pg, dp), Error::BAD_STATE, "RESTORE into the open pool")?;
        let _ = MEMORY.reclaim(pg);
        Ok(())
    })
}

/// Opens the pool if a test running alone finds it shut.
fn ensure_open() -> TestResult {
    if state()? == SHUT {
        CHECKPOINT.open().ctx("OPEN")?;
    }
    ensure!(state()? == OPEN, "the pool is in state {}, not open", state()?);
    Ok(())
}

/// CKPT0002: what a persistent account makes is persistent, and the two
/// pools do not mix: an account takes frames from its own pool only, a
/// process runs in a space of its own kind, and no DMA domain maps a page
/// of the persistent pool.
pub fn pools_apart(cx: &mut Cx) -> TestResult {
    ensure_open()?;
    with_slots(cx, |_, [a, sp, gs, p, pg, dom]| {
        let before = CHECKPOINT.info().ctx("INFO")?.3;
        PERSISTENT_MEMORY.create_account(a).ctx("CREATE_ACCOUNT from the persistent pool")?;
        let pa = Account(a);
        let r = (|| {
            expect_err(MEMORY.donate(a, 4), Error::INVALID_ARG, "DONATE of general frames to a persistent account")?;
            expect_err(
                PERSISTENT_MEMORY.donate(keep_abi::slot::ACCOUNT, 4),
                Error::INVALID_ARG,
                "DONATE of persistent frames to a general account",
            )?;
            PERSISTENT_MEMORY.donate(a, 8).ctx("DONATE")?;
            ensure!(CHECKPOINT.info().ctx("INFO")?.3 == before + 9, "the account and its 8 frames are not in the pool");
            pa.create_aspace(sp).ctx("CREATE_ASPACE")?;
            ACCOUNT.create_aspace(gs).ctx("CREATE_ASPACE (general)")?;
            expect_err(pa.create_process(gs, p), Error::INVALID_ARG, "a persistent process in a general space")?;
            expect_err(ACCOUNT.create_process(sp, p), Error::INVALID_ARG, "a general process in a persistent space")?;
            pa.create_process(sp, p).ctx("CREATE_PROCESS")?;
            // No device reaches persistent memory.
            PERSISTENT_MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            ACCOUNT.create_dma_domain(dom).ctx("CREATE_DMA_DOMAIN")?;
            expect_err(DmaDomain(dom).map(pg, 0x10_0000, rights::READ | rights::WRITE), Error::INVALID_ARG, "DMA MAP of a persistent page")?;
            Ok(())
        })();
        let _ = ACCOUNT.destroy(dom);
        let _ = PERSISTENT_MEMORY.reclaim(pg);
        pa.destroy_all(keep_abi::slot::MEMORY).ctx("DESTROY_ALL")?;
        let _ = ACCOUNT.destroy(gs);
        ensure!(CHECKPOINT.info().ctx("INFO")?.3 == before, "DESTROY_ALL left frames of the pool in use");
        r
    })
}

/// The records of a capture, read whole: descriptors and contents.
fn read_all(n: u64, pg: u64) -> Result<Vec<([u64; WORDS], Vec<u8>)>, alloc::string::String> {
    let mut out = Vec::new();
    for i in 0..n {
        let mut d = [0u64; WORDS];
        CHECKPOINT.read(i, pg, d.as_mut_ptr() as u64, 0).map_err(|e| alloc::format!("READ {i}: {e}"))?;
        // SAFETY: pg is mapped at VA by the caller, readable.
        let body = unsafe { core::slice::from_raw_parts(VA as *const u8, 4096) }.to_vec();
        out.push((d, body));
    }
    Ok(out)
}

/// CKPT0003: BEGIN captures every frame of the pool in use at that instant
/// (a change after it does not reach the record), READ seals each (the
/// content encrypted, an unchanged kernel object's record the same in the
/// next checkpoint, a changed page's another), END gives the shadows back; every
/// error leaves the state as it was; destroying the shadows' account ends
/// the capture.
pub fn capture(cx: &mut Cx) -> TestResult {
    ensure_open()?;
    with_slots(cx, |_, [a, sp, p, data, b, small, pg, ro]| {
        PERSISTENT_MEMORY.create_account(a).ctx("CREATE_ACCOUNT")?;
        let pa = Account(a);
        let r = (|| {
            PERSISTENT_MEMORY.donate(a, 16).ctx("DONATE")?;
            pa.create_aspace(sp).ctx("CREATE_ASPACE")?;
            pa.create_process(sp, p).ctx("CREATE_PROCESS")?;
            PERSISTENT_MEMORY.retype(ty::PAGE, data).ctx("RETYPE")?;
            Aspace(sp).map(data, 0x40_0000, rights::READ | rights::WRITE).ctx("MAP into the persistent space")?;
            SELF_ASPACE.map(data, VA + 0x1000, rights::READ | rights::WRITE).ctx("MAP here")?;
            // SAFETY: the persistent page, mapped writable at VA + 0x1000.
            let page = unsafe { core::slice::from_raw_parts_mut((VA + 0x1000) as *mut u8, 4096) };
            page.fill(0x5a);
            MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            SELF_ASPACE.map(pg, VA, rights::READ | rights::WRITE).ctx("MAP the reading page")?;
            SELF_ASPACE.copy_cap(pg, ro, rights::READ).ctx("COPY READ")?;

            MEMORY.create_account(small).ctx("CREATE_ACCOUNT")?;
            MEMORY.donate(small, 2).ctx("DONATE")?;
            let used = CHECKPOINT.info().ctx("INFO")?.3;
            expect_err(CHECKPOINT.begin(small), Error::NO_MEMORY, "BEGIN with too few shadow frames")?;
            expect_err(CHECKPOINT.begin(a), Error::BAD_STATE, "BEGIN with a persistent account")?;
            expect_err(CHECKPOINT.begin(data), Error::WRONG_TYPE, "BEGIN with a page")?;
            ensure!(state()? == OPEN, "a refused BEGIN left state {}", state()?);
            MEMORY.create_account(b).ctx("CREATE_ACCOUNT")?;
            MEMORY.donate(b, used + 8).ctx("DONATE")?;
            let shadows_before = Account(b).info_raw().ctx("INFO")?.0;
            let (epoch, n) = CHECKPOINT.begin(b).ctx("BEGIN")?;
            ensure!(n == used + 1, "BEGIN gave {n} records for {used} frames in use (and the kernel record)");
            ensure!(state()? == CAPTURED, "state {} after BEGIN", state()?);
            expect_err(CHECKPOINT.begin(b), Error::BAD_STATE, "BEGIN while captured")?;
            let key = [7u64; 4];
            expect_err(CHECKPOINT.set_key(key.as_ptr() as u64), Error::BAD_STATE, "SET_KEY while captured")?;
            // A change after the consistency point is not in the capture.
            page.fill(0xa5);
            // The kernel record's digest of the record set goes in parts of
            // DIGEST_FRAMES pool frames, each READ restarting to go on.
            let pool = CHECKPOINT.info().ctx("INFO")?.2;
            let restarts = || keep_abi::KERNEL.info(keep_abi::info::DIGEST_RESTARTS).ctx("INFO DIGEST_RESTARTS");
            let before = restarts()?;
            let recs = read_all(n, pg)?;
            let parts = restarts()? - before;
            let want = (pool - 1) / keep_abi::layout::DIGEST_FRAMES;
            ensure!(parts == want, "the digest of {pool} pool frames restarted {parts} times, want {want}");
            let mut d = [0u64; WORDS];
            expect_err(CHECKPOINT.read(n, pg, d.as_mut_ptr() as u64, 0), Error::INVALID_ARG, "READ past the last record")?;
            expect_err(CHECKPOINT.read(0, ro, d.as_mut_ptr() as u64, 0), Error::NO_RIGHTS, "READ into a read-only page")?;
            expect_err(CHECKPOINT.read(0, pg, 0x10, 0), Error::FAULT, "READ to an unwritable descriptor")?;
            let kinds = |t: u64| recs.iter().filter(|(d, _)| d[0] >> 32 & 0xff == t && d[0] != 0).count();
            ensure!(recs.iter().all(|(d, _)| d[4] == epoch && d[5] >> 63 == 1), "a record of another epoch or nonce");
            ensure!(recs.last().unwrap().0[0] == 0, "the last record is not the kernel record");
            ensure!(
                kinds(F_ACCOUNT) >= 1 && kinds(F_ASPACE) >= 1 && kinds(F_PROCESS) >= 1 && kinds(F_NUMBERS) >= 1
                    && kinds(F_PAGETABLE) >= 1 && kinds(F_PAGE) >= 1 && kinds(F_KFREE) >= 1,
                "records by type: account {} space {} process {} numbers {} tables {} pages {} free {}",
                kinds(F_ACCOUNT),
                kinds(F_ASPACE),
                kinds(F_PROCESS),
                kinds(F_NUMBERS),
                kinds(F_PAGETABLE),
                kinds(F_PAGE),
                kinds(F_KFREE)
            );
            ensure!(
                recs.iter().all(|(_, body)| body.iter().filter(|&&x| x == 0x5a).count() < 64),
                "a record shows the page's content in the clear"
            );
            // Read again: the capture does not move, whatever the page holds now.
            let again = read_all(n, pg)?;
            ensure!(again == recs, "a second READ of the capture differs");
            let shadows = CHECKPOINT.end().ctx("END")?;
            ensure!(shadows == n - kinds(F_KFREE) as u64, "END gave back {shadows} shadows of {n} records");
            ensure!(Account(b).info_raw().ctx("INFO")?.0 == shadows_before, "END did not give the shadows back");
            ensure!(state()? == OPEN, "state {} after END", state()?);
            expect_err(CHECKPOINT.end(), Error::BAD_STATE, "END while open")?;
            expect_err(CHECKPOINT.read(0, pg, d.as_mut_ptr() as u64, 0), Error::BAD_STATE, "READ while open")?;

            // The next checkpoint: the changed page reads differently, the
            // unchanged process the same, record for record (its epoch,
            // nonce, ciphertext and tag: the header is part of the nonce,
            // so only the same header and content give the same nonce).
            let (epoch2, n2) = CHECKPOINT.begin(b).ctx("BEGIN 2")?;
            ensure!(epoch2 == epoch + 1 && n2 == n, "second BEGIN: epoch {epoch2}, {n2} records");
            let recs2 = read_all(n2, pg)?;
            CHECKPOINT.end().ctx("END 2")?;
            let find = |rs: &Vec<([u64; WORDS], Vec<u8>)>, t: u64| {
                rs.iter().find(|(d, _)| d[0] >> 32 & 0xff == t && d[0] != 0).cloned()
            };
            let (p1, p2) = (find(&recs, F_PROCESS).unwrap(), find(&recs2, F_PROCESS).unwrap());
            ensure!(p1 == p2, "the unchanged process reads differently in the next checkpoint");
            ensure!(p2.0[4] == epoch, "the unchanged process's record does not keep the epoch of its content");
            let (g1, g2) = (find(&recs, F_PAGE).unwrap(), find(&recs2, F_PAGE).unwrap());
            ensure!(g1.0[5] != g2.0[5] && g1.1 != g2.1, "the changed page reads the same in the next checkpoint");

            // The shadows' account destroyed mid-capture ends the capture.
            CHECKPOINT.begin(b).ctx("BEGIN 3")?;
            Account(b).destroy_all(keep_abi::slot::MEMORY).ctx("DESTROY_ALL of the shadows' account")?;
            ensure!(state()? == OPEN, "state {} after the shadows' account went", state()?);
            Ok(())
        })();
        let _ = SELF_ASPACE.unmap(VA + 0x1000);
        let _ = SELF_ASPACE.unmap(VA);
        let _ = Account(b).destroy_all(keep_abi::slot::MEMORY);
        let _ = Account(small).destroy_all(keep_abi::slot::MEMORY);
        pa.destroy_all(keep_abi::slot::MEMORY).ctx("DESTROY_ALL")?;
        let _ = MEMORY.revoke(data);
        let _ = MEMORY.reclaim(pg);
        ensure!(CHECKPOINT.info().ctx("INFO")?.3 == 0, "frames of the pool still in use after the test");
        r
    })
}

/// CKPT0004: BEGIN leaves data pages in place, copy-on-write: a page
/// changed after it through every way there is to change one (a user
/// write, the kernel writing into it, a writable mapping made after BEGIN,
/// freeing it and making a new page of its frame) reads as it was at BEGIN:
/// record for record the same as a capture of the same contents taken
/// just before it (the same seal epoch, nonce and ciphertext).
pub fn copy_on_write(cx: &mut Cx) -> TestResult {
    ensure_open()?;
    with_slots(cx, |_, [a, sp, p, w, k, m, f, f2, b, pg]| {
        PERSISTENT_MEMORY.create_account(a).ctx("CREATE_ACCOUNT")?;
        let pa = Account(a);
        // A place no mapping of this space reached at BEGIN: its own
        // top-level entry, so nothing protects it but the map-time copy.
        const FAR: u64 = 0x0000_6e00_0000_0000;
        const HERE: [u64; 3] = [VA + 0x1000, VA + 0x20_0000, VA + 0x40_0000];
        let page_at = |va: u64| unsafe { core::slice::from_raw_parts_mut(va as *mut u8, 4096) };
        let r = (|| {
            PERSISTENT_MEMORY.donate(a, 16).ctx("DONATE")?;
            pa.create_aspace(sp).ctx("CREATE_ASPACE")?;
            pa.create_process(sp, p).ctx("CREATE_PROCESS")?;
            for (i, s) in [w, k, m, f].into_iter().enumerate() {
                PERSISTENT_MEMORY.retype(ty::PAGE, s).ctx("RETYPE")?;
                Aspace(sp).map(s, 0x40_0000 + i as u64 * 0x1000, rights::READ | rights::WRITE).ctx("MAP there")?;
            }
            // Each in a page table of its own: a write fault copies every
            // writable page of the table it lifts, which would hide the
            // other ways.
            for (s, va) in [(w, HERE[0]), (k, HERE[1]), (f, HERE[2])] {
                SELF_ASPACE.map(s, va, rights::READ | rights::WRITE).ctx("MAP here")?;
            }
            let fill = |v: u8| {
                for va in HERE {
                    page_at(va).fill(v);
                }
            };
            fill(0x3c);
            MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            SELF_ASPACE.map(pg, VA, rights::READ | rights::WRITE).ctx("MAP the reading page")?;
            MEMORY.create_account(b).ctx("CREATE_ACCOUNT")?;
            MEMORY.donate(b, CHECKPOINT.info().ctx("INFO")?.3 + 16).ctx("DONATE")?;

            // The contents as they are, captured before the changes.
            let (_, n0) = CHECKPOINT.begin(b).ctx("BEGIN 0")?;
            let zero = read_all(n0, pg)?;
            CHECKPOINT.end().ctx("END 0")?;
            let (_, n) = CHECKPOINT.begin(b).ctx("BEGIN")?;
            // A user write.
            page_at(HERE[0]).fill(0xc3);
            // The kernel writing into it: READ's descriptor lands in k's page.
            CHECKPOINT.read(0, pg, HERE[1], 0).ctx("READ into the pending page")?;
            // A writable mapping made after BEGIN, below no protection.
            SELF_ASPACE.map(m, FAR, rights::READ | rights::WRITE).ctx("MAP after BEGIN")?;
            page_at(FAR).fill(0xc3);
            // Freed and made again: the new page takes the frame (the
            // pool gives back the frame freed last) and is written.
            SELF_ASPACE.unmap(HERE[2]).ctx("UNMAP")?;
            PERSISTENT_MEMORY.revoke(f).ctx("REVOKE")?;
            PERSISTENT_MEMORY.retype(ty::PAGE, f2).ctx("RETYPE again")?;
            SELF_ASPACE.map(f2, HERE[2], rights::READ | rights::WRITE).ctx("MAP the new page")?;
            page_at(HERE[2]).fill(0xc3);
            let one = read_all(n, pg)?;
            CHECKPOINT.end().ctx("END")?;
            let pages = |rs: &Vec<([u64; WORDS], Vec<u8>)>| {
                rs.iter().filter(|(d, _)| d[0] >> 32 & 0xff == F_PAGE && d[0] != 0).cloned().collect::<Vec<_>>()
            };
            let (p1, p2) = (pages(&one), pages(&zero));
            ensure!(p1.len() == 4 && p2.len() == 4, "{} and {} page records, want 4 and 4", p1.len(), p2.len());
            for (i, (x, y)) in p1.iter().zip(&p2).enumerate() {
                let frame = x.0[0] & 0xffff_ffff;
                ensure!(y.0[0] & 0xffff_ffff == frame, "the pages of the two captures are other frames");
                ensure!(
                    x.0[5] == y.0[5] && x.1 == y.1,
                    "page record {i} (frame {frame:#x}): a change after BEGIN reached the capture (it reads unlike the capture before it)"
                );
            }
            Ok(())
        })();
        let _ = CHECKPOINT.end();
        for va in [VA, HERE[0], HERE[1], HERE[2], FAR] {
            let _ = SELF_ASPACE.unmap(va);
        }
        let _ = Account(b).destroy_all(keep_abi::slot::MEMORY);
        pa.destroy_all(keep_abi::slot::MEMORY).ctx("DESTROY_ALL")?;
        for s in [w, k, m, f, f2] {
            let _ = PERSISTENT_MEMORY.revoke(s);
        }
        let _ = MEMORY.reclaim(pg);
        ensure!(CHECKPOINT.info().ctx("INFO")?.3 == 0, "frames of the pool still in use after the test");
        r
    })
}

/// One capture read with dirty tracking against the checkpoint of epoch
/// `since`: the records sealed again (descriptor and content, by index) and
/// the runs of unchanged ones (index, count, first frame, end frame).
struct Tracked {
    sealed: Vec<(u64, [u64; WORDS], Vec<u8>)>,
    runs: Vec<(u64, u64, u64, u64)>,
}

fn read_since(n: u64, pg: u64, since: u64) -> Result<Tracked, alloc::string::String> {
    let mut t = Tracked { sealed: Vec::new(), runs: Vec::new() };
    let mut i = 0;
    while i < n {
        let mut d = [0u64; WORDS];
        let (same, first, end) =
            CHECKPOINT.read(i, pg, d.as_mut_ptr() as u64, since).map_err(|e| alloc::format!("READ {i} since {since}: {e}"))?;
        if same == 0 {
            // SAFETY: pg is mapped at VA by the caller, readable.
            let body = unsafe { core::slice::from_raw_parts(VA as *const u8, 4096) }.to_vec();
            ensure!(d[0] == 0 || d[0] & 0xffff_ffff == first, "READ {i}: frame {first:#x} reported for record of {:#x}", d[0]);
            t.sealed.push((i, d, body));
            i += 1;
        } else {
            ensure!(d == [0; WORDS], "READ {i}: an unchanged run wrote a descriptor");
            ensure!(i + same < n && first < end, "READ {i}: a run of {same} records in frames {first:#x}..{end:#x} of {n}");
            t.runs.push((i, same, first, end));
            i += same;
        }
    }
    Ok(t)
}

impl Tracked {
    /// Frames of the data pages sealed again.
    /// (sorted: the frames of pages made one after another need not rise).
    fn pages(&self) -> Vec<u64> {
        let mut v: Vec<u64> =
            self.sealed.iter().filter(|(_, d, _)| d[0] != 0 && d[0] >> 32 & 0xff == F_PAGE).map(|(_, d, _)| d[0] & 0xffff_ffff).collect();
        v.sort();
        v
    }
    fn covers(&self, frame: u64) -> bool {
        self.runs.iter().any(|r| (r.2..r.3).contains(&frame))
    }
}

/// CKPT0005: dirty tracking.  A capture read against an earlier checkpoint
/// seals again only what changed since that checkpoint's BEGIN: the pages
/// written (by the user after END, by the user during the capture, by the
/// kernel during it; each page of one table on its own) and the kernel
/// objects, while every unchanged data page and donated frame lies in a
/// run whose records are bit for bit those a full read gives; a page freed
/// since is in no run; nothing is unchanged against an epoch that is not
/// an earlier one, or after SET_KEY.
pub fn dirty_tracking(cx: &mut Cx) -> TestResult {
    ensure_open()?;
    const N: u64 = 8;
    with_slots(cx, |_, [a, sp, p, b, pg, d0, d1, d2, d3, d4, d5, d6, d7]| {
        let data = [d0, d1, d2, d3, d4, d5, d6, d7];
        PERSISTENT_MEMORY.create_account(a).ctx("CREATE_ACCOUNT")?;
        let pa = Account(a);
        // Eight pages in one page table of this space, and of the persistent one.
        const AT: u64 = VA + 0x20_0000;
        let page_at = |i: u64| unsafe { core::slice::from_raw_parts_mut((AT + i * 4096) as *mut u8, 4096) };
        let r = (|| {
            PERSISTENT_MEMORY.donate(a, 16).ctx("DONATE")?;
            pa.create_aspace(sp).ctx("CREATE_ASPACE")?;
            pa.create_process(sp, p).ctx("CREATE_PROCESS")?;
            let mut frames = [0u64; N as usize];
            for (i, &s) in data.iter().enumerate() {
                PERSISTENT_MEMORY.retype(ty::PAGE, s).ctx("RETYPE")?;
                Aspace(sp).map(s, 0x40_0000 + i as u64 * 0x1000, rights::READ).ctx("MAP there")?;
                SELF_ASPACE.map(s, AT + i as u64 * 4096, rights::READ | rights::WRITE).ctx("MAP here")?;
                frames[i] = SELF_ASPACE.lookup(AT + i as u64 * 4096).ctx("LOOKUP")?.1;
                page_at(i as u64).fill(0x11 * i as u8);
            }
            MEMORY.retype(ty::PAGE, pg).ctx("RETYPE")?;
            SELF_ASPACE.map(pg, VA, rights::READ | rights::WRITE).ctx("MAP the reading page")?;
            MEMORY.create_account(b).ctx("CREATE_ACCOUNT")?;
            MEMORY.donate(b, CHECKPOINT.info().ctx("INFO")?.3 + 16).ctx("DONATE")?;

            // The first checkpoint: everything read.
            let (e1, n1) = CHECKPOINT.begin(b).ctx("BEGIN 1")?;
            let full1 = read_all(n1, pg)?;
            let none = read_since(n1, pg, e1)?;
            ensure!(none.runs.is_empty(), "a run against the capture's own epoch");
            CHECKPOINT.end().ctx("END 1")?;

            // Between checkpoints: a user write into page 2 (a write fault
            // after END).
            page_at(2)[100] = 0xee;
            let (e2, n2) = CHECKPOINT.begin(b).ctx("BEGIN 2")?;
            ensure!(n2 == n1, "{n2} records, then {n1}");
            let t = read_since(n2, pg, e1)?;
            let full2 = read_all(n2, pg)?;
            ensure!(t.pages() == [frames[2]], "pages sealed again since epoch {e1}: {:x?}, want only page 2 {:#x}", t.pages(), frames[2]);
            for (i, f) in frames.iter().enumerate() {
                ensure!(i == 2 || t.covers(*f), "unchanged page {i} (frame {f:#x}) in no run");
            }
            ensure!(!t.covers(frames[2]), "the written page lies in a run");
            // What a run stands for is what the earlier checkpoint read.
            let kinds = |t: u64| full2.iter().filter(|(d, _)| d[0] >> 32 & 0xff == t && d[0] != 0).count();
            for &(i, same, first, end) in &t.runs {
                for j in i..i + same {
                    let (d, body) = &full2[j as usize];
                    let frame = d[0] & 0xffff_ffff;
                    let ty = d[0] >> 32 & 0xff;
                    ensure!((first..end).contains(&frame), "record {j} (frame {frame:#x}) outside its run {first:#x}..{end:#x}");
                    ensure!(ty == F_PAGE || ty == F_KFREE, "record {j} of type {ty} in a run");
                    let old = full1.iter().find(|(o, _)| o[0] == d[0]);
                    ensure!(
                        old.is_some_and(|(o, ob)| o == d && ob == body),
                        "record {j} (frame {frame:#x}) in a run reads unlike its record in the checkpoint of epoch {e1}"
                    );
                }
            }
            let in_runs: u64 = t.runs.iter().map(|r| r.1).sum();
            ensure!(
                in_runs == (kinds(F_PAGE) + kinds(F_KFREE)) as u64 - 1,
                "{in_runs} records in runs, want every page and donated frame but one"
            );
            ensure!(t.sealed.len() as u64 + in_runs == n2, "{} sealed and {in_runs} unchanged of {n2}", t.sealed.len());
            // During the capture: a user write into page 3, the kernel
            // writing into page 5 (READ's descriptor lands there).
            page_at(3)[7] = 0xdd;
            CHECKPOINT.read(0, pg, AT + 5 * 4096 + 64, 0).ctx("READ into page 5")?;
            CHECKPOINT.end().ctx("END 2")?;

            // Page 7 freed between checkpoints.
            SELF_ASPACE.unmap(AT + 7 * 4096).ctx("UNMAP")?;
            Aspace(sp).unmap(0x40_0000 + 7 * 0x1000).ctx("UNMAP there")?;
            PERSISTENT_MEMORY.revoke(d7).ctx("REVOKE")?;
            let (e3, n3) = CHECKPOINT.begin(b).ctx("BEGIN 3")?;
            ensure!(n3 == n2 - 1, "{n3} records after a page was freed, {n2} before");
            let t2 = read_since(n3, pg, e2)?;
            let sorted = |mut v: Vec<u64>| {
                v.sort();
                v
            };
            ensure!(
                t2.pages() == sorted(alloc::vec![frames[3], frames[5]]),
                "pages sealed again since epoch {e2}: {:x?}, want pages 3 and 5 {:#x} {:#x}",
                t2.pages(),
                frames[3],
                frames[5]
            );
            ensure!(!t2.covers(frames[7]), "the freed page's frame lies in a run");
            let t1 = read_since(n3, pg, e1)?;
            ensure!(
                t1.pages() == sorted(alloc::vec![frames[2], frames[3], frames[5]]),
                "pages sealed again since epoch {e1}: {:x?}, want pages 2, 3 and 5",
                t1.pages()
            );
            // Against no earlier checkpoint, everything is sealed.
            for since in [0, e3, e3 + 1] {
                let t = read_since(n3, pg, since)?;
                ensure!(t.runs.is_empty(), "a run against epoch {since} (the capture's is {e3})");
            }
            CHECKPOINT.end().ctx("END 3")?;
            // New keys: nothing sealed before is unchanged.
            let key = [0x5eu64; 4];
            CHECKPOINT.set_key(key.as_ptr() as u64).ctx("SET_KEY")?;
            let (_, n4) = CHECKPOINT.begin(b).ctx("BEGIN 4")?;
            let t = read_since(n4, pg, e3)?;
            ensure!(t.runs.is_empty(), "a run of records sealed under the keys before SET_KEY");
            CHECKPOINT.end().ctx("END 4")?;
            let (e5, n5) = CHECKPOINT.begin(b).ctx("BEGIN 5")?;
            let t = read_since(n5, pg, e5 - 1)?;
            ensure!(t.pages().is_empty() && !t.runs.is_empty(), "nothing changed since the checkpoint under the new keys: {:x?} sealed", t.pages());
            CHECKPOINT.end().ctx("END 5")?;
            Ok(())
        })();
        let _ = CHECKPOINT.end();
        for i in 0..N {
            let _ = SELF_ASPACE.unmap(AT + i * 4096);
        }
        let _ = SELF_ASPACE.unmap(VA);
        let _ = Account(b).destroy_all(keep_abi::slot::MEMORY);
        pa.destroy_all(keep_abi::slot::MEMORY).ctx("DESTROY_ALL")?;
        for s in data {
            let _ = PERSISTENT_MEMORY.revoke(s);
        }
        let _ = MEMORY.reclaim(pg);
        ensure!(CHECKPOINT.info().ctx("INFO")?.3 == 0, "frames of the pool still in use after the test");
        r
    })
}
