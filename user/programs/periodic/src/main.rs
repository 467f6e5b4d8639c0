//! A periodic real-time task (docs/realtime.md): released every
//! [`PERIOD_US`] microseconds at absolute times (TIMER.SLEEP_UNTIL to the
//! next release's TSC value, so a period's own work never pushes the next
//! release later), it does a fixed piece of work at each release and
//! records the release jitter (the TSC when it runs again minus the ideal
//! release) and the deadline misses (a release whose work was not done
//! before the next release).  The system description gives it a budget and
//! a priority above everything else's (`periodic` in
//! user/system/rt-test.conf and system.conf).
//!
//! Every [`WINDOW`] releases (a second) it prints the window's figures:
//!
//! ```text
//! periodic: window 7: 1000 releases, 0 missed, jitter min 2113 p99 2301 max 2410 ns; total 7000 releases, 0 missed, max 2410 ns
//! ```
//!
//! A low-priority reporter thread prints them, so that the task itself
//! never waits for the console (whose server may share the CPU with
//! anything).  arg0: how many windows to run before it exits (0: for ever).

#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::TIMER;
use keep_loader::{SlotPool, thread};
use keep_rt::println;

keep_rt::entry!(main);

/// The period: the shortest the kernel's budgets allow
/// (BUDGET_MIN_PERIOD_US), so the task is budgeted per release.
const PERIOD_US: u64 = 1000;
/// Releases a window: one second.
const WINDOW: u64 = 1_000_000 / PERIOD_US;
/// The work of one release: this many rounds of a xorshift (about 25 µs
/// under QEMU's -icount shift=0, where an instruction is a nanosecond).
const WORK_ROUNDS: u64 = 5000;
/// The histogram the 99th percentile is read from: buckets of this many
/// nanoseconds, the last one for everything above.
const BUCKET_NS: u64 = 100;
const BUCKETS: usize = 4096;
/// The reporter's priority: the default, below the task's own.
const REPORTER_PRIORITY: u64 = 10;

/// One window's figures, handed to the reporter: [index, releases, missed,
/// min, p99, max, total releases, total missed, total max] (ns), and a
/// ring of them so that a reporter that falls behind loses the oldest.
const FIELDS: usize = 9;
const RING: usize = 16;
static WINDOWS: [[AtomicU64; FIELDS]; RING] = [const { [const { AtomicU64::new(0) }; FIELDS] }; RING];
/// Windows published; the reporter prints up to it.
static PUBLISHED: AtomicU64 = AtomicU64::new(0);
/// Windows printed (the task waits for the last one before it exits).
static PRINTED: AtomicU64 = AtomicU64::new(0);

/// The window's jitter histogram (the task alone writes it).
static mut HIST: [u32; BUCKETS] = [0; BUCKETS];

fn tsc() -> u64 {
    // SAFETY: rdtsc only reads the time-stamp counter (user mode may).
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// TSC ticks a millisecond, from TIMER.NOW (milliseconds since boot, the
/// kernel's TSC divided by its calibration): the TSC at two edges of NOW's
/// millisecond half a second apart.
fn tsc_khz() -> u64 {
    let edge = || {
        let start = TIMER.now_ms().unwrap_or(0);
        loop {
            let t = tsc();
            let ms = TIMER.now_ms().unwrap_or(0);
            if ms != start {
                return (ms, t);
            }
        }
    };
    let (ms0, t0) = edge();
    let _ = TIMER.sleep(500);
    let (ms1, t1) = edge();
    (t1 - t0) / (ms1 - ms0).max(1)
}

/// The reporter: prints each window the task publishes.
fn reporter(_: &thread::Args) -> u64 {
    let mut next = 0u64;
    loop {
        while next < PUBLISHED.load(SeqCst) {
            let w = &WINDOWS[next as usize % RING];
            let f: [u64; FIELDS] = core::array::from_fn(|i| w[i].load(SeqCst));
            if f[0] == next + 1 {
                println!(
                    "periodic: window {}: {} releases, {} missed, jitter min {} p99 {} max {} ns; total {} releases, {} missed, max {} ns",
                    f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8]
                );
            } else {
                println!("periodic: window {} was overwritten before it was printed", next + 1);
            }
            next += 1;
            PRINTED.store(next, SeqCst);
        }
        let _ = TIMER.sleep(100);
    }
}

/// The work of one release, which the compiler cannot skip.
#[inline(never)]
fn work(seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..WORK_ROUNDS {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x = core::hint::black_box(x);
    }
    x
}

fn main(windows: u64, _: u64) -> i32 {
    let khz = tsc_khz();
    if khz == 0 {
        println!("periodic: cannot measure the TSC's rate");
        return 2;
    }
    let period = PERIOD_US * khz / 1000;
    let ns = |ticks: u64| ticks * 1_000_000 / khz;
    // SAFETY: only this process touches HIST; it is touched here first so
    // that the reporter thread (which has no pager) never faults.
    let hist = unsafe { &mut *core::ptr::addr_of_mut!(HIST) };
    hist.fill(0);
    for w in &WINDOWS {
        w.iter().for_each(|f| f.store(0, SeqCst));
    }
    PUBLISHED.store(0, SeqCst);
    PRINTED.store(0, SeqCst);
    let mut slots = SlotPool::new();
    // Kept to the end: the thread's stack and IPC buffer are the handle's.
    let _reporter = match thread::spawn(&mut slots, "periodic-report", REPORTER_PRIORITY, reporter, &[]) {
        Ok(t) => t,
        Err(e) => {
            println!("periodic: cannot start its reporter: {e}");
            return 2;
        }
    };
    println!("periodic: started, a release every {PERIOD_US} us ({khz} TSC ticks a ms), {WORK_ROUNDS} rounds of work each");
    let (mut total, mut total_missed, mut total_max) = (0u64, 0u64, 0u64);
    let (mut n, mut missed, mut min, mut max) = (0u64, 0u64, u64::MAX, 0u64);
    let mut window = 0u64;
    let mut seed = 1u64;
    let mut release = tsc() + period;
    loop {
        if let Err(e) = TIMER.sleep_until(release) {
            println!("periodic: SLEEP_UNTIL: {e}");
            return 3;
        }
        let jitter = ns(tsc().saturating_sub(release));
        seed = work(seed);
        let done = tsc();
        // The next release; one whose time has come before this work was
        // done is missed, and so is every release that passed meanwhile.
        release += period;
        while release <= done {
            missed += 1;
            release += period;
        }
        n += 1;
        min = min.min(jitter);
        max = max.max(jitter);
        hist[((jitter / BUCKET_NS) as usize).min(BUCKETS - 1)] += 1;
        if n == WINDOW {
            // The 99th percentile: the upper edge of the bucket that holds
            // it (the exact maximum when it is in the last bucket).
            let (mut seen, mut p99) = (0u64, max);
            for (i, &c) in hist.iter().enumerate() {
                seen += c as u64;
                if seen * 100 >= n * 99 {
                    p99 = if i == BUCKETS - 1 { max } else { ((i as u64 + 1) * BUCKET_NS).min(max) };
                    break;
                }
            }
            window += 1;
            total += n;
            total_missed += missed;
            total_max = total_max.max(max);
            let w = &WINDOWS[(window - 1) as usize % RING];
            for (i, v) in [window, n, missed, min, p99, max, total, total_missed, total_max].into_iter().enumerate() {
                w[i].store(v, SeqCst);
            }
            PUBLISHED.store(window, SeqCst);
            (n, missed, min, max) = (0, 0, u64::MAX, 0);
            hist.fill(0);
            if window == windows {
                while PRINTED.load(SeqCst) < window {
                    let _ = TIMER.sleep(10);
                }
                println!("periodic: done, {total} releases, {total_missed} missed, max jitter {total_max} ns");
                return if total_missed == 0 { 0 } else { 1 };
            }
        }
    }
}
