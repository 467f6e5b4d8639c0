//! Kernel memory taken back from live tasks (seed 003): page tables revoked
//! and rebuilt by a pager, processes exported sealed and restored (refused
//! when tampered with, replayed or swapped), a kpager that would wait for
//! itself, and accounts destroyed whole.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    ACCOUNT, Account, Aspace, Error, KERNEL, MEMORY, Process, Return, SELF_ASPACE, Sender,
    Tag, label, layout, recv, reply, rights, slot, ty,
};
use keep_loader::thread;

use crate::cspace::{BEYOND, HOLE, expect_type};
use crate::{Ctx, Cx, TestResult, expect_err};

const RW: u64 = rights::READ | rights::WRITE;
/// Scratch address where tests look into an export page.
const PEEK: u64 = 0x5100_0000_0000;

fn new_account(cx: &mut Cx, frames: u64) -> Result<Account, String> {
    let s = cx.slot()?;
    MEMORY.create_account(s).ctx("CREATE_ACCOUNT")?;
    if frames > 0 {
        MEMORY.donate(s, frames).ctx("DONATE")?;
    }
    Ok(Account(s))
}

fn live(s: u64) -> Result<bool, String> {
    Ok(SELF_ASPACE.identify_cap(s).ctx("IDENTIFY_CAP")?.live)
}

fn invariants() -> TestResult {
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariant violations");
    Ok(())
}

/// Reads (or, with `f`, changes) the words of the page at `page`.
fn with_page_words<R>(page: u64, f: impl FnOnce(&mut [u64]) -> R) -> Result<R, String> {
    SELF_ASPACE.map(page, PEEK, RW).ctx("MAP the page")?;
    // SAFETY: the page is mapped read-write at PEEK until the unmap below.
    let words = unsafe { core::slice::from_raw_parts_mut(PEEK as *mut u64, 512) };
    let r = f(words);
    SELF_ASPACE.unmap(PEEK).ctx("UNMAP the page")?;
    Ok(r)
}

pub fn destroy_all(cx: &mut Cx) -> TestResult {
    let pool0 = MEMORY.free().ctx("FREE")?;
    let own0 = ACCOUNT.info().ctx("INFO")?;
    let a = new_account(cx, 16)?;
    let [asp, p, q, w, copy] = cx.slots::<5>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        Aspace(asp).map(page, 0x5000_0000_0000, RW).ctx("MAP")?;
        a.create_process(asp, p).ctx("CREATE_PROCESS")?;
        ACCOUNT.create_process(asp, q).ctx("CREATE_PROCESS of another account in its space")?;
        a.create_wrapper(slot::CONSOLE, w, rights::ALL).ctx("CREATE_WRAPPER")?;
        SELF_ASPACE.copy_cap(a.0, copy, 0).ctx("COPY_CAP")?;
        let [_, used, ..] = a.info_all().ctx("INFO")?;
        ensure!(used >= 5, "account uses {used} frames");
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        for s in [a.0, copy, asp, p, q, w] {
            ensure!(!live(s)?, "slot {s:#x} still live after DESTROY_ALL");
        }
        expect_err(Account(copy).info_all(), Error::STALE, "INFO of a destroyed account")?;
        ensure!(ACCOUNT.info().ctx("INFO")? == own0, "ktest's account did not get q's frame back");
        // The page was mapped only in the destroyed space: it can go.
        MEMORY.reclaim(page).ctx("RECLAIM the page")?;
        let pool = MEMORY.free().ctx("FREE")?;
        ensure!(pool == pool0, "pool {pool0} -> {pool}: not every frame came back");
        invariants()
    })();
    cx.drop_slots(&[a.0, asp, p, q, w, copy]);
    if r.is_err() {
        cx.drop_slot(page);
    } else {
        cx.slots.free(page);
    }
    r
}

pub fn destroy_all_errors(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, 4)?;
    let [ro_mem, ro_acct, empty] = cx.slots::<3>()?;
    let r = (|| {
        SELF_ASPACE.copy_cap(slot::MEMORY, ro_mem, rights::READ).ctx("COPY_CAP")?;
        SELF_ASPACE.copy_cap(a.0, ro_acct, rights::READ).ctx("COPY_CAP")?;
        let before = a.info_all().ctx("INFO")?;
        let pool = MEMORY.free().ctx("FREE")?;
        expect_err(a.destroy_all(slot::CONSOLE), Error::WRONG_TYPE, "console as memory")?;
        expect_err(a.destroy_all(empty), Error::INVALID_CAP, "empty slot")?;
        expect_err(a.destroy_all(HOLE), Error::NO_CAPPAGE, "hole")?;
        expect_err(a.destroy_all(BEYOND), Error::OUT_OF_RANGE, "beyond")?;
        expect_err(a.destroy_all(ro_mem), Error::NO_RIGHTS, "read-only memory")?;
        expect_err(Account(ro_acct).destroy_all(slot::MEMORY), Error::NO_RIGHTS, "read-only account")?;
        ensure!(a.info_all().ctx("INFO")? == before, "account changed");
        ensure!(MEMORY.free().ctx("FREE")? == pool, "pool changed");
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        ensure!(MEMORY.free().ctx("FREE")? == pool + 5, "4 frames and the account's own come back");
        Ok(())
    })();
    cx.drop_slots(&[a.0, ro_mem, ro_acct, empty]);
    r
}

pub fn revoke_table(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, 32)?;
    let [asp, d, ro] = cx.slots::<3>()?;
    let pages = [cx.retype(ty::PAGE)?, cx.retype(ty::PAGE)?, cx.retype(ty::PAGE)?];
    let (va1, va2, va3) = (160u64 << 39, (161u64 << 39) + 0x20_0000, (160u64 << 39) + 0x1000);
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        let x = Aspace(asp);
        for (pg, va) in pages.iter().zip([va1, va2, va3]) {
            x.map(*pg, va, RW).ctx("MAP")?;
        }
        let [_, used0, taken0, _] = a.info_all().ctx("INFO")?;
        let n = a.revoke_table(asp, va1, 1, d).ctx("REVOKE_TABLE level 1")?;
        ensure!(n == 1, "level 1 freed {n} frames");
        expect_type(d, ty::PAGE)?;
        expect_err(x.lookup(va1), Error::NOT_MAPPED, "LOOKUP under the revoked table")?;
        expect_err(x.lookup(va3), Error::NOT_MAPPED, "LOOKUP of its neighbour")?;
        x.lookup(va2).ctx("LOOKUP elsewhere")?;
        let [_, used1, taken1, _] = a.info_all().ctx("INFO")?;
        ensure!(used1 == used0 - 1 && taken1 == taken0 + 1, "used {used0}->{used1}, taken {taken0}->{taken1}");
        SELF_ASPACE.delete_cap(d).ctx("DELETE")?;
        expect_err(a.revoke_table(asp, va1, 1, d), Error::NOT_MAPPED, "no table there")?;
        let n = a.revoke_table(asp, va2, 3, d).ctx("REVOKE_TABLE level 3")?;
        ensure!(n == 3, "level 3 freed {n} frames, want 3 (its PD and PT too)");
        expect_err(x.lookup(va2), Error::NOT_MAPPED, "LOOKUP under it")?;
        // The page behind the handed-back frame is empty.
        let zero = with_page_words(d, |w| w.iter().all(|&v| v == 0))?;
        ensure!(zero, "the table came back with contents");
        MEMORY.reclaim(d).ctx("RECLAIM the handed-back page")?;
        // The pager maps again: the tables grow back.
        x.map(pages[0], va1, RW).ctx("MAP again")?;
        x.lookup(va1).ctx("LOOKUP after the rebuild")?;

        // Errors change nothing.
        let before = a.info_all().ctx("INFO")?;
        SELF_ASPACE.copy_cap(asp, ro, rights::READ).ctx("COPY_CAP")?;
        expect_err(a.revoke_table(asp, va1, 0, d), Error::INVALID_ARG, "level 0")?;
        expect_err(a.revoke_table(asp, va1, 4, d), Error::INVALID_ARG, "level 4")?;
        expect_err(a.revoke_table(asp, layout::USER_TOP, 1, d), Error::INVALID_ARG, "kernel half")?;
        expect_err(a.revoke_table(asp, va1, 1, slot::CONSOLE), Error::EXISTS, "full dest")?;
        expect_err(a.revoke_table(ro, va1, 1, d), Error::NO_RIGHTS, "read-only space")?;
        expect_err(a.revoke_table(slot::CONSOLE, va1, 1, d), Error::WRONG_TYPE, "not a space")?;
        expect_err(ACCOUNT.revoke_table(asp, va1, 1, d), Error::INVALID_ARG, "another account's space")?;
        // ktest's own IPC buffer: the kernel uses it without faults, so it stays.
        let buf = keep_rt::ipc_buffer_addr();
        for level in 1..=3 {
            expect_err(
                ACCOUNT.revoke_table(slot::SELF_ASPACE, buf, level, d),
                Error::IN_USE,
                &format!("the table over the IPC buffer, level {level}"),
            )?;
        }
        x.lookup(va1).ctx("LOOKUP after the errors")?;
        ensure!(a.info_all().ctx("INFO")? == before, "account changed by a refused request");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    for pg in pages {
        let _ = MEMORY.reclaim(pg);
        cx.slots.free(pg);
    }
    cx.drop_slots(&[a.0, asp, d, ro]);
    r
}

pub fn memory_revoke(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, 16)?;
    let [asp, copy, ro, empty] = cx.slots::<4>()?;
    let page = cx.retype(ty::PAGE)?;
    let cp = cx.retype(ty::CAPPAGE)?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        let x = Aspace(asp);
        x.map(page, 0x5000_0000_0000, RW).ctx("MAP in the other space")?;
        x.map(page, 0x5000_0000_1000, rights::READ).ctx("MAP twice")?;
        SELF_ASPACE.map(page, PEEK, RW).ctx("MAP in ktest")?;
        x.map_cappage(cp, 0x4000).ctx("MAP_CAPPAGE")?;
        x.insert_cap(slot::CONSOLE, 0x4001, 0).ctx("INSERT_CAP")?;
        SELF_ASPACE.copy_cap(page, copy, 0).ctx("COPY_CAP")?;
        SELF_ASPACE.copy_cap(page, ro, rights::READ).ctx("COPY_CAP")?;
        expect_err(MEMORY.reclaim(page), Error::IN_USE, "RECLAIM of a mapped page")?;
        // Errors change nothing.
        let pool = MEMORY.free().ctx("FREE")?;
        expect_err(MEMORY.revoke(ro), Error::NO_RIGHTS, "read-only page")?;
        expect_err(MEMORY.revoke(slot::CONSOLE), Error::WRONG_TYPE, "console")?;
        expect_err(MEMORY.revoke(empty), Error::INVALID_CAP, "empty slot")?;
        expect_err(MEMORY.revoke(HOLE), Error::NO_CAPPAGE, "hole")?;
        ensure!(MEMORY.free().ctx("FREE")? == pool, "pool changed");
        x.lookup(0x5000_0000_0000).ctx("LOOKUP still mapped")?;

        let n = MEMORY.revoke(page).ctx("REVOKE the page")?;
        ensure!(n == 3, "REVOKE removed {n} mappings, want 3");
        for va in [0x5000_0000_0000, 0x5000_0000_1000] {
            expect_err(x.lookup(va), Error::NOT_MAPPED, "LOOKUP after REVOKE")?;
        }
        expect_err(SELF_ASPACE.lookup(PEEK), Error::NOT_MAPPED, "own mapping")?;
        ensure!(!live(copy)? && !live(ro)?, "copies of the page still live");
        let n = MEMORY.revoke(cp).ctx("REVOKE the cappage")?;
        ensure!(n == 1, "REVOKE of the cappage removed {n} mappings");
        expect_err(x.extract_cap(0x4001, empty, 0), Error::NO_CAPPAGE, "a slot of the revoked cappage")?;
        ensure!(MEMORY.free().ctx("FREE")? == pool + 2, "the two frames did not come back");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&[a.0, asp, copy, ro, empty, page, cp]);
    r
}

/// A receiver waiting with its slot at words[0] (until killed).
fn waiting_receiver(a: &thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    let m = recv(Tag::new(0).with_slots(1), 0);
    m.err
}

pub fn revoke_cap_table(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, 32)?;
    let [asp, d, got, ro] = cx.slots::<4>()?;
    let cps = [cx.retype(ty::CAPPAGE)?, cx.retype(ty::CAPPAGE)?, cx.retype(ty::CAPPAGE)?];
    let (near, far) = (0x4000u64, 0x0200_0000u64);
    const OWN: u64 = 0x7000_0000; // in ktest's own space, far from its other cappages
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        let x = Aspace(asp);
        x.map_cappage(cps[0], near).ctx("MAP_CAPPAGE near")?;
        x.map_cappage(cps[1], far).ctx("MAP_CAPPAGE far")?;
        x.insert_cap(slot::CONSOLE, near + 1, 0).ctx("INSERT")?;
        x.insert_cap(slot::TIMER, far + 1, 0).ctx("INSERT")?;
        let [_, used0, taken0, _] = a.info_all().ctx("INFO")?;
        let n = a.revoke_cap_table(asp, near, 1, d).ctx("REVOKE_CAP_TABLE level 1")?;
        ensure!(n == 1, "level 1 freed {n}");
        expect_type(d, ty::PAGE)?;
        let [_, used1, taken1, _] = a.info_all().ctx("INFO")?;
        ensure!(used1 == used0 - 1 && taken1 == taken0 + 1, "used {used0}->{used1}, taken {taken0}->{taken1}");
        MEMORY.reclaim(d).ctx("RECLAIM")?;
        // A lookup there rebuilds the table from the record: nobody notices.
        x.extract_cap(near + 1, got, 0).ctx("EXTRACT after the revocation")?;
        expect_type(got, ty::CONSOLE)?;
        SELF_ASPACE.delete_cap(got).ctx("DELETE")?;
        let n = a.revoke_cap_table(asp, far, 3, d).ctx("REVOKE_CAP_TABLE level 3")?;
        ensure!(n >= 3, "level 3 freed {n}");
        MEMORY.reclaim(d).ctx("RECLAIM")?;
        x.insert_cap(slot::CONSOLE, far + 2, 0).ctx("INSERT after level 3 went")?;
        x.extract_cap(far + 1, got, 0).ctx("EXTRACT far")?;
        expect_type(got, ty::TIMER)?;
        SELF_ASPACE.delete_cap(got).ctx("DELETE")?;
        x.extract_cap(near + 1, got, 0).ctx("EXTRACT near")?;
        SELF_ASPACE.delete_cap(got).ctx("DELETE")?;
        // An empty account and no kpager: the rebuild is NO_MEMORY, then works once funded.
        a.revoke_cap_table(asp, near, 3, d).ctx("REVOKE level 3 again")?;
        MEMORY.reclaim(d).ctx("RECLAIM")?;
        let free = a.info_all().ctx("INFO")?[0];
        a.reclaim(slot::MEMORY, free).ctx("RECLAIM the account's frames")?;
        expect_err(x.extract_cap(near + 1, got, 0), Error::NO_MEMORY, "rebuild on an empty account")?;
        MEMORY.donate(a.0, 8).ctx("DONATE")?;
        x.extract_cap(near + 1, got, 0).ctx("EXTRACT once funded")?;
        SELF_ASPACE.delete_cap(got).ctx("DELETE")?;
        // Mapping over a recorded cappage is EXISTS; unmapping one whose
        // tables are out works, and it is gone.
        a.revoke_cap_table(asp, near, 1, d).ctx("REVOKE")?;
        MEMORY.reclaim(d).ctx("RECLAIM")?;
        expect_err(x.map_cappage(cps[2], near), Error::EXISTS, "MAP_CAPPAGE over a recorded one")?;
        x.unmap_cappage(near).ctx("UNMAP_CAPPAGE with its tables out")?;
        expect_err(x.extract_cap(near + 1, got, 0), Error::NO_CAPPAGE, "EXTRACT from the unmapped cappage")?;
        MEMORY.reclaim(cps[0]).ctx("RECLAIM the unmapped cappage")?;
        // MEMORY.REVOKE of a cappage whose tables are out (far's went with
        // the level-3 table above, and nothing has looked there since).
        expect_err(a.revoke_cap_table(asp, far, 1, d), Error::NOT_MAPPED, "far's table, still out")?;
        let n = MEMORY.revoke(cps[1]).ctx("MEMORY.REVOKE")?;
        ensure!(n == 1, "MEMORY.REVOKE removed {n} mappings");

        // Errors change nothing.
        x.map_cappage(cps[2], near).ctx("MAP_CAPPAGE")?;
        let before = a.info_all().ctx("INFO")?;
        SELF_ASPACE.copy_cap(asp, ro, rights::READ).ctx("COPY_CAP")?;
        expect_err(a.revoke_cap_table(asp, near, 0, d), Error::INVALID_ARG, "level 0")?;
        expect_err(a.revoke_cap_table(asp, near, 4, d), Error::INVALID_ARG, "level 4")?;
        expect_err(a.revoke_cap_table(asp, layout::CAP_SPACE_SLOTS, 1, d), Error::INVALID_ARG, "beyond")?;
        expect_err(a.revoke_cap_table(asp, 0x3000_0000, 1, d), Error::NOT_MAPPED, "no table there")?;
        expect_err(a.revoke_cap_table(ro, near, 1, d), Error::NO_RIGHTS, "read-only space")?;
        expect_err(a.revoke_cap_table(asp, near, 1, slot::CONSOLE), Error::EXISTS, "full dest")?;
        expect_err(ACCOUNT.revoke_cap_table(asp, near, 1, d), Error::INVALID_ARG, "another account's space")?;
        ensure!(a.info_all().ctx("INFO")? == before, "a refused request changed the account");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    for c in cps {
        let _ = MEMORY.reclaim(c);
    }
    cx.drop_slots(&[a.0, asp, d, got, ro]);
    cx.drop_slots(&cps);
    r.and_then(|_| own_cap_table(cx, OWN))
}

/// The same in ktest's own space: its own invocation of a capability whose
/// table was taken back rebuilds it; a waiting receiver's slot pins it.
fn own_cap_table(cx: &mut Cx, at: u64) -> TestResult {
    let cp = cx.retype(ty::CAPPAGE)?;
    let [d, ret] = cx.slots::<2>()?;
    let r = (|| {
        SELF_ASPACE.map_cappage(cp, at).ctx("MAP_CAPPAGE")?;
        SELF_ASPACE.copy_cap(slot::KERNEL, at + 1, 0).ctx("COPY_CAP")?;
        ACCOUNT.revoke_cap_table(slot::SELF_ASPACE, at, 1, d).ctx("REVOKE own table")?;
        MEMORY.reclaim(d).ctx("RECLAIM")?;
        keep_abi::Kernel(at + 1).info(keep_abi::info::VERSION).ctx("invoking through the revoked table")?;
        // A receiver waiting with a slot there keeps the table.
        let t = thread::spawn(&mut cx.slots, "ktest-recv", 10, waiting_receiver, &[at + 2])?;
        let _ = keep_abi::TIMER.sleep(5);
        let pinned = ACCOUNT.revoke_cap_table(slot::SELF_ASPACE, at, 1, d);
        t.kill(&mut cx.slots);
        expect_err(pinned, Error::IN_USE, "a table under a waiting receiver's slot")?;
        let _ = ret;
        invariants()
    })();
    let _ = MEMORY.revoke(cp);
    cx.drop_slots(&[d, ret, cp]);
    r
}

// ---- an exported process goes on where it was, in every state ----

static SPIN: AtomicU64 = AtomicU64::new(0);
static OUTCOME: [AtomicU64; 4] = [const { AtomicU64::new(u64::MAX) }; 4];

fn spinner(_: &thread::Args) -> u64 {
    loop {
        SPIN.fetch_add(1, SeqCst);
    }
}

/// words[0]: which wait (0 sleep, 1 receive with a time-out, 2 send to
/// words[1], 3 wait for the process words[1]); the result into OUTCOME.
fn waiter(a: &thread::Args) -> u64 {
    let [kind, arg, ..] = a.words;
    let r = match kind {
        0 => keep_abi::TIMER.sleep(40).err().map_or(0, |e| e.0),
        1 => recv(Tag::new(0), 40).err,
        2 => Sender(arg).send(Tag::new(3), [0; 4]).err().map_or(0, |e| e.0),
        _ => Process(arg).wait().map_or_else(|e| e.0, |s| 1000 + s.code),
    };
    OUTCOME[kind as usize].store(r, SeqCst);
    0
}

/// A thread that exits with words[0] after words[1] ms.
fn late_exit(a: &thread::Args) -> u64 {
    let _ = keep_abi::TIMER.sleep(a.words[1]);
    a.words[0]
}

/// A server that takes one message into nothing after words[0] ms.
fn late_receiver(a: &thread::Args) -> u64 {
    let _ = keep_abi::TIMER.sleep(a.words[0]);
    let m = recv(Tag::new(0), 0);
    m.err
}

/// Exports `p` (made from ACCOUNT) for `ms`, then restores it.
fn out_for(p: Process, d: u64, ms: u64) -> TestResult {
    ACCOUNT.revoke_process(p.0, d).ctx("REVOKE_PROCESS")?;
    let _ = keep_abi::TIMER.sleep(ms);
    ACCOUNT.restore_process(d).ctx("RESTORE_PROCESS")
}

fn outcome(i: usize) -> u64 {
    for _ in 0..100 {
        let v = OUTCOME[i].load(SeqCst);
        if v != u64::MAX {
            return v;
        }
        let _ = keep_abi::TIMER.sleep(5);
    }
    u64::MAX
}

pub fn export_states(cx: &mut Cx) -> TestResult {
    for o in &OUTCOME {
        o.store(u64::MAX, SeqCst);
    }
    let [d, snd] = cx.slots::<2>()?;
    let r = (|| {
        // Running (preempted, in the run queue): it stops, then goes on.
        let t = thread::spawn(&mut cx.slots, "ktest-spin", 9, spinner, &[])?;
        let r = (|| {
            let _ = keep_abi::TIMER.sleep(5);
            ACCOUNT.revoke_process(t.process.0, d).ctx("REVOKE a running process")?;
            let a = SPIN.load(SeqCst);
            let _ = keep_abi::TIMER.sleep(30);
            ensure!(SPIN.load(SeqCst) == a, "an exported process ran");
            ACCOUNT.restore_process(d).ctx("RESTORE")?;
            let _ = keep_abi::TIMER.sleep(30);
            ensure!(SPIN.load(SeqCst) > a, "the restored process does not run");
            Ok(())
        })();
        t.kill(&mut cx.slots);
        r?;
        // Asleep, and a receive with a time-out: both times run out while
        // it is away, and it hears so when it is back.
        for (kind, want) in [(0usize, 0u64), (1, keep_abi::err::TIMEOUT)] {
            let t = thread::spawn(&mut cx.slots, "ktest-waiter", 10, waiter, &[kind as u64])?;
            let _ = keep_abi::TIMER.sleep(5);
            let r = out_for(t.process, d, 80);
            let got = outcome(kind);
            t.kill(&mut cx.slots);
            r?;
            ensure!(got == want, "wait {kind} ended with {got:#x}, want {want:#x}");
        }
        // Queued to send: the send happens after it is back.
        let srv = thread::spawn(&mut cx.slots, "ktest-late", 10, late_receiver, &[60])?;
        let t = thread::create(&mut cx.slots, "ktest-waiter", 10, waiter, &[2, snd])?;
        let r = (|| {
            srv.process.mint(snd, 1, 0).ctx("MINT")?;
            t.process.start().ctx("START")?;
            let _ = keep_abi::TIMER.sleep(5);
            out_for(t.process, d, 100)?;
            let got = outcome(2);
            ensure!(got == 0, "the queued send ended with {got:#x}");
            Ok(())
        })();
        t.kill(&mut cx.slots);
        srv.kill(&mut cx.slots);
        r?;
        // Waiting for a process that exits while it is away.
        let target = thread::spawn(&mut cx.slots, "ktest-exit", 10, late_exit, &[77, 20])?;
        let t = thread::spawn(&mut cx.slots, "ktest-waiter", 10, waiter, &[3, target.process.0])?;
        let r = (|| {
            let _ = keep_abi::TIMER.sleep(5);
            out_for(t.process, d, 60)?;
            let got = outcome(3);
            ensure!(got == 1077, "PROCESS.WAIT ended with {got:#x}, want the exit code 77");
            Ok(())
        })();
        t.kill(&mut cx.slots);
        target.kill(&mut cx.slots);
        r?;
        invariants()
    })();
    cx.drop_slots(&[d, snd]);
    r
}

/// A process whose fault message waits in its handler's queue, and the
/// handler, are not exported (BAD_STATE).
pub fn export_refused_states(cx: &mut Cx) -> TestResult {
    let [d, snd, ret] = cx.slots::<3>()?;
    // The handler sleeps instead of receiving: the fault message queues.
    let h = thread::spawn(&mut cx.slots, "ktest-sleepy", 10, late_receiver, &[10_000])?;
    let f = thread::create(&mut cx.slots, "ktest-faulter", 10, faulting, &[])?;
    let r = (|| {
        h.process.mint(snd, 1, 0).ctx("MINT")?;
        f.process.set_fault_handler(snd).ctx("SET_FAULT_HANDLER")?;
        f.process.start().ctx("START")?;
        let _ = keep_abi::TIMER.sleep(10);
        expect_err(ACCOUNT.revoke_process(f.process.0, d), Error::BAD_STATE, "a process with its fault queued")?;
        expect_err(ACCOUNT.revoke_process(h.process.0, d), Error::BAD_STATE, "a handler with a fault queued")?;
        expect_type(d, ty::NULL)?;
        let _ = ret;
        invariants()
    })();
    f.kill(&mut cx.slots);
    h.kill(&mut cx.slots);
    cx.drop_slots(&[d, snd, ret]);
    r
}

fn faulting(_: &thread::Args) -> u64 {
    // SAFETY: nothing is mapped there: the read faults.
    unsafe { core::ptr::read_volatile(0x0000_6300_0000_0000 as *const u64) }
}

/// An account with a space and `N` CREATED processes in it.
fn with_processes<const N: usize>(
    cx: &mut Cx,
    f: impl FnOnce(&mut Cx, Account, [u64; N]) -> TestResult,
) -> TestResult {
    let a = new_account(cx, 16)?;
    let asp = cx.slot()?;
    let ps = cx.slots::<N>()?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        for p in ps {
            a.create_process(asp, p).ctx("CREATE_PROCESS")?;
            Process(p).set_name("exported").ctx("SET_NAME")?;
        }
        Ok(())
    })()
    .and_then(|_| f(cx, a, ps));
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&[a.0, asp]);
    cx.drop_slots(&ps);
    r
}

pub fn export_restore(cx: &mut Cx) -> TestResult {
    with_processes(cx, |cx, a, [p]| {
        let d = cx.slot()?;
        let r = (|| {
            Process(p).set_regs(0x1234_5000, 0x7000, 42, 43).ctx("SET_REGS")?;
            let [f0, used0, taken0, out0] = a.info_all().ctx("INFO")?;
            let id = a.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
            ensure!(id & (layout::PROCESS_NUMBERS - 1) != 0, "export id {id:#x}");
            expect_type(d, ty::PAGE)?;
            ensure!(live(p)?, "an exported process's capability must stay live");
            let [f1, used1, taken1, out1] = a.info_all().ctx("INFO")?;
            ensure!(
                f1 == f0 && used1 == used0 - 1 && taken1 == taken0 + 1 && out1 == out0 + 1,
                "INFO {:?} -> {:?}",
                [f0, used0, taken0, out0],
                [f1, used1, taken1, out1]
            );
            // The kpager can read the page, but not the process in it.
            let leak = with_page_words(d, |w| w.iter().any(|&v| v == 0x1234_5000 || v == 0x7000))?;
            ensure!(!leak, "the export shows the process's registers in the clear");
            // Without a kpager, whoever needs the process gets NO_MEMORY.
            expect_err(Process(p).status(), Error::NO_MEMORY, "STATUS while out")?;
            let d2 = cx.slot()?;
            let twice = a.revoke_process(p, d2);
            cx.drop_slot(d2);
            expect_err(twice, Error::BAD_STATE, "export twice")?;
            a.restore_process(d).ctx("RESTORE_PROCESS")?;
            ensure!(!live(d)?, "the page capability must go stale on restore");
            let st = Process(p).status().ctx("STATUS after restore")?;
            ensure!(st.state == keep_abi::state::CREATED, "restored process is {st}");
            ensure!(a.info_all().ctx("INFO")?[1] == used0, "used frames not back");
            ensure!(a.info_all().ctx("INFO")?[3] == out0, "still counted out");
            invariants()
        })();
        cx.drop_slot(d);
        r
    })
}

pub fn export_refused(cx: &mut Cx) -> TestResult {
    with_processes(cx, |cx, a, [p, q]| {
        let [d, e, fresh, other] = cx.slots::<4>()?;
        let r = (|| {
            // Export errors change nothing.
            let before = a.info_all().ctx("INFO")?;
            expect_err(ACCOUNT.revoke_process(slot::SELF_PROCESS, d), Error::BAD_STATE, "itself")?;
            expect_err(ACCOUNT.revoke_process(p, d), Error::INVALID_ARG, "another account's")?;
            expect_err(a.revoke_process(p, slot::CONSOLE), Error::EXISTS, "full dest")?;
            expect_err(a.revoke_process(slot::CONSOLE, d), Error::WRONG_TYPE, "not a process")?;
            ensure!(a.info_all().ctx("INFO")? == before, "a refused export changed the account");

            a.revoke_process(p, d).ctx("REVOKE_PROCESS p")?;
            a.revoke_process(q, e).ctx("REVOKE_PROCESS q")?;
            let out = a.info_all().ctx("INFO")?;
            // Tampered: one bit of the sealed body.
            with_page_words(d, |w| w[20] ^= 1 << 7)?;
            expect_err(a.restore_process(d), Error::BAD_SEAL, "tampered body")?;
            with_page_words(d, |w| w[20] ^= 1 << 7)?;
            // Swapped: p's export made to name q.
            let (pn, qn) = (with_page_words(d, |w| w[1])?, with_page_words(e, |w| w[1])?);
            with_page_words(d, |w| w[1] = qn)?;
            expect_err(a.restore_process(d), Error::BAD_SEAL, "p's export naming q")?;
            with_page_words(d, |w| w[1] = pn)?;
            // Foreign: another account cannot restore it.
            let b = new_account(cx, 1)?;
            SELF_ASPACE.move_cap(b.0, other).ctx("MOVE")?;
            cx.slots.free(b.0);
            expect_err(Account(other).restore_process(d), Error::BAD_SEAL, "another account")?;
            // Garbage, and a mapped page.
            let g = cx.retype(ty::PAGE)?;
            SELF_ASPACE.move_cap(g, fresh).ctx("MOVE")?;
            cx.slots.free(g);
            expect_err(a.restore_process(fresh), Error::BAD_SEAL, "an empty page")?;
            SELF_ASPACE.map(d, PEEK, RW).ctx("MAP")?;
            expect_err(a.restore_process(d), Error::IN_USE, "a mapped page")?;
            SELF_ASPACE.unmap(PEEK).ctx("UNMAP")?;
            ensure!(a.info_all().ctx("INFO")? == out, "a refused restore changed the account");
            invariants()?;

            // Replayed: a copy of an export that was restored before.
            let old: Vec<u64> = with_page_words(d, |w| w.to_vec())?;
            a.restore_process(d).ctx("RESTORE p")?;
            with_page_words(fresh, |w| w.copy_from_slice(&old))?;
            expect_err(a.restore_process(fresh), Error::BAD_SEAL, "replay while in")?;
            ensure!(!live(d)? , "restore left the page capability");
            a.revoke_process(p, d).ctx("REVOKE_PROCESS p again")?;
            expect_err(a.restore_process(fresh), Error::BAD_SEAL, "replay of the older export")?;
            // A faithful copy of the current export restores.
            let cur: Vec<u64> = with_page_words(d, |w| w.to_vec())?;
            with_page_words(fresh, |w| w.copy_from_slice(&cur))?;
            a.restore_process(fresh).ctx("RESTORE from a copy")?;
            expect_err(a.restore_process(d), Error::BAD_SEAL, "the original after its copy")?;
            Process(p).status().ctx("STATUS of p")?;

            // Destroying an exported process: gone, its export dead.
            a.destroy(q).ctx("DESTROY q while out")?;
            ensure!(!live(q)?, "q still live");
            expect_err(a.restore_process(e), Error::BAD_SEAL, "export of a destroyed process")?;
            ensure!(a.info_all().ctx("INFO")?[3] == 0, "processes still counted out");
            invariants()
        })();
        let _ = Account(other).destroy_all(slot::MEMORY);
        let _ = MEMORY.reclaim(d);
        let _ = MEMORY.reclaim(e);
        let _ = MEMORY.reclaim(fresh);
        cx.drop_slots(&[d, e, fresh, other]);
        r
    })
}

/// A kpager that is also its client's pager must not wait for itself
/// (seed 003, section 3.5): resolving its client's fault needs a MAP into
/// the client's space, which needs a frame from the account it pages.
fn self_kpager(a: &thread::Args) -> u64 {
    let [account, asp, page] = [a.words[0], a.words[1], a.words[2]];
    match Aspace(asp).map(page, 0x5000_0000_0000, RW) {
        Err(e) if e == Error::NO_MEMORY => {}
        Err(e) => return 10 + e.0,
        Ok(()) => return 2,
    }
    // The way out: donate first, then the operation goes through.
    if MEMORY.donate(account, 4).is_err() {
        return 3;
    }
    match Aspace(asp).map(page, 0x5000_0000_0000, RW) {
        Ok(()) => 0,
        Err(e) => 30 + e.0,
    }
}

pub fn kpager_own_fault(cx: &mut Cx) -> TestResult {
    let a = new_account(cx, 2)?;
    let [asp, snd] = cx.slots::<2>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?; // uses both frames
        let t = thread::create(&mut cx.slots, "ktest-selfkp", 10, self_kpager, &[a.0, asp, page])?;
        let r: TestResult = (|| {
            t.process.mint(snd, 1, 0).ctx("MINT")?;
            a.set_kpager(snd).ctx("SET_KPAGER")?;
            t.process.start().ctx("START")?;
            Ok(())
        })();
        if let Err(e) = r {
            t.kill(&mut cx.slots);
            return Err(e);
        }
        let st = t.join(&mut cx.slots)?;
        ensure!(st.code == 0, "the kpager thread: {st}");
        Ok(())
    })();
    let _ = a.destroy_all(slot::MEMORY);
    let _ = MEMORY.reclaim(page);
    cx.slots.free(page);
    cx.drop_slots(&[a.0, asp, snd]);
    r
}

// ---- a live task whose kernel memory is taken back while it runs ----

const DATA_REGIONS: usize = 8;
const ROUNDS: u64 = 40;
fn data_va(i: usize) -> u64 {
    (168 + i as u64) << 39 | 0x1234_5000
}
static DATA_PAGES: [AtomicU64; DATA_REGIONS] = [const { AtomicU64::new(0) }; DATA_REGIONS];
static PAGER_FAULTS: AtomicU64 = AtomicU64::new(0);
static KPAGER_RESTORES: AtomicU64 = AtomicU64::new(0);
static KPAGER_DONATIONS: AtomicU64 = AtomicU64::new(0);
static WORK_DONE: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];
/// Export pages waiting to go back (0: none); whoever swaps one out restores it.
static EXPORTS: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

/// The task's pager: it made the data mappings and makes them again.
fn pager(a: &thread::Args) -> u64 {
    let ret = a.words[0];
    a.buf().set_recv_slots(&[ret]);
    loop {
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 || m.tag.label() != label::EXCEPTION || m.words[0] != 14 {
            return 1;
        }
        let addr = m.words[2] & !0xfff;
        let Some(i) = (0..DATA_REGIONS).find(|&i| data_va(i) == addr) else {
            return 2; // a fault the pager did not expect: the worker stays stopped
        };
        if SELF_ASPACE.map(DATA_PAGES[i].load(SeqCst), addr, RW).is_err() {
            return 3;
        }
        PAGER_FAULTS.fetch_add(1, SeqCst);
        if Return(ret).reply(Tag::new(reply::RESUME), [0; 4]).is_err() {
            return 4;
        }
    }
}

/// The account's kpager: restores an exported process when it is needed,
/// and donates frames when they run out.
fn kpager(a: &thread::Args) -> u64 {
    let ret = a.words[0];
    a.buf().set_recv_slots(&[ret]);
    loop {
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 || m.tag.label() != label::KMEM {
            return 1;
        }
        if m.words[2] == layout::KMEM_PROCESS {
            for x in &EXPORTS {
                let pg = x.swap(0, SeqCst);
                if pg != 0 {
                    if ACCOUNT.restore_process(pg).is_err() {
                        return 2;
                    }
                    KPAGER_RESTORES.fetch_add(1, SeqCst);
                }
            }
        } else {
            let _ = MEMORY.donate(slot::ACCOUNT, m.words[0].max(1));
            KPAGER_DONATIONS.fetch_add(1, SeqCst);
        }
        if Return(ret).reply(Tag::new(0), [0; 4]).is_err() {
            return 3;
        }
    }
}

/// The task's cappages: one per capability-segment page table (512
/// cappages apart), each holding a copy of the timer capability that the
/// workers invoke in turn.
const CAP_REGIONS: u64 = 16;
fn cap_region(i: u64) -> u64 {
    0x7100_0000 + i * 512 * layout::CAPPAGE_SLOTS
}

/// Invokes the timer copy in the round's cappage; false if it fails.
fn touch_caps(round: u64) -> bool {
    keep_abi::Timer(cap_region(round % CAP_REGIONS) + 1).now().is_ok()
}

/// Writes and checks a pattern in every data page; false on a mismatch.
fn touch_data(id: u64, round: u64) -> bool {
    for i in 0..DATA_REGIONS {
        let w = (data_va(i) as *mut u64).wrapping_add(id as usize * 64);
        for k in 0..64 {
            let v = id << 48 | round << 16 | (i as u64) << 8 | k as u64;
            // SAFETY: the data pages are mapped (or faulted in by the pager).
            unsafe { w.add(k).write_volatile(v) };
        }
        for k in 0..64 {
            let v = id << 48 | round << 16 | (i as u64) << 8 | k as u64;
            // SAFETY: as above.
            if unsafe { w.add(k).read_volatile() } != v {
                return false;
            }
        }
    }
    true
}

/// Worker 0: computes and calls worker 1 every round.
fn worker0(a: &thread::Args) -> u64 {
    let peer = a.words[0];
    for round in 0..ROUNDS {
        if !touch_data(0, round) {
            return 10;
        }
        if !touch_caps(round) {
            return 11;
        }
        let m = Sender(peer).call(Tag::new(1), [round, 0, 0, 0]);
        if m.err != 0 || m.words[0] != round * 3 {
            return 20 + m.err;
        }
        WORK_DONE[0].fetch_add(1, SeqCst);
        let _ = keep_abi::TIMER.sleep(1);
    }
    0
}

/// Worker 1: answers worker 0 with 3 × its word, computing between calls.
fn worker1(a: &thread::Args) -> u64 {
    let ret = a.words[0];
    a.buf().set_recv_slots(&[ret]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    for round in 0..ROUNDS {
        if m.err != 0 || m.words[0] != round {
            return 10 + m.err;
        }
        if !touch_data(1, round) {
            return 20;
        }
        if !touch_caps(round + 7) {
            return 21;
        }
        WORK_DONE[1].fetch_add(1, SeqCst);
        if round + 1 == ROUNDS {
            let _ = Return(ret).reply(Tag::new(0), [round * 3, 0, 0, 0]);
            return 0;
        }
        m = Return(ret).reply_recv(Tag::new(0).with_slots(1), [round * 3, 0, 0, 0], 0);
    }
    0
}

pub fn live_task(cx: &mut Cx) -> TestResult {
    let pages: Vec<u64> = (0..DATA_REGIONS).map(|_| cx.retype(ty::PAGE)).collect::<Result<_, _>>()?;
    let cappages: Vec<u64> = (0..CAP_REGIONS).map(|_| cx.retype(ty::CAPPAGE)).collect::<Result<_, _>>()?;
    let [pret, kret, wret, psnd, ksnd, wsnd, d0, d1, dt] = cx.slots::<9>()?;
    for (i, p) in pages.iter().enumerate() {
        DATA_PAGES[i].store(*p, SeqCst);
    }
    for c in [&PAGER_FAULTS, &KPAGER_RESTORES, &KPAGER_DONATIONS, &WORK_DONE[0], &WORK_DONE[1]] {
        c.store(0, SeqCst);
    }
    let r = (|| {
        for (i, p) in pages.iter().enumerate() {
            SELF_ASPACE.map(*p, data_va(i), RW).ctx("MAP data")?;
        }
        for (i, c) in cappages.iter().enumerate() {
            SELF_ASPACE.map_cappage(*c, cap_region(i as u64)).ctx("MAP_CAPPAGE")?;
            SELF_ASPACE.copy_cap(slot::TIMER, cap_region(i as u64) + 1, 0).ctx("COPY_CAP")?;
        }
        let pg = thread::spawn(&mut cx.slots, "ktest-pager", 12, pager, &[pret])?;
        let kp = thread::spawn(&mut cx.slots, "ktest-kpager", 12, kpager, &[kret])?;
        let w1 = thread::create(&mut cx.slots, "ktest-work1", 10, worker1, &[wret])?;
        let w0 = thread::create(&mut cx.slots, "ktest-work0", 10, worker0, &[wsnd])?;
        let r = (|| {
            pg.process.mint(psnd, 1, 0).ctx("MINT pager")?;
            kp.process.mint(ksnd, 2, 0).ctx("MINT kpager")?;
            w1.process.mint(wsnd, 3, 0).ctx("MINT worker 1")?;
            for w in [&w0, &w1] {
                w.process.set_fault_handler(psnd).ctx("SET_FAULT_HANDLER")?;
            }
            ACCOUNT.set_kpager(ksnd).ctx("SET_KPAGER")?;
            w1.process.start().ctx("START")?;
            w0.process.start().ctx("START")?;
            let mut revoked_tables = 0;
            let mut revoked_cap_tables = 0;
            let mut exported = 0;
            let workers = [w0.process.0, w1.process.0];
            let dests = [d0, d1];
            for _ in 0..200 {
                if w0.process.status().map(|s| s.state).unwrap_or(0) == keep_abi::state::EXITED {
                    break;
                }
                // Take back every data region's tables, and the workers.
                for i in 0..DATA_REGIONS {
                    if ACCOUNT.revoke_table(slot::SELF_ASPACE, data_va(i), 3, dt).is_ok() {
                        revoked_tables += 1;
                        MEMORY.reclaim(dt).ctx("RECLAIM a table frame")?;
                    }
                }
                for i in 0..CAP_REGIONS {
                    if ACCOUNT.revoke_cap_table(slot::SELF_ASPACE, cap_region(i), 1, dt).is_ok() {
                        revoked_cap_tables += 1;
                        MEMORY.reclaim(dt).ctx("RECLAIM a segment table frame")?;
                    }
                }
                for (k, w) in workers.iter().enumerate() {
                    if EXPORTS[k].load(SeqCst) == 0 && ACCOUNT.revoke_process(*w, dests[k]).is_ok() {
                        EXPORTS[k].store(dests[k], SeqCst);
                        exported += 1;
                    }
                }
                let _ = keep_abi::TIMER.sleep(2);
                // Give back whatever nobody needed meanwhile.
                for x in &EXPORTS {
                    let pg = x.swap(0, SeqCst);
                    if pg != 0 {
                        ACCOUNT.restore_process(pg).ctx("RESTORE_PROCESS")?;
                    }
                }
            }
            let s0 = w0.process.wait().ctx("WAIT worker 0")?;
            let s1 = w1.process.wait().ctx("WAIT worker 1")?;
            ensure!(s0.code == 0 && s1.code == 0, "workers: {s0}, {s1}");
            ensure!(
                WORK_DONE[0].load(SeqCst) == ROUNDS && WORK_DONE[1].load(SeqCst) == ROUNDS,
                "rounds done: {} and {}",
                WORK_DONE[0].load(SeqCst),
                WORK_DONE[1].load(SeqCst)
            );
            ensure!(
                revoked_tables >= 8 && revoked_cap_tables >= 16 && exported >= 2,
                "took back {revoked_tables} tables, {revoked_cap_tables} segment tables, {exported} processes"
            );
            ensure!(PAGER_FAULTS.load(SeqCst) >= 8, "the pager rebuilt only {} mappings", PAGER_FAULTS.load(SeqCst));
            invariants()
        })();
        let _ = ACCOUNT.set_kpager(0);
        for x in &EXPORTS {
            let pg = x.swap(0, SeqCst);
            if pg != 0 {
                let _ = ACCOUNT.restore_process(pg);
            }
        }
        w0.kill(&mut cx.slots);
        w1.kill(&mut cx.slots);
        pg.kill(&mut cx.slots);
        kp.kill(&mut cx.slots);
        r
    })();
    for (i, p) in pages.iter().enumerate() {
        let _ = SELF_ASPACE.unmap(data_va(i));
        let _ = MEMORY.reclaim(*p);
        cx.slots.free(*p);
    }
    for c in cappages {
        let _ = MEMORY.revoke(c);
        cx.slots.free(c);
    }
    cx.drop_slots(&[pret, kret, wret, psnd, ksnd, wsnd, d0, d1, dt]);
    r
}

/// Frames an address space costs its account (its object and its PML4).
const ASPACE_FRAMES: u64 = 2;

/// INFO's (free, used) frames of an account.
fn frames(a: Account) -> Result<(u64, u64), String> {
    let [free, used, ..] = a.info_all().ctx("INFO")?;
    Ok((free, used))
}

/// Process numbers are bought by the account that makes the processes: the
/// first process costs its frame and a number page, the next ones only their
/// frame; a refusal for want of frames changes nothing.
pub fn numbers_paid(cx: &mut Cx) -> TestResult {
    let pool0 = MEMORY.free().ctx("FREE")?;
    let a = new_account(cx, ASPACE_FRAMES + 1)?;
    let [asp, p1, p2, p3] = cx.slots::<4>()?;
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        ensure!(frames(a)? == (1, ASPACE_FRAMES), "after CREATE_ASPACE: {:?}", frames(a)?);
        // One frame is not enough for the first process: it needs a number page too.
        expect_err(a.create_process(asp, p1), Error::NO_MEMORY, "first process with 1 frame")?;
        ensure!(frames(a)? == (1, ASPACE_FRAMES), "a refused CREATE_PROCESS changed INFO: {:?}", frames(a)?);
        ensure!(!live(p1)?, "a refused CREATE_PROCESS filled its slot");
        MEMORY.donate(a.0, 1).ctx("DONATE")?;
        a.create_process(asp, p1).ctx("CREATE_PROCESS with 2 frames")?;
        ensure!(frames(a)? == (0, ASPACE_FRAMES + 2), "first process and its number page: {:?}", frames(a)?);
        // The second takes a number from the same page: one frame.
        expect_err(a.create_process(asp, p2), Error::NO_MEMORY, "second process with no frame")?;
        MEMORY.donate(a.0, 1).ctx("DONATE")?;
        a.create_process(asp, p2).ctx("second CREATE_PROCESS with 1 frame")?;
        ensure!(frames(a)? == (0, ASPACE_FRAMES + 3), "second process: {:?}", frames(a)?);
        // Destroyed processes give back their frames; the account keeps its
        // only number page for the next one.
        a.destroy(p2).ctx("DESTROY p2")?;
        a.destroy(p1).ctx("DESTROY p1")?;
        ensure!(frames(a)? == (2, ASPACE_FRAMES + 1), "after both DESTROYs: {:?}", frames(a)?);
        a.create_process(asp, p3).ctx("CREATE_PROCESS on the kept page")?;
        ensure!(Process(p3).status().is_ok(), "the new process works");
        invariants()?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
        let pool = MEMORY.free().ctx("FREE")?;
        ensure!(pool == pool0, "pool {pool0} -> {pool}: the number page did not come back");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&[a.0, asp, p1, p2, p3]);
    r
}

/// A number page holds 63 numbers: the 64th process buys a second page, which
/// goes back as soon as it is empty (the first stays).
pub fn numbers_per_page(cx: &mut Cx) -> TestResult {
    const PER_PAGE: u64 = 63;
    let a = new_account(cx, ASPACE_FRAMES + 1 + PER_PAGE + 2)?;
    let asp = cx.slot()?;
    let mut ps = Vec::new();
    let r = (|| {
        a.create_aspace(asp).ctx("CREATE_ASPACE")?;
        for i in 0..PER_PAGE {
            let p = cx.slot()?;
            ps.push(p);
            a.create_process(asp, p).ctx("CREATE_PROCESS")?;
            let want = ASPACE_FRAMES + 1 + (i + 1);
            ensure!(frames(a)?.1 == want, "process {i}: {:?}, want {want} used", frames(a)?);
        }
        let extra = cx.slot()?;
        ps.push(extra);
        a.create_process(asp, extra).ctx("64th CREATE_PROCESS")?;
        ensure!(frames(a)? == (0, ASPACE_FRAMES + 2 + PER_PAGE + 1), "64th process and a second page: {:?}", frames(a)?);
        a.destroy(extra).ctx("DESTROY the 64th")?;
        ensure!(frames(a)? == (2, ASPACE_FRAMES + 1 + PER_PAGE), "its page came back with it: {:?}", frames(a)?);
        a.destroy(ps[5]).ctx("DESTROY one of 63")?;
        ensure!(frames(a)? == (3, ASPACE_FRAMES + PER_PAGE), "a number freed in a page still used: {:?}", frames(a)?);
        let again = cx.slot()?;
        ps.push(again);
        a.create_process(asp, again).ctx("CREATE_PROCESS into the freed number")?;
        ensure!(frames(a)? == (2, ASPACE_FRAMES + 1 + PER_PAGE), "the freed number served: {:?}", frames(a)?);
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    cx.drop_slots(&[a.0, asp]);
    cx.drop_slots(&ps);
    r
}

/// A number page given back and bought by another account: its numbers start
/// above every version they had, so no capability of the old processes names
/// the new ones.
pub fn numbers_reused(cx: &mut Cx) -> TestResult {
    let [asp_a, p, s, d, asp_b, q, e] = cx.slots::<7>()?;
    let a = new_account(cx, 8)?;
    let mut b = None;
    let r = (|| {
        a.create_aspace(asp_a).ctx("CREATE_ASPACE")?;
        a.create_process(asp_a, p).ctx("CREATE_PROCESS")?;
        Process(p).mint(s, 7, 0).ctx("MINT")?;
        // The export identifier tells the process number (bits 0-19).
        let num_p = a.revoke_process(p, d).ctx("REVOKE_PROCESS p")? & (layout::PROCESS_NUMBERS - 1);
        a.restore_process(d).ctx("RESTORE_PROCESS p")?;
        a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL a")?; // its number page goes back
        let nb = new_account(cx, 8)?;
        b = Some(nb);
        nb.create_aspace(asp_b).ctx("CREATE_ASPACE")?;
        nb.create_process(asp_b, q).ctx("CREATE_PROCESS")?;
        let num_q = nb.revoke_process(q, e).ctx("REVOKE_PROCESS q")? & (layout::PROCESS_NUMBERS - 1);
        nb.restore_process(e).ctx("RESTORE_PROCESS q")?;
        ensure!(num_q == num_p, "q got number {num_q:#x}, not p's {num_p:#x}: the page was not reused");
        ensure!(!live(p)?, "p's PROCESS capability names q");
        ensure!(!live(s)?, "p's SENDER capability names q");
        expect_err(Process(p).status(), Error::STALE, "STATUS through p's capability")?;
        ensure!(live(q)? && Process(q).status().is_ok(), "q's own capability works");
        invariants()
    })();
    let _ = a.destroy_all(slot::MEMORY);
    if let Some(nb) = b {
        let _ = nb.destroy_all(slot::MEMORY);
        cx.drop_slot(nb.0);
    }
    cx.drop_slots(&[a.0, asp_a, p, s, d, asp_b, q, e]);
    r
}

/// KERNEL.SET_SEAL_KEY (docs/persistence.md, "The seal and its key")
/// needs WRITE: ktest's KERNEL capability (read-only, as every trusted
/// program's) is refused, and the seal goes on working.  The root task
/// checks the method itself at autotest (user/root/src/checkpoint.rs,
/// `seal_key_check`), and the host tests that the same key opens at a later
/// boot what it sealed (kernel/test/host_tests.c).
pub fn seal_key(cx: &mut Cx) -> TestResult {
    with_processes(cx, |cx, a, [p]| {
        let d = cx.slot()?;
        let r = (|| {
            expect_err(KERNEL.set_seal_key(&[0x5a; 32]), Error::NO_RIGHTS, "SET_SEAL_KEY through a read-only KERNEL")?;
            a.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
            a.restore_process(d).ctx("RESTORE_PROCESS after the refusal")?;
            invariants()
        })();
        cx.drop_slot(d);
        r
    })
}

/// A thread that sleeps words[0] ms, then exits with words[1].
fn sleep_exit(a: &thread::Args) -> u64 {
    let _ = keep_abi::TIMER.sleep(a.words[0]);
    a.words[1]
}

/// KMEM0016: ACCOUNT.DESTROY of an exported process.  Through another
/// account it is INVALID_ARG, the export intact; through its own it is
/// OK, and its export no longer restores (BAD_SEAL: not the current export
/// of its process); a second process exported beside it is restored and
/// ends as it would have.
pub fn destroy_exported(cx: &mut Cx) -> TestResult {
    let other = new_account(cx, 0)?;
    let [d1, d2] = cx.slots::<2>()?;
    let t1 = thread::spawn(&mut cx.slots, "ktest-out1", 3, sleep_exit, &[50, 11])?;
    let t2 = thread::spawn(&mut cx.slots, "ktest-out2", 3, sleep_exit, &[50, 22])?;
    let r = (|| {
        ACCOUNT.revoke_process(t1.process.0, d1).ctx("REVOKE_PROCESS the first")?;
        ACCOUNT.revoke_process(t2.process.0, d2).ctx("REVOKE_PROCESS the second")?;
        expect_err(other.destroy(t1.process.0), Error::INVALID_ARG, "DESTROY through another account")?;
        invariants()?;
        // The first exported: behind the second in the account's list.
        ACCOUNT.destroy(t1.process.0).ctx("DESTROY the exported process")?;
        invariants()?;
        expect_err(ACCOUNT.restore_process(d1), Error::BAD_SEAL, "RESTORE_PROCESS of a destroyed process's export")?;
        ACCOUNT.restore_process(d2).ctx("RESTORE_PROCESS the second")?;
        let st = crate::ended_within(t2.process, 3000).ok_or("the restored process did not end in 3 s")?;
        ensure!(st.state == keep_abi::state::EXITED && st.code == 22, "the restored process ended in state {} code {}", st.state, st.code);
        Ok(())
    })();
    t1.kill(&mut cx.slots);
    t2.kill(&mut cx.slots);
    cx.drop_slots(&[d1, d2, other.0]);
    r?;
    invariants()
}

/// KMEM0017: a process an interrupt line is bound to is not exported
/// (REVOKE_PROCESS is IN_USE, the destination stays empty and the process
/// goes on), and no line is bound to an exported process (BIND is
/// BAD_STATE and the line stays unbound: ACK is BAD_STATE); once the line
/// is let go the same process exports and restores.
pub fn export_interrupt_bound(cx: &mut Cx) -> TestResult {
    use crate::device::{PIT_LINE, pit_quiet};
    use keep_abi::{INTERRUPT, state};
    let [d, snd] = cx.slots::<2>()?;
    // Above ktest's priority: it runs at once and sleeps.
    let t = thread::spawn(&mut cx.slots, "ktest-bound", 12, late_exit, &[0, 60_000])?;
    let r = (|| {
        t.process.mint(snd, 0x17, rights::WRITE).ctx("MINT")?;
        pit_quiet();
        INTERRUPT.bind(PIT_LINE, snd).ctx("BIND")?;
        let bound = ACCOUNT.revoke_process(t.process.0, d);
        let acked = INTERRUPT.ack(PIT_LINE);
        INTERRUPT.unbind(PIT_LINE).ctx("UNBIND")?;
        expect_err(bound, Error::IN_USE, "REVOKE_PROCESS of a process a line is bound to")?;
        acked.ctx("ACK of the bound line")?;
        expect_type(d, ty::NULL)?;
        let st = t.process.status().ctx("STATUS")?;
        ensure!(st.state == state::BLOCKED, "the refused export left the process {st}");
        ACCOUNT.revoke_process(t.process.0, d).ctx("REVOKE_PROCESS after UNBIND")?;
        let r: TestResult = (|| {
            expect_err(INTERRUPT.bind(PIT_LINE, snd), Error::BAD_STATE, "BIND to an exported process")?;
            expect_err(INTERRUPT.ack(PIT_LINE), Error::BAD_STATE, "ACK of the line the refused BIND named")?;
            Ok(())
        })();
        let back = ACCOUNT.restore_process(d).ctx("RESTORE_PROCESS");
        r?;
        back?;
        let st = t.process.status().ctx("STATUS after RESTORE")?;
        ensure!(st.state == state::BLOCKED, "the restored process is {st}");
        invariants()
    })();
    let _ = INTERRUPT.unbind(PIT_LINE);
    t.kill(&mut cx.slots);
    cx.drop_slots(&[d, snd]);
    r
}

/// KMEM0018: a space destroyed (ACCOUNT.DESTROY, and DESTROY_ALL of its
/// account) while the segment table of a cappage mapped in it is taken
/// back: the cappage counts as unmapped all the same, so RECLAIM, IN_USE
/// before, takes it afterwards, and the invariants hold.
pub fn destroy_cap_table_out(cx: &mut Cx) -> TestResult {
    const NEAR: u64 = 0x4000;
    for all in [false, true] {
        let what = if all { "DESTROY_ALL" } else { "DESTROY" };
        let a = new_account(cx, 32)?;
        let [asp, d] = cx.slots::<2>()?;
        let cp = cx.retype(ty::CAPPAGE)?;
        let r = (|| {
            a.create_aspace(asp).ctx("CREATE_ASPACE")?;
            let x = Aspace(asp);
            x.map_cappage(cp, NEAR).ctx("MAP_CAPPAGE")?;
            x.insert_cap(slot::CONSOLE, NEAR + 1, 0).ctx("INSERT")?;
            a.revoke_cap_table(asp, NEAR, 1, d).ctx("REVOKE_CAP_TABLE")?;
            MEMORY.reclaim(d).ctx("RECLAIM the table")?;
            expect_err(MEMORY.reclaim(cp), Error::IN_USE, "RECLAIM of the cappage mapped with its table out")?;
            if all {
                a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
            } else {
                a.destroy(asp).ctx("DESTROY")?;
            }
            ensure!(!live(asp)?, "{what}: the space is still live");
            MEMORY.reclaim(cp).ctx(&format!("RECLAIM of the cappage after {what}"))?;
            invariants()
        })();
        let _ = a.destroy_all(slot::MEMORY);
        let _ = MEMORY.reclaim(cp);
        cx.drop_slots(&[a.0, asp, d, cp]);
        r.map_err(|e| format!("{what}: {e}"))?;
    }
    Ok(())
}

/// KMEM0019: a fault whose handler is exported goes to the handler's
/// account's kpager as a KMEM fault naming the export (KMEM_PROCESS and the
/// identifier REVOKE_PROCESS gave), the faulting process waiting; once the
/// kpager restores the handler and answers, the fault happens again and
/// waits in the handler's queue (so the handler is not exported: BAD_STATE).
/// With no kpager the fault reaches nobody: the process stops as FAULTED.
pub fn exported_handler_fault(cx: &mut Cx) -> TestResult {
    use keep_abi::{SELF_PROCESS, layout::KMEM_PROCESS, state};
    with_processes(cx, |cx, a, [h]| {
        let [d, hs, ks, ret] = cx.slots::<4>()?;
        let r = (|| {
            Process(h).mint(hs, 0x4848, rights::WRITE).ctx("MINT the handler's sender")?;
            let id = a.revoke_process(h, d).ctx("REVOKE_PROCESS")?;
            // Above ktest's priority: each faulter runs and faults at once.
            let f = thread::create(&mut cx.slots, "ktest-faulter", 12, faulting, &[])?;
            let r = (|| {
                f.process.set_fault_handler(hs).ctx("SET_FAULT_HANDLER")?;
                f.process.start().ctx("START")?;
                let st = f.process.status().ctx("STATUS")?;
                ensure!(st.state == state::FAULTED, "handler exported, no kpager: the faulting process is {st}");
                Ok(())
            })();
            f.kill(&mut cx.slots);
            r?;
            SELF_PROCESS.mint(ks, 0x4b50, rights::WRITE).ctx("MINT the kpager's sender")?;
            a.set_kpager(ks).ctx("SET_KPAGER")?;
            let f = thread::create(&mut cx.slots, "ktest-faulter", 12, faulting, &[])?;
            let r = (|| {
                f.process.set_fault_handler(hs).ctx("SET_FAULT_HANDLER")?;
                f.process.start().ctx("START")?;
                keep_rt::ipc_buffer().set_recv_slots(&[ret]);
                let m = recv(Tag::new(0).with_slots(1), 2000);
                m.result().ctx("RECV the KMEM fault")?;
                ensure!(
                    m.tag.label() == label::KMEM && m.tag.is_called() && m.payload == 0x4b50,
                    "kpager's message: tag {:#x} payload {:#x}",
                    m.tag.0,
                    m.payload
                );
                ensure!(
                    m.words[2] == KMEM_PROCESS && m.words[3] == id,
                    "KMEM words {:#x?}, want KMEM_PROCESS and the export {id:#x}",
                    m.words
                );
                let st = f.process.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "while the kpager has its fault the faulting process is {st}");
                a.restore_process(d).ctx("RESTORE_PROCESS")?;
                Return(ret).reply(Tag::new(reply::RESUME), [0; 4]).ctx("the kpager's answer")?;
                let st = f.process.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "after the kpager's answer the faulting process is {st}");
                let d2 = cx.slot()?;
                let again = a.revoke_process(h, d2);
                cx.drop_slot(d2);
                expect_err(again, Error::BAD_STATE, "REVOKE_PROCESS of the handler with the fault in its queue")
            })();
            f.kill(&mut cx.slots);
            let _ = a.set_kpager(0);
            r?;
            invariants()
        })();
        cx.drop_slots(&[d, hs, ks, ret]);
        r
    })
}

static SEND_ERR: AtomicU64 = AtomicU64::new(0);

/// A thread that sends once to the sender at words[0] and keeps the result.
fn one_send(a: &thread::Args) -> u64 {
    SEND_ERR.store(u64::MAX, SeqCst);
    let e = Sender(a.words[0]).send(Tag::new(0x20), [1, 2, 3, 4]).err().map_or(0, |e| e.0);
    SEND_ERR.store(e, SeqCst);
    0
}

/// KMEM0020: a receiver exported while a sender waits in its queue: the
/// sender starts again, finds it out and asks the receiver's account's
/// kpager (KMEM_PROCESS with the export's identifier); restored and
/// answered, the send starts again and waits in the receiver's queue as
/// before, its result not yet given.
pub fn export_with_queued_sender(cx: &mut Cx) -> TestResult {
    use keep_abi::{SELF_PROCESS, layout::KMEM_PROCESS, state};
    with_processes(cx, |cx, a, [rcv]| {
        let [d, rs, ks, ret] = cx.slots::<4>()?;
        let r = (|| {
            Process(rcv).mint(rs, 0x5252, rights::WRITE).ctx("MINT the receiver's sender")?;
            SELF_PROCESS.mint(ks, 0x4b51, rights::WRITE).ctx("MINT the kpager's sender")?;
            a.set_kpager(ks).ctx("SET_KPAGER")?;
            // Above ktest's priority: it runs at once and waits in the queue
            // of the receiver, which never receives.
            let s = thread::spawn(&mut cx.slots, "ktest-sender", 12, one_send, &[rs])?;
            let r = (|| {
                let st = s.process.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "the sender is {st}, not queued (its send gave {:#x})", SEND_ERR.load(SeqCst));
                let id = a.revoke_process(rcv, d).ctx("REVOKE_PROCESS of the receiver")?;
                keep_rt::ipc_buffer().set_recv_slots(&[ret]);
                let m = recv(Tag::new(0).with_slots(1), 2000);
                m.result().ctx("RECV the KMEM fault")?;
                ensure!(
                    m.tag.label() == label::KMEM && m.payload == 0x4b51 && m.words[2] == KMEM_PROCESS && m.words[3] == id,
                    "kpager's message: tag {:#x} payload {:#x} words {:#x?}, want KMEM_PROCESS and {id:#x}",
                    m.tag.0,
                    m.payload,
                    m.words
                );
                ensure!(SEND_ERR.load(SeqCst) == u64::MAX, "the send ended with {:#x}", SEND_ERR.load(SeqCst));
                a.restore_process(d).ctx("RESTORE_PROCESS")?;
                Return(ret).reply(Tag::new(reply::RESUME), [0; 4]).ctx("the kpager's answer")?;
                let st = s.process.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "after the answer the sender is {st}, not queued again");
                ensure!(SEND_ERR.load(SeqCst) == u64::MAX, "the send ended with {:#x}", SEND_ERR.load(SeqCst));
                Ok(())
            })();
            s.kill(&mut cx.slots);
            let _ = a.set_kpager(0);
            r?;
            invariants()
        })();
        cx.drop_slots(&[d, rs, ks, ret]);
        r
    })
}

/// FH0011: a fault handler destroyed with a fault message and a sender in
/// its queue (it never receives): the faulting process ends FAULTED with
/// its own fault (a page fault at the address it read), the sender's send
/// ends STALE, and the invariants hold.
pub fn handler_destroyed_with_queue(cx: &mut Cx) -> TestResult {
    use keep_abi::state;
    SEND_ERR.store(0, SeqCst);
    let hs = cx.slot()?;
    let h = thread::create(&mut cx.slots, "ktest-deaf", 10, late_receiver, &[0])?;
    let mut h = Some(h);
    let r = (|| {
        h.as_ref().unwrap().process.mint(hs, 0x4846, rights::WRITE).ctx("MINT")?;
        // Above ktest's priority: each runs at once and waits in the queue.
        let f = thread::create(&mut cx.slots, "ktest-faulter", 12, faulting, &[])?;
        let s = match thread::spawn(&mut cx.slots, "ktest-sender", 12, one_send, &[hs]) {
            Ok(s) => s,
            Err(e) => {
                f.kill(&mut cx.slots);
                return Err(e);
            }
        };
        let r = (|| {
            f.process.set_fault_handler(hs).ctx("SET_FAULT_HANDLER")?;
            f.process.start().ctx("START")?;
            for (who, p) in [("the faulting process", f.process), ("the sender", s.process)] {
                let st = p.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "{who} is {st}, not in the handler's queue");
            }
            h.take().unwrap().kill(&mut cx.slots);
            let st = f.process.status().ctx("STATUS")?;
            ensure!(
                st.state == state::FAULTED && st.code == 14 && st.addr == 0x0000_6300_0000_0000,
                "with its handler destroyed the faulting process is {st}, want FAULTED by its page fault"
            );
            let st = s.process.status().ctx("STATUS")?;
            ensure!(st.state == state::EXITED, "the sender is {st}");
            ensure!(SEND_ERR.load(SeqCst) == Error::STALE.0, "the queued send ended with {:#x}, want STALE", SEND_ERR.load(SeqCst));
            invariants()
        })();
        f.kill(&mut cx.slots);
        s.kill(&mut cx.slots);
        r
    })();
    if let Some(h) = h {
        h.kill(&mut cx.slots);
    }
    cx.drop_slot(hs);
    r
}

/// KMEM0021: ACCOUNT.DESTROY_ALL of an account with exported processes
/// destroys them too (their capabilities STALE, RESTORE_PROCESS of their
/// exports BAD_SEAL, the export pages reclaimed as any page) with the
/// account, and the pool has every frame back.
pub fn destroy_all_exported(cx: &mut Cx) -> TestResult {
    let free0 = MEMORY.free().ctx("FREE")?;
    let r = with_processes(cx, |cx, a, [p, q]| {
        let [d, e] = cx.slots::<2>()?;
        let r = (|| {
            a.revoke_process(p, d).ctx("REVOKE_PROCESS")?;
            a.revoke_process(q, e).ctx("REVOKE_PROCESS")?;
            ensure!(a.info_all().ctx("INFO")?[3] == 2, "two exported, INFO says {}", a.info_all().ctx("INFO")?[3]);
            a.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
            expect_err(a.info_all(), Error::STALE, "INFO of the account after DESTROY_ALL")?;
            for (x, pr) in [(d, p), (e, q)] {
                expect_err(Process(pr).status(), Error::STALE, "STATUS of an exported process after DESTROY_ALL")?;
                expect_err(ACCOUNT.restore_process(x), Error::BAD_SEAL, "RESTORE_PROCESS of its export")?;
                MEMORY.reclaim(x).ctx("RECLAIM the export's page")?;
            }
            invariants()
        })();
        cx.drop_slots(&[d, e]);
        r
    });
    let free1 = MEMORY.free().ctx("FREE")?;
    r?;
    ensure!(free1 == free0, "the pool had {free0} frames free, {free1} afterwards");
    Ok(())
}

/// IPC0043: a receive that names no receive slot passes over a fault
/// message waiting in the queue (it needs a slot for its return
/// capability) and takes the plain message queued behind it; the fault
/// message stays queued, its process waiting, until a receive with a slot
/// takes it.
pub fn recv_passes_fault_message(cx: &mut Cx) -> TestResult {
    use keep_abi::{SELF_PROCESS, state};
    let [fs, ss, ret] = cx.slots::<3>()?;
    let r = (|| {
        SELF_PROCESS.mint(fs, 0xfa, rights::WRITE).ctx("MINT")?;
        SELF_PROCESS.mint(ss, 0x5e, rights::WRITE).ctx("MINT")?;
        // Above ktest's priority: each runs at once and waits in ktest's queue.
        let f = thread::create(&mut cx.slots, "ktest-faulter", 12, faulting, &[])?;
        let r = (|| {
            f.process.set_fault_handler(fs).ctx("SET_FAULT_HANDLER")?;
            f.process.start().ctx("START")?;
            let s = thread::spawn(&mut cx.slots, "ktest-sender", 12, one_send, &[ss])?;
            let r = (|| {
                let m = recv(Tag::new(0).recv_nonblocking(), 0);
                m.result().ctx("RECV naming no slot")?;
                ensure!(
                    m.payload == 0x5e && m.tag.label() == 0x20 && m.words == [1, 2, 3, 4],
                    "RECV naming no slot took label {:#x} payload {:#x}, want the plain message",
                    m.tag.label(),
                    m.payload
                );
                let st = f.process.status().ctx("STATUS")?;
                ensure!(st.state == state::BLOCKED, "the faulting process is {st}, its message not waiting");
                let m = recv(Tag::new(0).recv_nonblocking(), 0);
                ensure!(m.err == keep_abi::err::WOULD_BLOCK, "a second RECV naming no slot: {:#x}, want WOULD_BLOCK", m.err);
                keep_rt::ipc_buffer().set_recv_slots(&[ret]);
                let m = recv(Tag::new(0).with_slots(1).recv_nonblocking(), 0);
                m.result().ctx("RECV naming a slot")?;
                ensure!(
                    m.tag.label() == label::EXCEPTION && m.payload == 0xfa && m.words[0] == 14,
                    "RECV naming a slot took label {:#x} payload {:#x} words {:#x?}, want the page fault",
                    m.tag.label(),
                    m.payload,
                    m.words
                );
                Return(ret).reply(Tag::new(reply::STOP), [0; 4]).ctx("reply STOP")?;
                let st = f.process.status().ctx("STATUS")?;
                ensure!(st.state == state::STOPPED, "after STOP the faulting process is {st}");
                ensure!(SEND_ERR.load(SeqCst) == 0, "the plain send ended with {:#x}", SEND_ERR.load(SeqCst));
                invariants()
            })();
            s.kill(&mut cx.slots);
            r
        })();
        f.kill(&mut cx.slots);
        r
    })();
    cx.drop_slots(&[fs, ss, ret]);
    r
}
