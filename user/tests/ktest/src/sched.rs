//! Time and scheduling: the clock, SLEEP, priorities, and processes that
//! share one address space.

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{Error, KERNEL, SELF_ASPACE, TIMER, Timer, info, rights, slot, ty};

use crate::{Ctx, Cx, TestResult, expect_err, with_slots};
use keep_loader::thread;

pub fn now(_: &mut Cx) -> TestResult {
    let (ms0, t0) = TIMER.now().ctx("NOW")?;
    crate::kernel::wait_ticks(3)?;
    let (ms1, t1) = TIMER.now().ctx("NOW")?;
    ensure!(t1 >= t0 + 3, "ticks {t0} -> {t1}");
    ensure!(ms1 > ms0, "ms {ms0} -> {ms1}");
    let hz = KERNEL.info(info::TIMER_HZ).ctx("INFO(TIMER_HZ)")?.max(1);
    let from_ticks = t1 * 1000 / hz;
    ensure!(
        ms1.abs_diff(from_ticks) <= 2 * 1000 / hz,
        "{ms1} ms but {t1} ticks at {hz} Hz"
    );
    Ok(())
}

pub fn sleep(_: &mut Cx) -> TestResult {
    for ms in [1, 50] {
        let t0 = TIMER.now_ms().ctx("NOW")?;
        TIMER.sleep(ms).ctx("SLEEP")?;
        let t1 = TIMER.now_ms().ctx("NOW")?;
        ensure!(t1 - t0 >= ms, "SLEEP({ms}) took {} ms", t1 - t0);
        ensure!(t1 - t0 < ms + 500, "SLEEP({ms}) took {} ms", t1 - t0);
    }
    Ok(())
}

pub fn sleep_args(_: &mut Cx) -> TestResult {
    expect_err(TIMER.sleep(0), Error::INVALID_ARG, "SLEEP(0)")?;
    expect_err(TIMER.sleep(86_400_001), Error::INVALID_ARG, "SLEEP(86400001)")?;
    expect_err(TIMER.sleep(u64::MAX), Error::INVALID_ARG, "SLEEP(max)")
}

/// SLEEP_UNTIL: not woken before its deadline (the TSC has reached it),
/// a passed deadline returns at once, one past a day ahead is refused.
pub fn sleep_until(_: &mut Cx) -> TestResult {
    // SAFETY: rdtsc only reads the time-stamp counter.
    let tsc = || unsafe { core::arch::x86_64::_rdtsc() };
    let khz = KERNEL.info(info::TSC_HZ).ctx("INFO(TSC_HZ)")? / 1000;
    for ms in [1, 20] {
        let at = tsc() + ms * khz;
        TIMER.sleep_until(at).ctx("SLEEP_UNTIL")?;
        let woke = tsc();
        ensure!(woke >= at, "SLEEP_UNTIL({ms} ms ahead) woke {} ticks early", at - woke);
        ensure!(woke - at < 500 * khz, "SLEEP_UNTIL({ms} ms ahead) woke {} ms late", (woke - at) / khz);
    }
    let t0 = TIMER.now_ms().ctx("NOW")?;
    TIMER.sleep_until(0).ctx("SLEEP_UNTIL(0)")?;
    TIMER.sleep_until(tsc() - 1).ctx("SLEEP_UNTIL(passed)")?;
    let t1 = TIMER.now_ms().ctx("NOW")?;
    ensure!(t1 - t0 < 500, "passed deadlines took {} ms", t1 - t0);
    expect_err(TIMER.sleep_until(tsc() + 86_400_100 * khz), Error::INVALID_ARG, "SLEEP_UNTIL(a day ahead)")?;
    expect_err(TIMER.sleep_until(u64::MAX), Error::INVALID_ARG, "SLEEP_UNTIL(max)")
}

pub fn timer_rights(cx: &mut Cx) -> TestResult {
    with_slots(cx, |_, [w]| {
        SELF_ASPACE
            .copy_cap(slot::TIMER, w, rights::WRITE)
            .ctx("COPY_CAP")?;
        expect_err(Timer(w).now(), Error::NO_RIGHTS, "NOW without READ")?;
        expect_err(Timer(w).sleep(1), Error::NO_RIGHTS, "SLEEP without READ")?;
        expect_err(Timer(w).sleep_until(0), Error::NO_RIGHTS, "SLEEP_UNTIL without READ")?;
        let i = SELF_ASPACE.identify_cap(w).ctx("IDENTIFY")?;
        ensure!(i.ty == ty::TIMER, "copy is {i:?}");
        Ok(())
    })
}

static ORDER: [AtomicU64; 4] = [const { AtomicU64::new(0) }; 4];
static NEXT: AtomicU64 = AtomicU64::new(0);

fn record(a: &thread::Args) -> u64 {
    let i = NEXT.fetch_add(1, SeqCst) as usize;
    if i < ORDER.len() {
        ORDER[i].store(a.words[0], SeqCst);
    }
    0
}

pub fn priority_order(cx: &mut Cx) -> TestResult {
    NEXT.store(0, SeqCst);
    // Both below ktest (10): neither runs until ktest blocks, then the
    // higher one first, although it was started second.
    let low = thread::spawn(&mut cx.slots, "ktest-low", 4, record, &[1])?;
    let high = match thread::spawn(&mut cx.slots, "ktest-high", 6, record, &[2]) {
        Ok(t) => t,
        Err(e) => {
            low.kill(&mut cx.slots);
            return Err(e);
        }
    };
    ensure!(NEXT.load(SeqCst) == 0, "a lower-priority thread ran first");
    let a = low.join(&mut cx.slots);
    let b = high.join(&mut cx.slots);
    a?;
    b?;
    let order = [ORDER[0].load(SeqCst), ORDER[1].load(SeqCst)];
    ensure!(order == [2, 1], "ran in order {order:?}, want [2, 1]");
    Ok(())
}

pub fn higher_preempts(cx: &mut Cx) -> TestResult {
    NEXT.store(0, SeqCst);
    // Starting a higher-priority thread runs it at once.
    let t = thread::spawn(&mut cx.slots, "ktest-high", 12, record, &[3])?;
    let ran = NEXT.load(SeqCst);
    let r = t.join(&mut cx.slots);
    r?;
    ensure!(ran == 1, "the higher-priority thread had not run after START");
    Ok(())
}

static SHARED: AtomicU64 = AtomicU64::new(0);

fn sharer(a: &thread::Args) -> u64 {
    SHARED.store(0x5157, SeqCst);
    // The same capability space: copy the console to the slot given.
    match SELF_ASPACE.copy_cap(slot::CONSOLE, a.words[0], 0) {
        Ok(()) => 0,
        Err(e) => 100 + e.0,
    }
}

pub fn shared_aspace(cx: &mut Cx) -> TestResult {
    with_slots(cx, |cx, [s]| {
        SHARED.store(0, SeqCst);
        let t = thread::spawn(&mut cx.slots, "ktest-share", 10, sharer, &[s])?;
        let st = t.join(&mut cx.slots)?;
        ensure!(st.code == 0, "thread {st}");
        ensure!(SHARED.load(SeqCst) == 0x5157, "the thread's write is not seen");
        crate::cspace::console_works(s)
    })
}
