//! Trusted transition code between the embedder and fault domains.
//!
//! Per-thread state lives in a small TLS block (local-exec model, so these
//! stubs reach it with one %fs-relative access):
//!   0 host_rsp   host stack pointer saved by the innermost `sfi_enter`
//!   8 domain     `*const DomainRt` of the innermost active call
//!  16 gs_base    base currently loaded into %gs (0 = unknown)
//!  24 status     0 = running/returned, else a `Status` value set on abort
//!  32 info0, 40 info1, 48 info2   details of a fault (signal, address, rip)
//!
//! `DomainRt` layout (repr(C)): 0 base, 8 host table, 16 in_call flag.

use std::arch::global_asm;

global_asm!(
    include_str!("x87_empty.s"),
    r#"
    .section .tbss,"awT",@nobits
    .p2align 6
    .globl sfi_tls
sfi_tls:
    .zero 64


    .text
    .p2align 5
    .globl sfi_stub_start
sfi_stub_start:

    .globl sfi_tls_ptr
sfi_tls_ptr:
    mov %fs:0, %rax
    lea sfi_tls@tpoff(%rax), %rax
    ret

    // Ret sfi_enter(const DomainRt *rt, u64 target, u64 stack_top, const u64 *args)
    // Returns %rax = the domain's result, %rdx = status (0 = returned).
    .p2align 5
    .globl sfi_enter
sfi_enter:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    pushq %fs:sfi_tls@tpoff          // outer call's host_rsp and domain (nested calls)
    pushq %fs:sfi_tls@tpoff+8
    mov %rsp, %fs:sfi_tls@tpoff
    mov %rdi, %fs:sfi_tls@tpoff+8
    movq $0, %fs:sfi_tls@tpoff+24
    mov (%rdi), %r14
    cmp %r14, %fs:sfi_tls@tpoff+16
    jne 3f
1:
    mov %rsi, %r11
    mov %rdx, %rsp
    mov %rcx, %rax
    mov (%rax), %rdi
    mov 8(%rax), %rsi
    mov 16(%rax), %rdx
    mov 24(%rax), %rcx
    mov 32(%rax), %r8
    mov 40(%rax), %r9
    xor %ebx, %ebx
    xor %ebp, %ebp
    xor %r10d, %r10d
    xor %r12d, %r12d
    xor %r13d, %r13d
    xor %r15d, %r15d
    // The entry trampoline (domain offset 0xfff6) calls *%r11 masked, so the
    // domain's return lands on trampoline 0 and the return-stack predictor
    // pairs that call with the domain's ret.
    lea 0xfff6(%r14), %rax
    jmp *%rax
3:
    wrgsbase %r14
    mov %r14, %fs:sfi_tls@tpoff+16
    jmp 1b

    // Reached from trampoline 0 when the domain's entry function returns.
    .p2align 5
    .globl sfi_return_from_domain
sfi_return_from_domain:
    mov %fs:sfi_tls@tpoff, %rsp
    // Also the landing point of faults, timeouts and sfi_abort (rsp = host_rsp).
    .globl sfi_unwind
sfi_unwind:
    X87_EMPTY                       // the host's x87 stack is empty
    popq %fs:sfi_tls@tpoff+8
    popq %fs:sfi_tls@tpoff
    mov %fs:sfi_tls@tpoff+24, %rdx
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbx
    pop %rbp
    ret

    // Reached from import trampoline i with r10 = i; the domain's return
    // address is at (%rsp).  Runs the host function on the host stack.
    .p2align 5
    .globl sfi_host_call
sfi_host_call:
    mov %rsp, %r11
    mov %fs:sfi_tls@tpoff, %rsp
    push %r11
    mov %fs:sfi_tls@tpoff+8, %r11
    mov 8(%r11), %r11
    X87_EMPTY                       // host functions start with an empty x87 stack
    call *(%r11,%r10,8)
    // Our base, from the call state (the domain's registers are not trusted;
    // %r10 and %r11 are call-clobbered and carry no result).  A nested call into
    // another domain may have changed %gs.
    mov %fs:sfi_tls@tpoff+8, %r10
    mov (%r10), %r10
    cmp %r10, %fs:sfi_tls@tpoff+16
    jne 4f
2:
    pop %rsp
    pop %r11
    and $-32, %r11d
    add %r10, %r11
    push %r11
    ret
4:
    wrgsbase %r10
    mov %r10, %fs:sfi_tls@tpoff+16
    jmp 2b

    // noreturn sfi_abort(): unwind the innermost domain call (status already set).
    .p2align 5
    .globl sfi_abort
sfi_abort:
    mov %fs:sfi_tls@tpoff, %rsp
    jmp sfi_unwind

    .globl sfi_stub_end
sfi_stub_end:
    .text
"#,
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
