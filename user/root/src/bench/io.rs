//! I/O paths (docs/performance.md, "I/O paths"): benchmarks whose
//! operations wait for a device or the host, which the TSC under `-icount`
//! does not count as instructions.  tools/bench.py runs them in a boot of
//! their own, under `-icount shift=0,sleep=on` with the instruction-counting
//! plugin (tools/icount-plugin), and the kernel command line word
//! `iobench`; each run of one is a region between the plugin's markers,
//! reported as `bench-io: NAME per=N` (keep_rt::icount).  Without
//! `iobench` the suite leaves them out: the figures would be nobody's.
//!
//! `icount.check` is the plugin's own check: a CPU-bound region timed by
//! both the plugin and `rdtsc`, which must agree (the host compares).

use alloc::vec;

use keep_rt::{icount, println};

use super::{BenchResult, Suite, tsc};
use crate::Root;

/// The kernel command line has `iobench`: the plugin is loaded.
pub static IO: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// Regions of `icount.check`.
const CHECK_RUNS: u32 = 5;

/// FNV-1a over 64 KiB, 100 times: about 25 million instructions of
/// computation, no waiting (two or three timer interrupts land in each
/// region, and both counts include them).
fn check(_: &mut Root, _: &mut Suite) -> BenchResult {
    let buf: alloc::vec::Vec<u8> = (0..65536u32).map(|i| (i * 7) as u8).collect();
    let mut h = 0u64;
    for _ in 0..CHECK_RUNS {
        icount::start();
        let t0 = tsc();
        for k in 0..100u64 {
            h ^= buf.iter().fold(0xcbf2_9ce4_8422_2325 ^ k, |h, &b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
            h = core::hint::black_box(h);
        }
        let t1 = tsc();
        icount::end();
        println!("bench-io: icount.check per=1 rdtsc={}", t1 - t0);
    }
    let _ = vec![h];
    Ok(())
}

pub fn run_all(root: &mut Root, s: &mut Suite) {
    if !IO.load(core::sync::atomic::Ordering::Relaxed) {
        // At the prompt: say why these do not run.
        if ["icount.check", "blk.", "net.tcp", "net.udp"].iter().any(|p| s.wants_any(p)) {
            println!(
                "bench: the I/O benchmarks (icount.check, blk.*, net.tcp.*, net.udp.*) run only in `make bench`'s I/O boot \
                 (kernel command line `iobench`): they need the disk and the NIC to themselves, which the system \
                 description's servers hold here, and the instruction-counting plugin with the host's peer"
            );
        }
        return;
    }
    super::run_parts(root, s, &[("icount.check", check), ("blk.", super::blk::run), ("net.", super::net::host)]);
}
