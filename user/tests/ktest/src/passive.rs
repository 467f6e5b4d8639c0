//! Passive servers: PROCESS.SET_PASSIVE, and a passive server that runs
//! on its caller's budget while it serves the call, through nested calls
//! to further passive servers, until the reply, the caller's end or the
//! loss of the call's return capability.  The servers here spin on a call
//! at priority 8, above `low` (5) and below ktest (10), so that a server
//! that was not held to its caller's budget fails a check instead of
//! hanging the suite.  Nothing asserts a time: only whose budget is spent
//! (the ran-out counts), that consumed time stays within the budget, and
//! that the lower-priority process still runs.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{Error, KERNEL, Process, Return, SELF_ASPACE, Sender, Tag, TIMER, err, layout, recv, rights};
use keep_loader::thread::{self, Thread};

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

const SERVER_PRIO: u64 = 8;
const LOW_PRIO: u64 = 5;

static SPINS: AtomicU64 = AtomicU64::new(0);
static LOW: AtomicU64 = AtomicU64::new(0);
/// Calls the spinning server has taken, and how many it may answer.
static SERVED: AtomicU64 = AtomicU64::new(0);
static STOP: AtomicU64 = AtomicU64::new(0);
/// The callers' results (u64::MAX while waiting) and their go-ahead.
static RESULT: [AtomicU64; 2] = [const { AtomicU64::new(u64::MAX) }; 2];
static GO: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

fn reset() {
    for a in [&SPINS, &LOW, &SERVED, &STOP] {
        a.store(0, SeqCst);
    }
    RESULT.iter().for_each(|r| r.store(u64::MAX, SeqCst));
    GO.iter().for_each(|g| g.store(0, SeqCst));
}

fn idle(_: &thread::Args) -> u64 {
    0
}

fn low(_: &thread::Args) -> u64 {
    loop {
        LOW.fetch_add(1, SeqCst);
    }
}

/// Takes calls into slot words[0]; the n-th call spins until STOP reaches
/// n, then is answered.
fn spin_server(a: &thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 {
            return 10 + m.err;
        }
        let n = SERVED.fetch_add(1, SeqCst) + 1;
        while STOP.load(SeqCst) < n {
            SPINS.fetch_add(1, SeqCst);
        }
        m = Return(a.words[0]).reply_recv(Tag::new(0).with_slots(1), [n, 0, 0, 0], 0);
    }
}

/// Takes calls into slot words[0] and passes each on to the SENDER
/// words[1], answering with that call's error.
fn relay(a: &thread::Args) -> u64 {
    a.buf().set_recv_slots(&[a.words[0]]);
    let mut m = recv(Tag::new(0).with_slots(1), 0);
    loop {
        if m.err != 0 {
            return 10 + m.err;
        }
        let r = Sender(a.words[1]).call(Tag::new(1), [0; 4]);
        m = Return(a.words[0]).reply_recv(Tag::new(0).with_slots(1), [r.err, 0, 0, 0], 0);
    }
}

/// Waits for GO[words[1]], calls the SENDER words[0] once, keeps the error
/// in RESULT[words[1]], then sleeps until killed.
fn client(a: &thread::Args) -> u64 {
    let i = a.words[1] as usize;
    while GO[i].load(SeqCst) == 0 {
        let _ = TIMER.sleep(5);
    }
    let m = Sender(a.words[0]).call(Tag::new(5), [0; 4]);
    RESULT[i].store(m.err, SeqCst);
    loop {
        let _ = TIMER.sleep(60_000);
    }
}

/// What a test made, destroyed at its end whatever happened.
struct Rig {
    threads: Vec<Thread>,
    slots: Vec<u64>,
}

impl Rig {
    fn new() -> Self {
        Rig { threads: Vec::new(), slots: Vec::new() }
    }

    fn slot(&mut self, cx: &mut Cx) -> Result<u64, String> {
        let s = cx.slot()?;
        self.slots.push(s);
        Ok(s)
    }

    /// A thread, made and started (passive first, or with a budget first).
    fn thread(&mut self, cx: &mut Cx, name: &str, prio: u64, body: thread::Body, words: &[u64], passive: bool,
              budget: Option<(u64, u64)>) -> Result<Process, String> {
        let t = thread::create(&mut cx.slots, name, prio, body, words)?;
        let p = t.process;
        self.threads.push(t);
        if passive {
            let was = p.set_passive(1).ctx("SET_PASSIVE(1)")?;
            ensure!(was == 0, "a new process was passive already ({was})");
        }
        if let Some((b, per)) = budget {
            p.set_budget(b, per).ctx("SET_BUDGET")?;
        }
        p.start().ctx("START")?;
        Ok(p)
    }

    /// A passive spinning server and a SENDER to it; (its process, the
    /// sender, the slot its calls' return capabilities go to).
    fn spinner(&mut self, cx: &mut Cx) -> Result<(Process, u64, u64), String> {
        let ret = self.slot(cx)?;
        let snd = self.slot(cx)?;
        let s = self.thread(cx, "ktest-pspin", SERVER_PRIO, spin_server, &[ret], true, None)?;
        s.mint(snd, 1, 0).ctx("MINT")?;
        Ok((s, snd, ret))
    }

    fn kill_thread(&mut self, cx: &mut Cx, p: Process) {
        if let Some(i) = self.threads.iter().position(|t| t.process.0 == p.0) {
            self.threads.swap_remove(i).kill(&mut cx.slots);
        }
    }

    fn end(self, cx: &mut Cx) {
        for t in self.threads {
            t.kill(&mut cx.slots);
        }
        for s in self.slots {
            cx.drop_slot(s);
        }
    }
}

/// Runs f with a fresh rig and `low` running, then destroys everything.
fn rigged(cx: &mut Cx, f: impl FnOnce(&mut Cx, &mut Rig) -> TestResult) -> TestResult {
    reset();
    let mut rig = Rig::new();
    let r = rig
        .thread(cx, "ktest-plow", LOW_PRIO, low, &[], false, None)
        .and_then(|_| f(cx, &mut rig));
    rig.end(cx);
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    r?;
    ensure!(bad == 0, "{bad} invariants broken once the test's processes were destroyed");
    Ok(())
}

type Budget = (u64, u64, u64, u64);

/// Sleeps 10 ms at a time until `done` holds of p's BUDGET, for at most
/// 30 s; every reading within its budget (plus BUDGET_OVERRUN_US).
fn watch(p: Process, mut done: impl FnMut(Budget) -> bool) -> Result<Budget, String> {
    let t0 = TIMER.now_ms().ctx("NOW")?;
    loop {
        TIMER.sleep(10).ctx("SLEEP")?;
        let b = p.budget().ctx("BUDGET")?;
        ensure!(b.2 <= b.0 + layout::BUDGET_OVERRUN_US, "consumed {} us of a {} us budget", b.2, b.0);
        if done(b) {
            return Ok(b);
        }
        ensure!(
            TIMER.now_ms().ctx("NOW")? < t0 + 30_000,
            "not after 30 s: the caller's BUDGET {b:?}, {} spins, low ran {} times",
            SPINS.load(SeqCst),
            LOW.load(SeqCst)
        );
    }
}

fn invariants(what: &str) -> TestResult {
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} invariants broken {what}");
    Ok(())
}

/// Waits up to 2 s for RESULT[i].
fn result_of(i: usize) -> u64 {
    for _ in 0..200 {
        let r = RESULT[i].load(SeqCst);
        if r != u64::MAX {
            return r;
        }
        let _ = TIMER.sleep(10);
    }
    u64::MAX
}

fn no_budget(p: Process, who: &str) -> TestResult {
    let b = p.budget().ctx("BUDGET")?;
    ensure!(b == (0, 0, 0, 0), "{who} has a budget of its own now: {b:?}");
    Ok(())
}

/// A giver with a budget: words[0] a passive process.  Exit 0 if every
/// answer was right, else the number of the first wrong one.
fn giver(a: &thread::Args) -> u64 {
    let t = Process(a.words[0]);
    if t.set_passive(0) != Err(Error::NO_RIGHTS) {
        return 1; // a caller with a budget lifts no bound
    }
    if t.set_passive(2) != Err(Error::INVALID_ARG) {
        return 2;
    }
    if t.set_passive(1) != Ok(1) {
        return 3; // a refusal changed it, or turning it on was refused
    }
    if a.process.set_passive(0) != Err(Error::NO_RIGHTS) {
        return 4; // nor of itself
    }
    0
}

pub fn errors(cx: &mut Cx) -> TestResult {
    let t = thread::create(&mut cx.slots, "ktest-passive", 5, idle, &[])?;
    let r = errors_on(cx, t.process);
    t.kill(&mut cx.slots);
    r
}

fn errors_on(cx: &mut Cx, p: Process) -> TestResult {
    for bad in [2, 3, 0x100, 1 << 32, u64::MAX] {
        expect_err(p.set_passive(bad), Error::INVALID_ARG, &format!("SET_PASSIVE({bad:#x})"))?;
    }
    ensure!(p.set_passive(1).ctx("SET_PASSIVE(1)")? == 0, "a refusal made it passive");
    for bad in [2, u64::MAX] {
        expect_err(p.set_passive(bad), Error::INVALID_ARG, &format!("SET_PASSIVE({bad:#x})"))?;
    }
    ensure!(p.set_passive(1).ctx("SET_PASSIVE(1)")? == 1, "a refusal made it not passive");
    with_slots(cx, |_, [r]| {
        SELF_ASPACE.copy_cap(p.0, r, rights::READ).ctx("COPY_CAP(READ)")?;
        expect_err(Process(r).set_passive(0), Error::NO_RIGHTS, "SET_PASSIVE without WRITE")?;
        Ok(())
    })?;
    ensure!(p.set_passive(1).ctx("SET_PASSIVE(1)")? == 1, "SET_PASSIVE without WRITE changed it");
    let g = thread::create(&mut cx.slots, "ktest-pgiver", 5, giver, &[p.0])?;
    let r = (|| {
        g.process.set_budget(5000, 10000).ctx("SET_BUDGET(giver)")?;
        g.process.start().ctx("START(giver)")
    })();
    if let Err(e) = r {
        g.kill(&mut cx.slots);
        return Err(e);
    }
    let st = g.join(&mut cx.slots)?;
    ensure!(st.code == 0, "the giver: {st} (its step {} was answered wrongly)", st.code);
    ensure!(p.set_passive(0).ctx("SET_PASSIVE(0)")? == 1, "the giver's refusals changed it");
    ensure!(p.set_passive(0).ctx("SET_PASSIVE(0)")? == 0, "SET_PASSIVE(0) left it passive");
    no_budget(p, "the target")
}

pub fn on_client_time(cx: &mut Cx) -> TestResult {
    rigged(cx, |cx, rig| {
        let (s, snd, _) = rig.spinner(cx)?;
        let c = rig.thread(cx, "ktest-pclient", SERVER_PRIO, client, &[snd, 0], false, Some((2000, 20000)))?;
        GO[0].store(1, SeqCst);
        // ktest runs at all while the server spins, and low (below the
        // server) runs: the server was parked with its caller's budget.
        let first = watch(c, |b| b.3 >= 1 && SPINS.load(SeqCst) > 0)?;
        let (spins, lows) = (SPINS.load(SeqCst), LOW.load(SeqCst));
        let last = watch(c, |b| b.3 >= first.3 + 5 && SPINS.load(SeqCst) > spins && LOW.load(SeqCst) > lows)?;
        ensure!((last.0, last.1) == (2000, 20000), "the caller's BUDGET {last:?}");
        ensure!(RESULT[0].load(SeqCst) == u64::MAX, "the call was answered: {}", RESULT[0].load(SeqCst));
        no_budget(s, "the server")?;
        invariants("while the server spins on its caller's time")
    })
}

pub fn two_clients(cx: &mut Cx) -> TestResult {
    rigged(cx, |cx, rig| {
        let (s, snd, _) = rig.spinner(cx)?;
        let a = rig.thread(cx, "ktest-pclient-a", SERVER_PRIO, client, &[snd, 0], false, Some((1000, 10000)))?;
        let b = rig.thread(cx, "ktest-pclient-b", SERVER_PRIO, client, &[snd, 1], false, Some((3000, 10000)))?;
        // a's call: its budget is spent, b's (which only sleeps) never.
        GO[0].store(1, SeqCst);
        watch(a, |x| x.3 >= 3)?;
        let bb = b.budget().ctx("BUDGET(b)")?;
        ensure!(bb.3 == 0, "b ran out of budget while the server served a: {bb:?}");
        STOP.store(1, SeqCst);
        ensure!(result_of(0) == err::OK, "a's call: {}", keep_abi::error_name(result_of(0)));
        let a_done = a.budget().ctx("BUDGET(a)")?.3;
        // b's call: the reverse.
        let spins = SPINS.load(SeqCst);
        GO[1].store(1, SeqCst);
        let last = watch(b, |x| x.3 >= 3 && SPINS.load(SeqCst) > spins)?;
        ensure!((last.0, last.1) == (3000, 10000), "b's BUDGET {last:?}");
        let ab = a.budget().ctx("BUDGET(a)")?;
        ensure!(ab.3 == a_done, "a ran out {} more times while the server served b", ab.3 - a_done);
        ensure!(RESULT[1].load(SeqCst) == u64::MAX, "b's call was answered");
        STOP.store(2, SeqCst);
        ensure!(result_of(1) == err::OK, "b's call: {}", keep_abi::error_name(result_of(1)));
        no_budget(s, "the server")
    })
}

pub fn nested(cx: &mut Cx) -> TestResult {
    rigged(cx, |cx, rig| {
        let (s2, snd2, _) = rig.spinner(cx)?;
        let ret1 = rig.slot(cx)?;
        let snd1 = rig.slot(cx)?;
        let s1 = rig.thread(cx, "ktest-prelay", SERVER_PRIO, relay, &[ret1, snd2], true, None)?;
        s1.mint(snd1, 2, 0).ctx("MINT")?;
        let c = rig.thread(cx, "ktest-pclient", SERVER_PRIO, client, &[snd1, 0], false, Some((2000, 20000)))?;
        GO[0].store(1, SeqCst);
        // The innermost server spins on the outermost caller's budget.
        let first = watch(c, |b| b.3 >= 1 && SPINS.load(SeqCst) > 0)?;
        let (spins, lows) = (SPINS.load(SeqCst), LOW.load(SeqCst));
        watch(c, |b| b.3 >= first.3 + 3 && SPINS.load(SeqCst) > spins && LOW.load(SeqCst) > lows)?;
        no_budget(s1, "the relay")?;
        no_budget(s2, "the inner server")?;
        invariants("during a nested call")?;
        STOP.store(1, SeqCst);
        ensure!(result_of(0) == err::OK, "the nested call: {}", keep_abi::error_name(result_of(0)));
        Ok(())
    })
}

/// A budgeted caller whose call the spinning server serves, once the
/// caller has run out at least once: f(cx, rig, server, caller, return slot).
fn mid_call(cx: &mut Cx, f: impl FnOnce(&mut Cx, &mut Rig, Process, Process, u64) -> TestResult) -> TestResult {
    rigged(cx, |cx, rig| {
        let (s, snd, ret) = rig.spinner(cx)?;
        let c = rig.thread(cx, "ktest-pclient", SERVER_PRIO, client, &[snd, 0], false, Some((2000, 20000)))?;
        GO[0].store(1, SeqCst);
        watch(c, |b| b.3 >= 1 && SPINS.load(SeqCst) > 0)?;
        f(cx, rig, s, c, ret)
    })
}

/// The server runs on (now on its own terms) for 100 ms of ktest's sleeps.
fn server_goes_on() -> TestResult {
    let spins = SPINS.load(SeqCst);
    for _ in 0..1000 {
        TIMER.sleep(10).ctx("SLEEP")?;
        if SPINS.load(SeqCst) > spins {
            return Ok(());
        }
    }
    Err("the server no longer runs".into())
}

pub fn caller_destroyed(cx: &mut Cx) -> TestResult {
    mid_call(cx, |cx, rig, s, c, _| {
        rig.kill_thread(cx, c);
        invariants("after destroying the caller mid-call")?;
        server_goes_on()?;
        no_budget(s, "the server")?;
        invariants("with the server running on after its caller's end")
    })
}

pub fn server_destroyed(cx: &mut Cx) -> TestResult {
    mid_call(cx, |cx, rig, s, c, ret| {
        rig.kill_thread(cx, s);
        invariants("after destroying the server mid-call")?;
        // The return capability lives on in the shared space: the caller
        // waits, and its budget is spent no more.
        TIMER.sleep(50).ctx("SLEEP")?;
        ensure!(RESULT[0].load(SeqCst) == u64::MAX, "the caller woke: {}", RESULT[0].load(SeqCst));
        let n = c.budget().ctx("BUDGET")?.3;
        TIMER.sleep(100).ctx("SLEEP")?;
        let m = c.budget().ctx("BUDGET")?.3;
        ensure!(m == n, "the caller ran out {} more times with its server gone", m - n);
        SELF_ASPACE.delete_cap(ret).ctx("DELETE_CAP(return)")?;
        ensure!(result_of(0) == err::NO_REPLY, "the caller: {}", keep_abi::error_name(result_of(0)));
        invariants("after the return capability went")
    })
}

pub fn reply_revoked(cx: &mut Cx) -> TestResult {
    mid_call(cx, |_, _, s, c, ret| {
        SELF_ASPACE.delete_cap(ret).ctx("DELETE_CAP(return)")?;
        ensure!(result_of(0) == err::NO_REPLY, "the caller: {}", keep_abi::error_name(result_of(0)));
        invariants("after revoking the return capability mid-call")?;
        // The server spins on, no longer on the caller's budget.
        let n = c.budget().ctx("BUDGET")?.3;
        server_goes_on()?;
        TIMER.sleep(100).ctx("SLEEP")?;
        server_goes_on()?;
        let m = c.budget().ctx("BUDGET")?.3;
        ensure!(m == n, "the caller ran out {} more times after its call ended", m - n);
        no_budget(s, "the server")
    })
}
