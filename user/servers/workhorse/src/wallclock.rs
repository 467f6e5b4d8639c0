//! The wall clock (docs/workhorse.md, "Time"): the server asks the `rtc`
//! server (docs/devices.md, "The wall clock") for the time once, at start
//! (a restarted server asks again), and keeps the difference between it
//! and the Keep timer's count from boot.  CLOCK_REALTIME and everything
//! that tells the time of day (gettimeofday, time, file times) is that
//! difference plus the timer, so it moves with CLOCK_MONOTONIC and never
//! jumps.  Without the grant (`uses=rtc`) or the server, the difference is
//! 0 and the real-time clocks count from boot, as the console says once.

use core::sync::atomic::{AtomicU64, Ordering};

use keep_abi::SELF_ASPACE;
use keep_rt::println;
use keep_system::names::{self, NAMES_SLOT};

/// Nanoseconds from 1970 to the timer's zero (boot).
static BOOT_REALTIME_NS: AtomicU64 = AtomicU64::new(0);

/// The real time (ns since 1970) when the timer reads `mono_ns`.
pub fn realtime_at(mono_ns: u64) -> u64 {
    BOOT_REALTIME_NS.load(Ordering::Relaxed).saturating_add(mono_ns)
}

/// The timer's reading (ns from boot) at real time `real_ns`.
pub fn mono_at(real_ns: u64) -> u64 {
    real_ns.saturating_sub(BOOT_REALTIME_NS.load(Ordering::Relaxed))
}

/// Asks the rtc server for the time (through the name service) and sets
/// the real-time clock's start; says on the console when it cannot.
pub fn init() {
    match read() {
        Ok(secs) => {
            // The clock counts whole seconds: the reading is at most a
            // second behind, taken as the middle of its second.
            let real = secs.saturating_mul(1_000_000_000).saturating_add(500_000_000);
            BOOT_REALTIME_NS.store(real.saturating_sub(crate::sys::now_ns()), Ordering::Relaxed);
        }
        Err(why) => println!("workhorse: no wall clock ({why}): CLOCK_REALTIME counts from boot"),
    }
}

fn read() -> Result<u64, alloc::string::String> {
    if !names::present(NAMES_SLOT) {
        return Err("no name service".into());
    }
    let slot = crate::env::env().slot().map_err(|e| alloc::format!("no slot: {e}"))?;
    let r = lookup("rtc", slot)
        .map_err(|e| alloc::format!("rtc: {}", names::status::name(e)))
        .and_then(|s| {
            keep_rtc::Client(s).now().map_err(|e| alloc::format!("rtc: NOW: {}", keep_rtc::status_name(e)))
        });
    let _ = SELF_ASPACE.delete_cap(slot);
    crate::env::env().free_slot(slot);
    r
}

/// `names::lookup_at`, waiting out NOT_RUNNING (a server being restarted)
/// for up to 5 s as `names::lookup_patiently` does, but with the timer's
/// SLEEP: a receive with a time-out would take (and drop) the root task's
/// RUN or the ticker's call, which may come while the server starts.
fn lookup(name: &str, slot: u64) -> Result<keep_abi::Sender, u64> {
    for _ in 0..50 {
        match names::lookup_at(NAMES_SLOT, name, slot, keep_rt::ipc_buffer()) {
            Err(names::status::NOT_RUNNING) => {
                let _ = keep_abi::TIMER.sleep(100);
            }
            r => return r,
        }
    }
    Err(names::status::NOT_RUNNING)
}
