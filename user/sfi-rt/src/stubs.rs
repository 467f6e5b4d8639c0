//! Trusted transition code between the embedder and its fault domains.
//!
//! Keep programs have no thread-local storage, so the state of the domain
//! call lives in one static block, `sfi_state`: one thread of a process
//! calls into domains (the fault-handler thread only reads it, and writes
//! it while that thread is stopped).
//!
//!   0 host_rsp   host stack pointer saved by the innermost `sfi_enter`
//!   8 domain     `*const DomainRt` of the innermost active call (0: none)
//!  16 gs_base    base currently in %gs (0 = unknown)
//!  24 status     0 = returned, else a `Status` set by the handler
//!  32 vector, 40 address, 48 rip   of a fault
//!  56 seq        calls entered so far (the watchdog's clock)
//!
//! `DomainRt` (repr(C)): 0 base, 8 host-function table.

use core::arch::global_asm;

global_asm!(
    include_str!("../../../sfi/runtime/src/x87_empty.s"),
    r#"
    .bss
    .p2align 6
    .globl sfi_state
sfi_state:
    .zero 64

    .text
    .p2align 5
    .globl sfi_stub_start
sfi_stub_start:

    // EnterResult sfi_enter(const DomainRt *rt, u64 target, u64 stack_top, const u64 *args)
    // Returns %rax = the domain's result, %rdx = status (0 = returned).
    .globl sfi_enter
sfi_enter:
    push %rbp
    push %rbx
    push %r12
    push %r13
    push %r14
    push %r15
    pushq sfi_state(%rip)            // outer call's host_rsp and domain (nested calls)
    pushq sfi_state+8(%rip)
    mov %rsp, sfi_state(%rip)
    movq $0, sfi_state+24(%rip)
    incq sfi_state+56(%rip)
    mov %rdi, sfi_state+8(%rip)      // from here on a fault in the domain unwinds to host_rsp
    mov (%rdi), %r14
    cmp %r14, sfi_state+16(%rip)
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
    xor %ebx, %ebx                   // no host pointer leaks into the domain
    xor %ebp, %ebp
    xor %r10d, %r10d
    xor %r12d, %r12d
    xor %r13d, %r13d
    xor %r15d, %r15d
    // The entry sequence ending at domain offset 0x10000 calls *%r11
    // masked, so the domain returns to trampoline 0 and the return-stack
    // predictor pairs that call with the domain's ret.
    lea 0xfff6(%r14), %rax
    jmp *%rax
3:
    wrgsbase %r14                    // the kernel keeps it per process (CR4.FSGSBASE)
    mov %r14, sfi_state+16(%rip)
    jmp 1b

    // Reached from trampoline 0 when the domain's entry function returns.
    .p2align 5
    .globl sfi_return_from_domain
sfi_return_from_domain:
    mov sfi_state(%rip), %rsp
    // Also where the fault handler resumes a faulting or overdue call (rsp = host_rsp).
    .globl sfi_unwind
sfi_unwind:
    X87_EMPTY                       // the caller's x87 stack is empty
    popq sfi_state+8(%rip)
    popq sfi_state(%rip)
    mov sfi_state+24(%rip), %rdx
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
    mov sfi_state(%rip), %rsp
    push %r11
    mov sfi_state+8(%rip), %r11
    mov 8(%r11), %r11
    X87_EMPTY                       // host functions start with an empty x87 stack
    call *(%r11,%r10,8)
    // Our base, from the call state (the domain's registers are not trusted;
    // %r10 and %r11 are call-clobbered and carry no result).  A nested call
    // into another domain may have changed %gs.
    mov sfi_state+8(%rip), %r10
    mov (%r10), %r10
    cmp %r10, sfi_state+16(%rip)
    jne 4f
2:
    pop %rsp
    pop %r11                         // the domain's return address: untrusted, masked
    and $-32, %r11d
    add %r10, %r11
    push %r11
    ret
4:
    wrgsbase %r10
    mov %r10, sfi_state+16(%rip)
    jmp 2b

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
