//! CPU time, estimated: the kernel keeps no account of the time a process
//! runs, so the server counts it from what it sees.  A Linux thread runs
//! (or waits for the CPU, or for the server to answer its call) from when
//! it starts, or a call of its that waited is answered, until it ends or a
//! call of its must wait (`Out::Block`).  Keep has one CPU, and the threads
//! that run share it: while n of them run, each is given 1/n of the time
//! that passes (a virtual clock that advances at 1/n of the timer's pace;
//! a thread's CPU time is the virtual time it spent running).  So a busy
//! thread alone gets all the time, two busy ones half each, and one that
//! waits gets none.  The time the server spends on a thread's calls is in
//! it too (Linux's system time); it is all reported as user time.  The
//! timer reads in milliseconds, and so do these clocks.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The virtual clock (ns << SHIFT), the timer reading it was last advanced
/// at (ns) and the threads running now.
static VIRTUAL: AtomicU64 = AtomicU64::new(0);
static AT: AtomicU64 = AtomicU64::new(0);
static RUNNING: AtomicU64 = AtomicU64::new(0);
/// Fractions of a ns kept through the division by n (2^56 ns: 2 years).
const SHIFT: u32 = 8;

/// The virtual clock now.
fn advance() -> u64 {
    let now = crate::sys::now_ns();
    let at = AT.load(Relaxed);
    let n = RUNNING.load(Relaxed);
    if now > at {
        if n > 0 {
            VIRTUAL.fetch_add(((now - at) << SHIFT) / n, Relaxed);
        }
        AT.store(now, Relaxed);
    }
    VIRTUAL.load(Relaxed)
}

/// One thread's CPU time: what it had when it last stopped running, and
/// the virtual time it started running at (None while it waits).
pub struct CpuTime {
    spent: u64,
    since: Option<u64>,
}

impl CpuTime {
    /// A thread that runs from now.
    pub fn running() -> CpuTime {
        let v = advance();
        RUNNING.fetch_add(1, Relaxed);
        CpuTime { spent: 0, since: Some(v) }
    }

    /// The thread starts (true) or stops (false) running; nothing if it
    /// already does.
    pub fn set(&mut self, running: bool) {
        if self.since.is_some() == running {
            return;
        }
        let v = advance();
        match self.since.take() {
            Some(from) => {
                self.spent += v - from;
                RUNNING.fetch_sub(1, Relaxed);
            }
            None => {
                self.since = Some(v);
                RUNNING.fetch_add(1, Relaxed);
            }
        }
    }

    /// Its CPU time so far, in ns.
    pub fn ns(&self) -> u64 {
        let now = match self.since {
            Some(from) => advance() - from,
            None => 0,
        };
        (self.spent + now) >> SHIFT
    }
}

impl Drop for CpuTime {
    fn drop(&mut self) {
        self.set(false);
    }
}
