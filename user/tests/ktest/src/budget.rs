//! Budgets: PROCESS.SET_BUDGET and BUDGET, the parking of a process that
//! has spent its budget, and sleeps under the one-shot timer.  Nothing
//! here asserts a time: only what the kernel guarantees (a spinner with a
//! budget at the highest priority still lets lower ones run, it runs again
//! in later periods, what it has consumed stays within its budget).

use alloc::format;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{Error, KERNEL, Process, SELF_ASPACE, SELF_PROCESS, TIMER, layout, rights};
use keep_loader::thread;

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};

fn idle(_: &thread::Args) -> u64 {
    0
}

/// The limits of abi/keep.toml, each broken once.
const BAD: [(u64, u64); 12] = [
    (0, 1000),
    (1000, 0),
    (layout::BUDGET_MIN_US - 1, 1000),
    (layout::BUDGET_MIN_US, layout::BUDGET_MIN_PERIOD_US - 1),
    (100, layout::BUDGET_MAX_PERIOD_US + 1),
    (2001, 2000),
    (u64::MAX, u64::MAX),
    (100, u64::MAX),
    (u64::MAX, 1000),
    ((1 << 32) | 100, 1000),
    (100, (1 << 32) | 1000),
    (1, 1),
];

pub fn errors(cx: &mut Cx) -> TestResult {
    let t = thread::create(&mut cx.slots, "ktest-budget", 5, idle, &[])?;
    let r = errors_on(cx, t.process);
    t.kill(&mut cx.slots);
    r
}

fn errors_on(cx: &mut Cx, p: Process) -> TestResult {
    ensure!(p.budget().ctx("BUDGET")? == (0, 0, 0, 0), "a new process has a budget: {:?}", p.budget());
    p.set_budget(2000, 10000).ctx("SET_BUDGET(2000/10000)")?;
    let want = (2000, 10000, 0, 0);
    ensure!(p.budget().ctx("BUDGET")? == want, "BUDGET {:?}, want {want:?}", p.budget());
    for (b, per) in BAD {
        expect_err(p.set_budget(b, per), Error::INVALID_ARG, &format!("SET_BUDGET({b}/{per})"))?;
        let got = p.budget().ctx("BUDGET")?;
        ensure!(got == want, "after SET_BUDGET({b}/{per}): {got:?}, want {want:?}");
    }
    with_slots(cx, |_, [r, w]| {
        SELF_ASPACE.copy_cap(p.0, r, rights::READ).ctx("COPY_CAP(READ)")?;
        SELF_ASPACE.copy_cap(p.0, w, rights::WRITE).ctx("COPY_CAP(WRITE)")?;
        expect_err(Process(r).set_budget(1000, 10000), Error::NO_RIGHTS, "SET_BUDGET without WRITE")?;
        expect_err(Process(w).budget(), Error::NO_RIGHTS, "BUDGET without READ")?;
        let got = Process(r).budget().ctx("BUDGET")?;
        ensure!(got == want, "after the refusals: {got:?}, want {want:?}");
        Ok(())
    })
}

/// A giver with a budget of 5000/10000 (half the CPU): words[0] is the
/// slot of a process with 2000/10000.  Exit 0 if every answer was right,
/// else the number of the first wrong one.
fn giver(a: &thread::Args) -> u64 {
    let target = Process(a.words[0]);
    let me = a.process;
    let steps: [(Process, u64, u64, Option<Error>); 7] = [
        (target, 6000, 10000, Some(Error::NO_RIGHTS)), // more than its share
        (target, 0, 0, Some(Error::NO_RIGHTS)),        // no budget at all
        (target, 5001, 10000, Some(Error::NO_RIGHTS)),
        (me, 10000, 10000, Some(Error::NO_RIGHTS)),    // nor to itself
        (me, 0, 0, Some(Error::NO_RIGHTS)),
        (target, 1000, 2000, None), // its own share exactly
        (target, 1000, 5000, None),
    ];
    for (i, (p, b, per, want)) in steps.into_iter().enumerate() {
        let got = p.set_budget(b, per).err();
        if got != want {
            return 1 + i as u64;
        }
        if want.is_some() && target.budget() != Ok((2000, 10000, 0, 0)) && i < 5 {
            return 100 + i as u64; // a refusal changed something
        }
    }
    0
}

pub fn share(cx: &mut Cx) -> TestResult {
    let t = thread::create(&mut cx.slots, "ktest-target", 5, idle, &[])?;
    let r = share_with(cx, t.process);
    t.kill(&mut cx.slots);
    r
}

fn share_with(cx: &mut Cx, target: Process) -> TestResult {
    target.set_budget(2000, 10000).ctx("SET_BUDGET(target)")?;
    let g = thread::create(&mut cx.slots, "ktest-giver", 5, giver, &[target.0])?;
    if let Err(e) = g.process.set_budget(5000, 10000).and_then(|_| g.process.start()) {
        g.kill(&mut cx.slots);
        return Err(format!("the giver's SET_BUDGET or START: {e}"));
    }
    let st = g.join(&mut cx.slots)?;
    ensure!(st.code == 0, "the giver: {st} (its step {} was answered wrongly)", st.code);
    let got = target.budget().ctx("BUDGET")?;
    ensure!(got == (1000, 5000, 0, 0), "the target's budget {got:?}, want (1000, 5000, 0, 0)");
    Ok(())
}

static SPINS: AtomicU64 = AtomicU64::new(0);
static LOW: AtomicU64 = AtomicU64::new(0);

fn spin(_: &thread::Args) -> u64 {
    loop {
        SPINS.fetch_add(1, SeqCst);
    }
}

fn low(_: &thread::Args) -> u64 {
    loop {
        LOW.fetch_add(1, SeqCst);
    }
}

/// A spinner at `prio` with `budget`/`period`, started; f runs with it,
/// then it is destroyed (whatever f found).
fn with_spinner(cx: &mut Cx, prio: u64, budget: u64, period: u64, f: impl FnOnce(&mut Cx, Process) -> TestResult) -> TestResult {
    SPINS.store(0, SeqCst);
    let s = thread::create(&mut cx.slots, "ktest-spin", prio, spin, &[])?;
    if let Err(e) = s.process.set_budget(budget, period).and_then(|_| s.process.start()) {
        s.kill(&mut cx.slots);
        return Err(format!("the spinner's SET_BUDGET({budget}/{period}) or START: {e}"));
    }
    let r = f(cx, s.process);
    s.kill(&mut cx.slots);
    r
}

/// Sleeps 10 ms at a time until `done` (BUDGET's four results) holds, for
/// at most 30 s; consumed never above the budget plus BUDGET_OVERRUN_US.
fn watch(p: Process, mut done: impl FnMut((u64, u64, u64, u64)) -> bool) -> Result<(u64, u64, u64, u64), alloc::string::String> {
    let t0 = TIMER.now_ms().ctx("NOW")?;
    loop {
        TIMER.sleep(10).ctx("SLEEP")?;
        let b = p.budget().ctx("BUDGET")?;
        ensure!(b.2 <= b.0 + layout::BUDGET_OVERRUN_US, "consumed {} us of a {} us budget", b.2, b.0);
        if done(b) {
            return Ok(b);
        }
        ensure!(TIMER.now_ms().ctx("NOW")? < t0 + 30_000, "not after 30 s: BUDGET {b:?}, {} spins", SPINS.load(SeqCst));
    }
}

pub fn spinner(cx: &mut Cx) -> TestResult {
    LOW.store(0, SeqCst);
    // Below ktest (10): it runs only while ktest sleeps and the spinner is parked.
    let l = thread::spawn(&mut cx.slots, "ktest-low", 5, low, &[])?;
    let r = with_spinner(cx, 31, 2000, 20000, |_, p| {
        // ktest runs again at all: the spinner, at the highest priority, was
        // parked.  On a slow host its first budget may go on starting up
        // before its loop counts, so it has run once it has counted in some
        // period.
        let first = watch(p, |b| b.3 >= 1 && SPINS.load(SeqCst) > 0)?;
        let spins = SPINS.load(SeqCst);
        let lows = LOW.load(SeqCst);
        // It gets its budget again in later periods, and the low one goes on.
        let last = watch(p, |b| b.3 >= first.3 + 5 && SPINS.load(SeqCst) > spins && LOW.load(SeqCst) > lows)?;
        ensure!((last.0, last.1) == (2000, 20000), "BUDGET {last:?}");
        Ok(())
    });
    l.kill(&mut cx.slots);
    r
}

pub fn remove(cx: &mut Cx) -> TestResult {
    // Below ktest: it spins while ktest sleeps, parked once its budget is spent.
    with_spinner(cx, 5, 1000, 10000, |_, p| {
        watch(p, |b| b.3 >= 2)?;
        p.set_budget(0, 0).ctx("SET_BUDGET(0/0)")?;
        ensure!(p.budget().ctx("BUDGET")? == (0, 0, 0, 0), "BUDGET after removal: {:?}", p.budget());
        let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
        ensure!(bad == 0, "{bad} invariants broken after removing a budget");
        // Parked or not when it lost its budget, it runs again, and never runs out.
        let spins = SPINS.load(SeqCst);
        watch(p, |_| SPINS.load(SeqCst) > spins)?;
        let b = p.budget().ctx("BUDGET")?;
        ensure!(b == (0, 0, 0, 0), "BUDGET {b:?}");
        Ok(())
    })
}

pub fn destroyed(cx: &mut Cx) -> TestResult {
    // Whenever ktest runs, the spinner above it is parked: destroyed there.
    with_spinner(cx, 31, 1000, 10000, |_, p| {
        watch(p, |b| b.3 >= 1)?;
        Ok(())
    })?;
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} invariants broken after destroying a parked process");
    // The timer goes on: the parked list's end is gone with it.
    TIMER.sleep(20).ctx("SLEEP")?;
    // A budget given while it runs, then destroyed: the same.
    with_spinner(cx, 5, 5000, 10000, |_, _| TIMER.sleep(15).ctx("SLEEP"))?;
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} invariants broken after destroying a budgeted process");
    Ok(())
}

/// words[0]: ms to sleep, words[1]: times.
fn sleeper(a: &thread::Args) -> u64 {
    for _ in 0..a.words[1] {
        let t0 = TIMER.now_ms().unwrap_or(0);
        if TIMER.sleep(a.words[0]).is_err() {
            return 1;
        }
        if TIMER.now_ms().unwrap_or(0) < t0 + a.words[0] {
            return 2;
        }
    }
    0
}

pub fn sleepers(cx: &mut Cx) -> TestResult {
    // Deadlines out of order, one sleeper with a budget: every one wakes.
    let mut ts = alloc::vec::Vec::new();
    for (ms, n, budget) in [(30, 2, false), (7, 5, false), (20, 3, true), (1, 20, false)] {
        let t = match thread::create(&mut cx.slots, "ktest-sleeper", 12, sleeper, &[ms, n]) {
            Ok(t) => t,
            Err(e) => {
                ts.into_iter().for_each(|t: thread::Thread| t.kill(&mut cx.slots));
                return Err(e);
            }
        };
        let r = if budget { t.process.set_budget(1000, 10000) } else { Ok(()) };
        if let Err(e) = r.and_then(|_| t.process.start()) {
            t.kill(&mut cx.slots);
            ts.into_iter().for_each(|t: thread::Thread| t.kill(&mut cx.slots));
            return Err(format!("SET_BUDGET or START: {e}"));
        }
        ts.push(t);
    }
    TIMER.sleep(3).ctx("SLEEP")?;
    let mut r = Ok(());
    for (i, t) in ts.into_iter().enumerate() {
        match t.join(&mut cx.slots) {
            Ok(st) if st.code == 0 => {}
            Ok(st) => r = r.and(Err(format!("sleeper {i}: {st}"))),
            Err(e) => r = r.and(Err(e)),
        }
    }
    r
}

static PEER: [AtomicU64; 2] = [const { AtomicU64::new(0) }; 2];

fn peer(a: &thread::Args) -> u64 {
    let me = &PEER[a.words[0] as usize];
    loop {
        me.fetch_add(1, SeqCst);
    }
}

pub fn round_robin(cx: &mut Cx) -> TestResult {
    // Two spinners at one priority, below ktest: neither enters the kernel,
    // so only the slice's timer interrupt gives the other its turn.
    PEER.iter().for_each(|c| c.store(0, SeqCst));
    let a = thread::spawn(&mut cx.slots, "ktest-peer-a", 5, peer, &[0])?;
    let b = match thread::spawn(&mut cx.slots, "ktest-peer-b", 5, peer, &[1]) {
        Ok(b) => b,
        Err(e) => {
            a.kill(&mut cx.slots);
            return Err(e);
        }
    };
    let r = (|| -> TestResult {
        let t0 = TIMER.now_ms().ctx("NOW")?;
        let mut seen = [0u64; 2];
        let mut turns = [0u64; 2];
        // Each must make progress again after the other has, three times over.
        while turns.iter().any(|&t| t < 3) {
            TIMER.sleep(10).ctx("SLEEP")?;
            for i in 0..2 {
                let n = PEER[i].load(SeqCst);
                if n > seen[i] {
                    seen[i] = n;
                    turns[i] += 1;
                }
            }
            ensure!(TIMER.now_ms().ctx("NOW")? < t0 + 30_000, "after 30 s the spinners' turns are {turns:?}");
        }
        Ok(())
    })();
    a.kill(&mut cx.slots);
    b.kill(&mut cx.slots);
    r
}

/// PROCESS.CPU_TIME: none for a process not yet started; a spinner's grows
/// while it runs, never past the time since it was made, and stands still
/// while it is stopped; the caller's own grows with what it computes; a
/// capability without READ is refused.
pub fn cpu_time(cx: &mut Cx) -> TestResult {
    // Below ktest (10): it spins while ktest sleeps.
    let s = thread::create(&mut cx.slots, "ktest-spin", 5, spin, &[])?;
    let t0 = TIMER.now_ms().ctx("NOW")?;
    let r = cpu_time_of(cx, s.process, t0);
    s.kill(&mut cx.slots);
    r
}

fn cpu_time_of(cx: &mut Cx, p: Process, t0: u64) -> TestResult {
    ensure!(p.cpu_time().ctx("CPU_TIME")? == 0, "a process not started has run {:?} ns", p.cpu_time());
    SPINS.store(0, SeqCst);
    p.start().ctx("START")?;
    let mut last = 0;
    for i in 0..5 {
        let spins = SPINS.load(SeqCst);
        let t = TIMER.now_ms().ctx("NOW")?;
        while SPINS.load(SeqCst) == spins {
            TIMER.sleep(10).ctx("SLEEP")?;
            ensure!(TIMER.now_ms().ctx("NOW")? < t + 30_000, "the spinner did not run in 30 s");
        }
        let ns = p.cpu_time().ctx("CPU_TIME")?;
        let since = (TIMER.now_ms().ctx("NOW")? + 1 - t0) * 1_000_000;
        ensure!(ns > last, "round {i}: the spinner ran and its CPU time went from {last} to {ns} ns");
        ensure!(ns <= since, "round {i}: {ns} ns of CPU time in the {since} ns since the spinner was made");
        last = ns;
    }
    p.stop().ctx("STOP")?;
    let stopped = p.cpu_time().ctx("CPU_TIME")?;
    TIMER.sleep(30).ctx("SLEEP")?;
    let later = p.cpu_time().ctx("CPU_TIME")?;
    ensure!(later == stopped, "a stopped process's CPU time went from {stopped} to {later} ns");
    // The caller's own, read while it runs.
    let mine = SELF_PROCESS.cpu_time().ctx("CPU_TIME(self)")?;
    let mut x = 1u64;
    for _ in 0..100_000 {
        x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
    }
    let after = SELF_PROCESS.cpu_time().ctx("CPU_TIME(self)")?;
    ensure!(after > mine, "computing did not advance the caller's CPU time ({mine} then {after} ns)");
    with_slots(cx, |_, [w]| {
        SELF_ASPACE.copy_cap(p.0, w, rights::WRITE).ctx("COPY_CAP(WRITE)")?;
        expect_err(Process(w).cpu_time(), Error::NO_RIGHTS, "CPU_TIME without READ")?;
        Ok(())
    })
}
