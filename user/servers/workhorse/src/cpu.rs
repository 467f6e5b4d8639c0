//! CPU time, as the kernel counts it: PROCESS.CPU_TIME is the time a Keep
//! process has had the CPU (in user mode and in the kernel on its behalf),
//! taken from the TSC at every switch.  A Linux thread is one Keep process
//! at a time (execve gives it a new one): its CPU time is its Keep
//! process's and that of the ones it had before.  The time the server
//! spends on a thread's calls (Linux's system time) is the server's own, so
//! it is in no thread's; all of it is reported as user time.

use crate::process::Keep;

/// One thread's CPU time, apart from its present Keep process's: what its
/// earlier ones ran (ns).
pub struct CpuTime {
    before: u64,
}

impl CpuTime {
    pub fn new() -> CpuTime {
        CpuTime { before: 0 }
    }

    /// Its CPU time so far in ns, `keep` its Keep process now (None once
    /// it has ended).
    pub fn ns(&self, keep: Option<&Keep>) -> u64 {
        self.before + keep.map_or(0, |k| k.process.cpu_time().unwrap_or(0))
    }

    /// Its Keep process `keep` is about to be destroyed: its time stays.
    pub fn keep_gone(&mut self, keep: &Keep) {
        self.before += keep.process.cpu_time().unwrap_or(0);
    }
}
