//! Trusted transition code between the embedder and its fault domains: the
//! stubs shared with the host runtime (`sfi/runtime/src/stubs.s`).
//!
//! Keep programs have no thread-local storage, so the state of the domain
//! call lives in one static block, `sfi_state`: one thread of a process
//! calls into domains (the fault-handler thread only reads it, and writes
//! it while that thread is stopped).  Words as in `stubs.s`; 32 vector,
//! 40 address, 48 rip of a fault; 56 seq, the calls entered so far (the
//! watchdog's clock).

use core::arch::global_asm;

global_asm!(
    include_str!("../../../../sfi/runtime/src/x87_empty.s"),
    r#"
    .bss
    .p2align 6
    .globl sfi_state
sfi_state:
    .zero 64

    .macro ST_PUSH off
    pushq sfi_state+\off(%rip)
    .endm
    .macro ST_POP off
    popq sfi_state+\off(%rip)
    .endm
    .macro ST_LOAD off, reg
    mov sfi_state+\off(%rip), \reg
    .endm
    .macro ST_STORE reg, off
    mov \reg, sfi_state+\off(%rip)
    .endm
    .macro ST_CMP reg, off
    cmp \reg, sfi_state+\off(%rip)
    .endm
    .macro ST_ZERO off
    movq $0, sfi_state+\off(%rip)
    .endm
    .macro ST_COUNT
    incq sfi_state+56(%rip)
    .endm
    .macro ST_EXTRA
    .endm
"#,
    include_str!("../../../../sfi/runtime/src/stubs.s"),
    options(att_syntax)
);

/// Returned in %rax:%rdx by `sfi_enter`.
#[repr(C)]
pub struct EnterResult {
    pub value: u64,
    pub status: u64,
}

/// Word indexes of `sfi_state`.
pub const HOST_RSP: usize = 0;
pub const DOMAIN: usize = 1;
pub const STATUS: usize = 3;
pub const VECTOR: usize = 4;
pub const ADDR: usize = 5;
pub const RIP: usize = 6;
pub const SEQ: usize = 7;

unsafe extern "C" {
    pub fn sfi_enter(rt: *const u8, target: u64, stack_top: u64, args: *const u64) -> EnterResult;
    pub static mut sfi_state: [u64; 8];
    pub static sfi_return_from_domain: u8;
    pub static sfi_unwind: u8;
    pub static sfi_host_call: u8;
    pub static sfi_stub_start: u8;
    pub static sfi_stub_end: u8;
}

/// Reads word `i` of the state block (written by the other thread or the stubs).
pub fn state(i: usize) -> u64 {
    // SAFETY: an aligned word of a static block; volatile because the
    // stubs and the other thread change it behind the compiler's back.
    unsafe { (&raw const sfi_state).cast::<u64>().add(i).read_volatile() }
}

pub fn set_state(i: usize, v: u64) {
    // SAFETY: as in `state`; the writer is the handler while the calling
    // thread waits or is stopped.
    unsafe { (&raw mut sfi_state).cast::<u64>().add(i).write_volatile(v) }
}

pub fn addr_of(sym: &u8) -> u64 {
    sym as *const u8 as u64
}
