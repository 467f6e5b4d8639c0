//! Trusted transition code between the embedder and fault domains: the
//! stubs shared with Keep's runtime (`stubs.s`), with the call state in a
//! small TLS block (local-exec model, so the stubs reach it with one
//! %fs-relative access; word 32 holds the signal, 40 the address, 48 the rip
//! of a fault).

use std::arch::global_asm;

global_asm!(
    include_str!("x87_empty.s"),
    r#"
    .section .tbss,"awT",@nobits
    .p2align 6
    .globl sfi_tls
sfi_tls:
    .zero 64

    .macro ST_PUSH off
    pushq %fs:sfi_tls@tpoff+\off
    .endm
    .macro ST_POP off
    popq %fs:sfi_tls@tpoff+\off
    .endm
    .macro ST_LOAD off, reg
    mov %fs:sfi_tls@tpoff+\off, \reg
    .endm
    .macro ST_STORE reg, off
    mov \reg, %fs:sfi_tls@tpoff+\off
    .endm
    .macro ST_CMP reg, off
    cmp \reg, %fs:sfi_tls@tpoff+\off
    .endm
    .macro ST_ZERO off
    movq $0, %fs:sfi_tls@tpoff+\off
    .endm
    .macro ST_COUNT
    .endm
    // noreturn sfi_abort(): unwind the innermost domain call (status already set).
    .macro ST_EXTRA
    .p2align 5
    .globl sfi_abort
sfi_abort:
    mov %fs:sfi_tls@tpoff, %rsp
    jmp sfi_unwind
    .endm

    .text
    .globl sfi_tls_ptr
sfi_tls_ptr:
    mov %fs:0, %rax
    lea sfi_tls@tpoff(%rax), %rax
    ret
"#,
    include_str!("stubs.s"),
    options(att_syntax)
);

/// Returned in %rax:%rdx by `sfi_enter`.
#[repr(C)]
pub struct EnterResult {
    pub value: u64,
    pub status: u64,
}

extern "C" {
    pub fn sfi_tls_ptr() -> *mut u64;
    pub fn sfi_enter(rt: *const u8, target: u64, stack_top: u64, args: *const u64) -> EnterResult;
    pub fn sfi_abort() -> !;
    pub static sfi_return_from_domain: u8;
    pub static sfi_unwind: u8;
    pub static sfi_host_call: u8;
    pub static sfi_stub_start: u8;
    pub static sfi_stub_end: u8;
}
