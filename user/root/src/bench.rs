//! In-guest benchmarks.  Under `qemu -accel tcg -icount shift=0` the TSC
//! advances by one per executed instruction, so rdtsc deltas are exact
//! instruction counts.  Each benchmark runs RUNS batches of ITERATIONS
//! operations after one warm-up batch; from every batch the cost of an
//! empty batch (the rdtsc pair plus the loop) is subtracted and the rest is
//! divided by ITERATIONS.  The host harness parses the `bench:` lines.

use core::arch::x86_64::{_mm_lfence, _rdtsc};
use core::hint::black_box;

use keep_abi::{KERNEL, MEMORY, SELF_PROCESS, info, invoke_raw, method};
use keep_rt::println;

const RUNS: usize = 21;
const ITERATIONS: u64 = 1000;

#[inline(always)]
fn tsc() -> u64 {
    // SAFETY: lfence and rdtsc have no memory effects; lfence keeps rdtsc
    // from being executed early on real hardware.
    unsafe {
        _mm_lfence();
        _rdtsc()
    }
}

/// TSC ticks of one batch of `op`.
#[inline(always)]
fn batch<T>(op: &impl Fn() -> T) -> u64 {
    let t0 = tsc();
    for _ in 0..black_box(ITERATIONS) {
        black_box(op());
    }
    tsc() - t0
}

/// Sorted per-operation costs of RUNS batches.
fn measure<T>(op: impl Fn() -> T, overhead: u64) -> [u64; RUNS] {
    batch(&op);
    let mut runs = [0u64; RUNS];
    for r in runs.iter_mut() {
        *r = batch(&op).saturating_sub(overhead) / ITERATIONS;
    }
    runs.sort_unstable();
    runs
}

fn report(name: &str, runs: &[u64; RUNS]) {
    println!(
        "bench: {name} median={} min={} max={} unit=instructions runs={RUNS}",
        runs[RUNS / 2],
        runs[0],
        runs[RUNS - 1]
    );
}

pub fn run_all() {
    // The empty batch, measured like the others; its median is subtracted.
    let mut empty = [0u64; RUNS];
    batch(&|| ());
    for r in empty.iter_mut() {
        *r = batch(&|| ());
    }
    empty.sort_unstable();
    let overhead = empty[RUNS / 2];
    println!("bench: overhead of an empty batch of {ITERATIONS}: {overhead} (subtracted)");

    // Slot 0 always holds the null capability: the cheapest invocation.
    report(
        "syscall.null",
        &measure(|| invoke_raw(0, method::kernel::INFO, [0; 4]), overhead),
    );
    report(
        "kernel.info",
        &measure(|| KERNEL.info(info::VERSION), overhead),
    );
    report("memory.free", &measure(|| MEMORY.free(), overhead));
    report(
        "process.status",
        &measure(|| SELF_PROCESS.status(), overhead),
    );
    let yield_now = || invoke_raw(SELF_PROCESS.0, method::process::YIELD, [0; 4]);
    report("process.yield", &measure(yield_now, overhead));
}
