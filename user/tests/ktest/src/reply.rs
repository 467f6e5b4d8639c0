//! Nobody waits forever for a reply (a lost reply must not hang a
//! caller, docs/kernel-manual.md): a caller whose return
//! capability goes — deleted, overwritten by the next call, its cappage
//! unmapped, its server's space left without a process — is woken at once
//! with NO_REPLY; a faulting process whose handler loses the fault's return
//! capability stops as FAULTED.  Return capabilities are never copied.

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    ACCOUNT, Error, MEMORY, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, TIMER, err,
    recv, rights, slot, state, ty,
};
use keep_loader::thread;

use crate::cspace::expect_type;
use crate::{Ctx, Cx, TestResult, expect_err};

/// The caller threads' results (u64::MAX while waiting).
static RESULT: [AtomicU64; 2] = [const { AtomicU64::new(u64::MAX) }; 2];
/// Calls the server took (the server thread counts them).
static TAKEN: AtomicU64 = AtomicU64::new(0);

/// Calls words[0] (a SENDER) once and keeps the error in RESULT[words[1]].
fn caller(a: &thread::Args) -> u64 {
    let m = Sender(a.words[0]).call(Tag::new(5), [a.words[1], 0, 0, 0]);
    RESULT[a.words[1] as usize].store(m.err, SeqCst);
    0
}

/// A server that takes calls into slot words[0] and never answers;
/// words[1] calls, then it sleeps until killed.
fn mute_server(a: &thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    for _ in 0..a.words[1] {
        let m = recv(Tag::new(0).with_slots(1), 0);
        if m.err != 0 {
            return 10 + m.err;
        }
        TAKEN.fetch_add(1, SeqCst);
    }
    loop {
        let _ = TIMER.sleep(60_000);
    }
}

/// Waits up to a second for RESULT[i] to be set.
fn result_of(i: usize) -> u64 {
    for _ in 0..100 {
        let r = RESULT[i].load(SeqCst);
        if r != u64::MAX {
            return r;
        }
        let _ = TIMER.sleep(10);
    }
    u64::MAX
}

fn wait_taken(n: u64) -> TestResult {
    for _ in 0..100 {
        if TAKEN.load(SeqCst) >= n {
            return Ok(());
        }
        let _ = TIMER.sleep(10);
    }
    Err(alloc::format!("the server took {} calls, want {n}", TAKEN.load(SeqCst)))
}

/// A mute server taking `calls` calls into `ret`, `calls` callers started
/// against it, then `act` (with the server); each caller's result is checked
/// against `want` (u64::MAX: still waiting).
fn scenario(
    cx: &mut Cx,
    ret: u64,
    calls: u64,
    act: impl FnOnce(&mut Cx, &[keep_abi::Process]) -> TestResult,
    want: [u64; 2],
) -> TestResult {
    RESULT[0].store(u64::MAX, SeqCst);
    RESULT[1].store(u64::MAX, SeqCst);
    TAKEN.store(0, SeqCst);
    let snd = cx.slot()?;
    let srv = thread::spawn(&mut cx.slots, "ktest-mute", 10, mute_server, &[ret, calls])?;
    let mut callers = alloc::vec::Vec::new();
    let r = (|| {
        srv.process.mint(snd, 7, 0).ctx("MINT")?;
        for i in 0..calls {
            callers.push(thread::spawn(&mut cx.slots, "ktest-caller", 10, caller, &[snd, i])?);
            wait_taken(i + 1)?;
        }
        let procs: alloc::vec::Vec<keep_abi::Process> = callers.iter().map(|c| c.process).collect();
        act(cx, &procs)?;
        for i in 0..calls as usize {
            let got = if want[i] == u64::MAX {
                let _ = TIMER.sleep(20);
                RESULT[i].load(SeqCst)
            } else {
                result_of(i)
            };
            let name = |e: u64| if e == u64::MAX { "still waiting" } else { keep_abi::error_name(e) };
            ensure!(got == want[i], "caller {i}: {}, want {}", name(got), name(want[i]));
        }
        Ok(())
    })();
    for c in callers {
        c.kill(&mut cx.slots);
    }
    srv.kill(&mut cx.slots);
    cx.drop_slot(snd);
    r
}

pub fn deleted(cx: &mut Cx) -> TestResult {
    let ret = cx.slot()?;
    let r = scenario(cx, ret, 1, |_, _| SELF_ASPACE.delete_cap(ret).ctx("DELETE_CAP"), [err::NO_REPLY, 0]);
    cx.drop_slot(ret);
    r
}

pub fn overwritten(cx: &mut Cx) -> TestResult {
    let ret = cx.slot()?;
    // The second call lands where the first's return capability is: the
    // first caller hears NO_REPLY, the second still waits for its answer.
    let r = scenario(cx, ret, 2, |_, _| Ok(()), [err::NO_REPLY, u64::MAX]);
    cx.drop_slot(ret);
    r
}

pub fn moved_still_answers(cx: &mut Cx) -> TestResult {
    let [ret, moved] = cx.slots::<2>()?;
    let r = scenario(
        cx,
        ret,
        1,
        |_, _| {
            SELF_ASPACE.move_cap(ret, moved).ctx("MOVE_CAP")?;
            Return(moved).reply(Tag::new(0), [0; 4]).ctx("reply through the moved capability")
        },
        [0, 0],
    );
    cx.drop_slots(&[ret, moved]);
    r
}

pub fn cappage_unmapped(cx: &mut Cx) -> TestResult {
    const AT: u64 = 0x6100_0000;
    let cp = cx.retype(ty::CAPPAGE)?;
    let r = SELF_ASPACE.map_cappage(cp, AT).ctx("MAP_CAPPAGE").and_then(|_| {
        scenario(cx, AT + 3, 1, |_, _| SELF_ASPACE.unmap_cappage(AT).ctx("UNMAP_CAPPAGE"), [err::NO_REPLY, 0])
    });
    let _ = SELF_ASPACE.unmap_cappage(AT);
    let _ = MEMORY.reclaim(cp);
    cx.drop_slot(cp);
    r
}

pub fn never_copied(cx: &mut Cx) -> TestResult {
    let [ret, dest, other, w] = cx.slots::<4>()?;
    let r = scenario(
        cx,
        ret,
        1,
        |cx, _| {
            expect_type(ret, ty::RETURN)?;
            expect_err(SELF_ASPACE.copy_cap(ret, dest, 0), Error::INVALID_ARG, "COPY_CAP")?;
            expect_err(ACCOUNT.create_wrapper(ret, w, rights::ALL), Error::INVALID_ARG, "CREATE_WRAPPER")?;
            ACCOUNT.create_aspace(other).ctx("CREATE_ASPACE")?;
            let cp = cx.retype(ty::CAPPAGE)?;
            let r = keep_abi::Aspace(other)
                .map_cappage(cp, 0)
                .ctx("MAP_CAPPAGE")
                .and_then(|_| {
                    expect_err(keep_abi::Aspace(other).insert_cap(ret, 5, 0), Error::INVALID_ARG, "INSERT_CAP")
                })
                .and_then(|_| {
                    // A message carrying it: refused, nothing sent.
                    let buf = keep_rt::ipc_buffer();
                    buf.set_send_caps(&[(ret, 0)]);
                    let m = Sender(SELF_SND.load(SeqCst)).send(Tag::new(1).with_caps(1).send_nonblocking(), [0; 4]);
                    expect_err(m, Error::INVALID_ARG, "SEND with it")
                });
            let _ = ACCOUNT.destroy(other);
            let _ = MEMORY.reclaim(cp);
            cx.drop_slot(cp);
            r?;
            expect_type(dest, ty::NULL)?;
            expect_type(w, ty::NULL)?;
            Return(ret).reply(Tag::new(0), [0; 4]).ctx("the one copy still answers")
        },
        [0, 0],
    );
    cx.drop_slots(&[ret, dest, other, w]);
    r
}

/// A SENDER to ktest itself (for never_copied's refused message).
static SELF_SND: AtomicU64 = AtomicU64::new(0);

pub fn never_copied_setup(cx: &mut Cx) -> TestResult {
    let s = cx.slot()?;
    SELF_PROCESS.mint(s, 1, 0).ctx("MINT")?;
    SELF_SND.store(s, SeqCst);
    let r = never_copied(cx);
    cx.drop_slot(s);
    r
}

pub fn server_space_gone(cx: &mut Cx) -> TestResult {
    let elf = cx.image.as_ref().and_then(|i| i.find("hello")).ok_or("no hello")?.data;
    let grants = [keep_loader::Grant { src: slot::TIMER, dest: slot::TIMER, rights: 0 }];
    let spec = keep_loader::Spec { name: "ktest-mute", elf, arg0: 4, arg1: 0, grants: &grants, blob: None };
    let child = keep_loader::Loader::new(&mut cx.slots).load(&spec).ctx("load hello")?;
    RESULT[0].store(u64::MAX, SeqCst);
    let snd = cx.slot()?;
    let r = (|| {
        child.process.mint(snd, 9, 0).ctx("MINT")?;
        child.process.start().ctx("START")?;
        let c = thread::spawn(&mut cx.slots, "ktest-caller", 10, caller, &[snd, 0])?;
        let _ = TIMER.sleep(30); // it calls; hello takes the call and sleeps
        let before = RESULT[0].load(SeqCst);
        ACCOUNT.destroy(child.process.0).ctx("DESTROY the server")?;
        let got = result_of(0);
        c.kill(&mut cx.slots);
        ensure!(before == u64::MAX, "the call ended before the server went: {before:#x}");
        let name = if got == u64::MAX { "still waiting" } else { keep_abi::error_name(got) };
        ensure!(got == err::NO_REPLY, "caller: {name}, want NO_REPLY");
        Ok(())
    })();
    let _ = keep_loader::Loader::new(&mut cx.slots).destroy(child);
    cx.drop_slot(snd);
    r
}

/// A fault handler that takes one fault message into words[0] and deletes
/// its return capability.
fn forgetful_handler(a: &thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    let m = recv(Tag::new(0).with_slots(1), 0);
    if m.err != 0 {
        return 1;
    }
    TAKEN.fetch_add(1, SeqCst);
    let _ = SELF_ASPACE.delete_cap(a.words[0]);
    loop {
        let _ = TIMER.sleep(60_000);
    }
}

fn faulter(_: &thread::Args) -> u64 {
    // SAFETY: nothing is mapped at this address: the read faults.
    unsafe { core::ptr::read_volatile(0x0000_6200_0000_0000 as *const u64) }
}

pub fn fault_reply_lost(cx: &mut Cx) -> TestResult {
    TAKEN.store(0, SeqCst);
    let [ret, snd] = cx.slots::<2>()?;
    let h = thread::spawn(&mut cx.slots, "ktest-forget", 10, forgetful_handler, &[ret])?;
    let r = (|| {
        let f = thread::create(&mut cx.slots, "ktest-faulter", 10, faulter, &[])?;
        let r = (|| {
            h.process.mint(snd, 3, 0).ctx("MINT")?;
            f.process.set_fault_handler(snd).ctx("SET_FAULT_HANDLER")?;
            f.process.start().ctx("START")?;
            wait_taken(1)?;
            let mut st = f.process.status().ctx("STATUS")?;
            for _ in 0..50 {
                if st.state != state::BLOCKED {
                    break;
                }
                let _ = TIMER.sleep(10);
                st = f.process.status().ctx("STATUS")?;
            }
            ensure!(st.state == state::FAULTED && st.code == 14, "the faulting process: {st}");
            Ok(())
        })();
        f.kill(&mut cx.slots);
        r
    })();
    h.kill(&mut cx.slots);
    cx.drop_slots(&[ret, snd]);
    r
}

/// A caller exported by its kpager while it waits for a reply whose return
/// capability then goes: it hears NO_REPLY once restored, not never.
pub fn exported_caller(cx: &mut Cx) -> TestResult {
    let [ret, d] = cx.slots::<2>()?;
    let r = scenario(
        cx,
        ret,
        1,
        |_, callers| {
            ACCOUNT.revoke_process(callers[0].0, d).ctx("REVOKE_PROCESS of the caller")?;
            SELF_ASPACE.delete_cap(ret).ctx("DELETE_CAP of its return capability")?;
            let _ = TIMER.sleep(20);
            ensure!(RESULT[0].load(SeqCst) == u64::MAX, "an exported caller ran");
            ACCOUNT.restore_process(d).ctx("RESTORE_PROCESS")
        },
        [err::NO_REPLY, 0],
    );
    cx.drop_slots(&[ret, d]);
    r
}

/// Where the aliasing tests put their return capability's cappage a
/// second time.
#[derive(Clone, Copy, PartialEq)]
enum Alias {
    /// Twice in the server's space.
    Twice,
    /// The same, with the server exported (REVOKE_PROCESS) before it goes.
    TwiceExported,
    /// In a second space too, each destroyed with ACCOUNT.DESTROY.
    Second,
    /// In a second space too, both destroyed by DESTROY_ALL.
    SecondAll,
}

/// Set to the SENDER for late_caller, which waits for it, then calls once.
static LATE_SND: AtomicU64 = AtomicU64::new(0);

fn late_caller(_: &thread::Args) -> u64 {
    let mut snd = LATE_SND.load(SeqCst);
    while snd == 0 {
        let _ = TIMER.sleep(5);
        snd = LATE_SND.load(SeqCst);
    }
    let m = Sender(snd).call(Tag::new(5), [0; 4]);
    RESULT[0].store(m.err, SeqCst);
    0
}

/// Pages and cappages for a loaded program, from the memory pool, with a
/// copy of each capability kept so that they can be reclaimed afterwards.
struct Kept {
    slots: alloc::vec::Vec<u64>,
    used: usize,
}

impl keep_loader::FrameSource for Kept {
    fn retype(&mut self, ty: u64, dest: u64) -> Result<(), Error> {
        let k = *self.slots.get(self.used).ok_or(Error::NO_MEMORY)?;
        MEMORY.retype(ty, k)?;
        self.used += 1;
        SELF_ASPACE.copy_cap(k, dest, 0)
    }
}

/// A pages hello (mode 4: it takes one call into slot 0x20 of its first
/// cappage and never answers) whose first cappage is mapped a second time
/// as `case` says, with a caller waiting on it; then its process and the
/// spaces that map the cappage are destroyed.  check_wake: the caller hears
/// NO_REPLY exactly when no live space maps the cappage any more (or, the
/// cappage mapped only in the server's space, when its last process goes).
/// check_pool: afterwards every page, cappage and account frame goes back
/// and the memory pool has what it had before.
fn aliased_server(cx: &mut Cx, case: Alias, check_wake: bool, check_pool: bool) -> TestResult {
    const KEEP: usize = 400;
    let elf = cx.image.as_ref().and_then(|i| i.find("hello")).ok_or("no hello")?.data;
    let mut keep = alloc::vec::Vec::with_capacity(KEEP);
    for _ in 0..KEEP {
        keep.push(cx.slot()?);
    }
    let [acct, y, snd, d] = cx.slots::<4>()?;
    // Room in the slot pool for the loader, so that it takes no pool frame.
    let spare = cx.slots::<16>()?;
    cx.drop_slots(&spare);
    RESULT[0].store(u64::MAX, SeqCst);
    LATE_SND.store(0, SeqCst);
    let c = thread::spawn(&mut cx.slots, "ktest-caller", 10, late_caller, &[])?;
    let before = MEMORY.free().ctx("FREE")?;
    let mut src = Kept { slots: keep.clone(), used: 0 };
    let mut made: Option<keep_loader::Child> = None;
    let mut exported = false;
    let acc = keep_abi::Account(acct);
    let r = (|| -> TestResult {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        MEMORY.donate(acct, 256).ctx("DONATE")?;
        let grants = [keep_loader::Grant { src: slot::TIMER, dest: slot::TIMER, rights: 0 }];
        let spec = keep_loader::Spec { name: "ktest-mute", elf, arg0: 4, arg1: 0, grants: &grants, blob: None };
        let child = keep_loader::Loader::with_source(&mut cx.slots, acc, &mut src).load(&spec).ctx("load hello")?;
        let (proc_, space) = (child.process, child.aspace);
        made = Some(child);
        let cp = keep[0];
        ensure!(SELF_ASPACE.identify_cap(cp).ctx("IDENTIFY")?.ty == ty::CAPPAGE, "the first frame is not the cappage");
        match case {
            Alias::Twice | Alias::TwiceExported => space.map_cappage(cp, 256).ctx("MAP_CAPPAGE at 256")?,
            Alias::Second | Alias::SecondAll => {
                acc.create_aspace(y).ctx("CREATE_ASPACE")?;
                keep_abi::Aspace(y).map_cappage(cp, 0).ctx("MAP_CAPPAGE in the second space")?
            }
        }
        proc_.mint(snd, 9, 0).ctx("MINT")?;
        proc_.start().ctx("START")?;
        LATE_SND.store(snd, SeqCst);
        let _ = TIMER.sleep(30); // it calls; hello takes the call and sleeps
        ensure!(RESULT[0].load(SeqCst) == u64::MAX, "the call ended before the server went");
        let waiting = |what: &str| -> TestResult {
            let _ = TIMER.sleep(20);
            let got = RESULT[0].load(SeqCst);
            ensure!(!check_wake || got == u64::MAX, "{what}: the caller got {}, want still waiting", keep_abi::error_name(got));
            Ok(())
        };
        let no_reply = |what: &str| -> TestResult {
            let got = result_of(0);
            let name = if got == u64::MAX { "still waiting" } else { keep_abi::error_name(got) };
            ensure!(!check_wake || got == err::NO_REPLY, "{what}: caller {name}, want NO_REPLY");
            Ok(())
        };
        match case {
            Alias::Twice => {
                acc.destroy(proc_.0).ctx("DESTROY the server")?;
                no_reply("the server destroyed, its space the only one mapping the cappage (twice)")?;
                acc.destroy(space.0).ctx("DESTROY its space")?;
            }
            Alias::TwiceExported => {
                acc.revoke_process(proc_.0, d).ctx("REVOKE_PROCESS of the server")?;
                exported = true;
                waiting("the server exported")?;
                acc.destroy(proc_.0).ctx("DESTROY the exported server")?;
                no_reply("the exported server destroyed, its space the only one mapping the cappage (twice)")?;
                acc.destroy(space.0).ctx("DESTROY its space")?;
            }
            Alias::Second => {
                acc.destroy(proc_.0).ctx("DESTROY the server")?;
                waiting("the server destroyed, a second space maps the cappage")?;
                acc.destroy(space.0).ctx("DESTROY its space")?;
                waiting("its space destroyed, a second space maps the cappage")?;
                acc.destroy(y).ctx("DESTROY the second space")?;
                no_reply("the second space destroyed too")?;
            }
            Alias::SecondAll => {
                acc.destroy_all(slot::MEMORY).ctx("DESTROY_ALL")?;
                no_reply("DESTROY_ALL of the account with both spaces")?;
                return Ok(());
            }
        }
        // Every object and table went back to the account but the page of
        // process numbers it bought (kept for its next process).
        let (_, used) = acc.info().ctx("ACCOUNT.INFO")?;
        ensure!(!check_pool || used == 1, "the account has {used} frames in use after its objects went, want 1");
        Ok(())
    })();
    c.kill(&mut cx.slots);
    let _ = acc.destroy_all(slot::MEMORY);
    if let Some(child) = made {
        cx.drop_slots(&[child.process.0, child.aspace.0]);
    }
    let mut r2 = Ok(());
    if exported {
        if let Err(e) = MEMORY.reclaim(d) {
            r2 = Err(alloc::format!("RECLAIM of the export's page: {e}"));
        }
    }
    for (i, &k) in keep[..src.used].iter().enumerate() {
        if let Err(e) = MEMORY.reclaim(k) {
            if r2.is_ok() {
                r2 = Err(alloc::format!("RECLAIM of the program's frame {i}: {e}"));
            }
        }
    }
    let after = MEMORY.free();
    cx.drop_slots(&keep);
    cx.drop_slots(&[acct, y, snd, d]);
    r?;
    if check_pool {
        r2?;
        let after = after.ctx("FREE")?;
        ensure!(after == before, "the memory pool has {after} frames, {before} before ({} short)", before as i64 - after as i64);
    }
    Ok(())
}

const ALIAS_CASES: [(Alias, &str); 4] = [
    (Alias::Twice, "mapped twice"),
    (Alias::TwiceExported, "mapped twice, server exported"),
    (Alias::Second, "in a second space"),
    (Alias::SecondAll, "in a second space, DESTROY_ALL"),
];

/// Every case runs; the failures are reported together.
fn all_cases(cx: &mut Cx, check_wake: bool, check_pool: bool) -> TestResult {
    let mut failed = alloc::vec::Vec::new();
    for (case, what) in ALIAS_CASES {
        if let Err(e) = aliased_server(cx, case, check_wake, check_pool) {
            failed.push(alloc::format!("{what}: {e}"));
        }
    }
    if failed.is_empty() { Ok(()) } else { Err(failed.join("; ")) }
}

pub fn aliased_cappage_wakes(cx: &mut Cx) -> TestResult {
    all_cases(cx, true, false)
}

pub fn aliased_cappage_pool(cx: &mut Cx) -> TestResult {
    all_cases(cx, false, true)
}
