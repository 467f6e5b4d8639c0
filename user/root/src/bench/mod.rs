//! In-guest benchmarks (`make bench`, the shell's `bench`).
//!
//! Under `qemu -accel tcg -icount shift=0` the TSC advances by one per
//! executed instruction, so rdtsc deltas are exact instruction counts.
//! Every benchmark runs one warm-up batch and then RUNS batches; it reports
//! the median, minimum and maximum of the per-operation cost of those
//! batches.  Two ways of timing:
//!
//! * a *batch* times `n` back-to-back operations with one rdtsc pair; the
//!   cost of an empty batch of `n` (the rdtsc pair and the loop, measured
//!   the same way, its median) is subtracted and the rest divided by `n`;
//! * a *sampled* batch times each of `n` operations with its own rdtsc pair
//!   (where work that must not be counted, such as unmapping the page again,
//!   runs between operations); the cost of an empty rdtsc pair is subtracted
//!   from every sample.
//!
//! Each result is one line `bench: NAME median=.. min=.. max=.. unit=..
//! runs=..` that tools/bench.py collects.  The kernel command line word
//! `bench=NAME` (or `bench NAME` in the shell) runs only the benchmark NAME;
//! `bench=PREFIX*` runs those whose names start with PREFIX.

mod bank;
mod blk;
mod caps;
mod dma;
mod dsm;
mod fault;
pub mod io;
mod ipc;
mod kmem;
mod net;
mod notify;
mod persist;
mod sfi;
mod vault;
mod vt;

use alloc::string::String;
use alloc::vec::Vec;
use core::arch::x86_64::{_mm_lfence, _rdtsc};
use core::hint::black_box;

use keep_abi::{KERNEL, MEMORY, SELF_PROCESS, info, invoke_raw, method};
use keep_rt::println;

use crate::Root;

/// The kernel command line has `icount` (tools/bench.py runs QEMU with
/// `-icount shift=0`): the TSC counts instructions.  Otherwise (`make run`)
/// the figures are TSC ticks of real time, and the unit says so.
pub static ICOUNT: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// What the suite keeps between runs (the shell's `bench` may run it many
/// times): made on first use, because pages of a loaded program and the
/// lookup layouts' cappages are not cheap to make again.
#[derive(Default)]
pub struct Kept {
    /// The capability layouts of the lookup benchmarks.
    pub lookup: Option<caps::LookupSpace>,
    /// benchsrv as IPC server, waiting for calls.
    pub server: Option<keep_loader::Child>,
    /// benchsrv as yield partner, stopped between runs.
    pub yielder: Option<keep_loader::Child>,
    /// The space-bank and constructor servers and a constructor of hello.
    pub bank: Option<(keep_spacebank::Server, keep_constructor::Server, keep_constructor::Constructor)>,
}

/// Batches measured after the warm-up.
pub const RUNS: usize = 21;
/// Operations in one batch of the cheap benchmarks.
const ITERATIONS: u64 = 1000;

pub type BenchResult<T = ()> = Result<T, String>;

/// Adds context to a kernel error.
pub trait Ctx<T> {
    fn ctx(self, what: &str) -> BenchResult<T>;
}

impl<T> Ctx<T> for keep_abi::Result<T> {
    fn ctx(self, what: &str) -> BenchResult<T> {
        self.map_err(|e| alloc::format!("{what}: {e}"))
    }
}

#[inline(always)]
pub fn tsc() -> u64 {
    // SAFETY: lfence and rdtsc have no memory effects; lfence keeps rdtsc
    // from being executed early on real hardware.
    unsafe {
        _mm_lfence();
        _rdtsc()
    }
}

/// TSC ticks of one batch of `n` operations `op`.
#[inline(always)]
fn batch<T>(n: u64, op: &mut impl FnMut() -> T) -> u64 {
    let t0 = tsc();
    for _ in 0..black_box(n) {
        black_box(op());
    }
    tsc() - t0
}

fn median(mut v: [u64; RUNS]) -> u64 {
    v.sort_unstable();
    v[RUNS / 2]
}

/// The figures of one benchmark: per-operation costs of RUNS batches.
#[derive(Clone, Copy)]
pub struct Runs(pub [u64; RUNS]);

impl Runs {
    pub fn sorted(mut self) -> Runs {
        self.0.sort_unstable();
        self
    }
    pub fn median(&self) -> u64 {
        median(self.0)
    }
}

/// Where the suite keeps what it measured and what it is asked to run.
pub struct Suite<'a> {
    filter: Option<&'a str>,
    /// Ticks of an empty rdtsc pair (subtracted from every sample).
    pub pair: u64,
    /// (name, median) of everything reported, for the ratio summary.
    results: Vec<(&'static str, u64)>,
}

impl Suite<'_> {
    /// Whether `name` is to be run (the filter may list several patterns,
    /// separated by commas).
    pub fn wants(&self, name: &str) -> bool {
        self.filter.is_none_or(|fs| {
            fs.split(',').any(|f| match f.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == f,
            })
        })
    }

    /// Whether any of the benchmarks whose names start with `prefix` is to
    /// be run (so that their common setup is done only when needed).
    pub fn wants_any(&self, prefix: &str) -> bool {
        self.filter.is_none_or(|fs| {
            fs.split(',').any(|f| {
                let f = f.trim_end_matches('*');
                f.starts_with(prefix) || prefix.starts_with(f)
            })
        })
    }

    pub fn report(&mut self, name: &'static str, unit: &str, runs: Runs) {
        // Without -icount the TSC ticks with real time: say so.
        let unit = if unit == "instructions" && !ICOUNT.load(core::sync::atomic::Ordering::Relaxed) {
            "tsc-ticks"
        } else {
            unit
        };
        let r = runs.sorted();
        println!(
            "bench: {name} median={} min={} max={} unit={unit} runs={RUNS}",
            r.0[RUNS / 2],
            r.0[0],
            r.0[RUNS - 1]
        );
        self.results.push((name, r.0[RUNS / 2]));
    }

    pub fn fail(&self, name: &str, why: &str) {
        println!("bench: {name} not measured: {why}");
    }

    /// Per-operation costs of RUNS batches of `n` operations, after one
    /// warm-up batch, less the cost of an empty batch of `n`.
    pub fn measure<T>(&self, n: u64, mut op: impl FnMut() -> T) -> Runs {
        let mut empty = [0u64; RUNS];
        batch(n, &mut || ());
        for e in empty.iter_mut() {
            *e = batch(n, &mut || ());
        }
        let overhead = median(empty);
        batch(n, &mut op);
        let mut runs = [0u64; RUNS];
        for r in runs.iter_mut() {
            *r = batch(n, &mut op).saturating_sub(overhead) / n;
        }
        Runs(runs)
    }

    /// Runs `name` as a batch benchmark of `n` operations if it is wanted.
    pub fn bench<T>(&mut self, name: &'static str, n: u64, op: impl FnMut() -> T) {
        if self.wants(name) {
            let runs = self.measure(n, op);
            self.report(name, "instructions", runs);
        }
    }

    fn lookup(&self, name: &str) -> Option<u64> {
        self.results.iter().find(|(n, _)| *n == name).map(|r| r.1)
    }

    /// A readable summary of the ratios the issue asks about (the host
    /// computes the same from the figures, with the other kernels').
    fn summary(&self) {
        // Ratios of real-time ticks of one run mean nothing (the host moves
        // them by tens of percent); only instruction counts are compared.
        if !ICOUNT.load(core::sync::atomic::Ordering::Relaxed) {
            return;
        }
        let pairs = [
            ("ipc.call_reply.cross_as.cap1", "ipc.call_reply.cross_as"),
            ("ipc.call_reply.cross_as.cap4", "ipc.call_reply.cross_as"),
            ("ipc.call_reply.same_as", "ipc.call_reply.cross_as"),
            ("cap.lookup.sparse", "cap.lookup.dense"),
        ];
        for (a, b) in pairs {
            if let (Some(x), Some(y)) = (self.lookup(a), self.lookup(b)) {
                if y > 0 {
                    let milli = x * 1000 / y;
                    println!("bench: ratio {a} / {b} = {}.{:03}", milli / 1000, milli % 1000);
                }
            }
        }
    }
}

/// The ticks of an empty rdtsc pair (the median of RUNS).
fn empty_pair() -> u64 {
    let mut v = [0u64; RUNS];
    for x in v.iter_mut() {
        let t0 = tsc();
        *x = tsc() - t0;
    }
    median(v)
}

/// Runs the whole suite, or with a filter the benchmarks whose names start
/// with it.
/// A group of benchmarks: its name (prefix) and the function that runs it.
type Part = (&'static str, fn(&mut Root, &mut Suite) -> BenchResult);

/// Runs each part whose name the suite wants; a part that fails is reported
/// under its name and the others go on.
fn run_parts(root: &mut Root, s: &mut Suite, parts: &[Part]) {
    for &(name, f) in parts {
        if s.wants_any(name) {
            if let Err(e) = f(root, s) {
                s.fail(name, &e);
            }
        }
    }
}

pub fn run_all(root: &mut Root, filter: Option<&str>) {
    let mut s = Suite {
        filter,
        pair: empty_pair(),
        results: Vec::new(),
    };
    let overhead = {
        let mut e = [0u64; RUNS];
        for x in e.iter_mut() {
            *x = batch(ITERATIONS, &mut || ());
        }
        median(e)
    };
    println!(
        "bench: overhead of an empty batch of {ITERATIONS}: {overhead}, of an rdtsc pair: {} (subtracted)",
        s.pair
    );
    let tsc_hz = KERNEL.info(info::TSC_HZ).unwrap_or(0);
    if ICOUNT.load(core::sync::atomic::Ordering::Relaxed) {
        println!("bench: TSC {tsc_hz} Hz, one tick per instruction (-icount shift=0): figures are instructions");
    } else {
        println!("bench: TSC {tsc_hz} Hz of real time (not under -icount): figures are TSC ticks, which vary from run to run; no ratios (make bench measures instructions)");
    }

    // Slot 0 always holds the null capability: the cheapest invocation that
    // enters and leaves the kernel.
    s.bench("syscall.null", ITERATIONS, || {
        invoke_raw(0, method::kernel::INFO, [0; 4])
    });
    s.bench("kernel.info", ITERATIONS, || KERNEL.info(info::VERSION));
    s.bench("memory.free", ITERATIONS, || MEMORY.free());
    s.bench("process.status", ITERATIONS, || SELF_PROCESS.status());
    s.bench("process.yield", ITERATIONS, || {
        invoke_raw(SELF_PROCESS.0, method::process::YIELD, [0; 4])
    });

    ipc::run(root, &mut s);
    notify::run(root, &mut s);
    fault::run(root, &mut s);
    kmem::run(root, &mut s);
    dma::run(root, &mut s);
    caps::run(root, &mut s);
    sfi::run(root, &mut s);
    net::run_all(root, &mut s);
    io::run_all(root, &mut s);
    if s.wants_any("vault.")
        && let Err(e) = vault::run(root, &mut s)
    {
        s.fail("vault", &e);
    }
    if (s.wants_any("bank.") || s.wants_any("proc.create"))
        && let Err(e) = bank::run(root, &mut s)
    {
        s.fail("bank", &e);
    }
    vt::run(root, &mut s);
    // Only in a boot of its own (it opens the pool and fills it).
    if filter.is_some_and(|f| f.starts_with("persist."))
        && let Err(e) = persist::run(root, &mut s)
    {
        s.fail("persist", &e);
    }
    s.summary();
    println!("bench: done");
}
