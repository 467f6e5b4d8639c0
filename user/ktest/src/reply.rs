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
