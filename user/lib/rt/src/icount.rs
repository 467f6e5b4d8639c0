//! Markers for the instruction-counting QEMU plugin (tools/icount-plugin,
//! docs/performance.md "I/O paths"): a benchmark puts [`start`] and
//! [`end`] around the region it measures and, after `end`, prints one line
//! `bench-io: NAME per=N` (see [`region`]); the host pairs that line with
//! the plugin's count of the instructions executed in between, in every
//! process and the kernel, waiting included.  Without the plugin the
//! markers are NOPs.

/// `nopl 0x4b455001(%rax)`: 0f 1f 80 01 50 45 4b.
#[inline(always)]
pub fn start() {
    // SAFETY: a NOP.
    unsafe { core::arch::asm!("nop dword ptr [rax + 0x4b455001]", options(nostack, preserves_flags)) }
}

/// `nopl 0x4b455002(%rax)`: 0f 1f 80 02 50 45 4b.
#[inline(always)]
pub fn end() {
    // SAFETY: a NOP.
    unsafe { core::arch::asm!("nop dword ptr [rax + 0x4b455002]", options(nostack, preserves_flags)) }
}

/// Runs `f` between the markers and reports the region as `name`, whose
/// figure the host divides by `per` (MiB moved, round trips made).  An
/// `Err` of `f` is reported as not measured instead (the plugin's count of
/// that region is then dropped by the host).
pub fn region<E: core::fmt::Display>(name: &str, per: u64, f: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
    start();
    let r = f();
    end();
    match &r {
        Ok(()) => crate::println!("bench-io: {name} per={per}"),
        Err(e) => crate::println!("bench-io: {name} failed: {e}"),
    }
    r
}
