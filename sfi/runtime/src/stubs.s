# The trusted transition code between an embedder and its fault domains,
# shared by the host runtime (sfi/runtime/src/stubs.rs) and Keep's
# (user/lib/sfi-rt/src/stubs.rs): each includes it into its global_asm! after
# x87_empty.s and its own definitions of the macros below, which say where
# the call state lives (thread-local storage on the host, a static block in
# Keep) and add what only one of them has.
#
#   ST_PUSH off / ST_POP off          push or pop the state word at off
#   ST_LOAD off, reg / ST_STORE reg, off / ST_CMP reg, off
#   ST_ZERO off                       store 0 in the word at off
#   ST_COUNT                          count a call entered (Keep's watchdog)
#   ST_EXTRA                          more code inside the stub range
#
# The state words: 0 host_rsp (saved by the innermost sfi_enter), 8 domain
# (`*const DomainRt` of the innermost active call, 0: none), 16 gs_base
# (the base in %gs, 0 = unknown), 24 status (0 = returned, else a `Status`
# set on a fault or time-out), 32.. the fault's details.
# `DomainRt` (repr(C)): 0 base, 8 host-function table.

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
    ST_PUSH 0                        // outer call's host_rsp and domain (nested calls)
    ST_PUSH 8
    ST_STORE %rsp, 0
    ST_ZERO 24
    ST_COUNT
    ST_STORE %rdi, 8                 // from here on a fault in the domain unwinds to host_rsp
    mov (%rdi), %r14
    ST_CMP %r14, 16
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
    wrgsbase %r14
    ST_STORE %r14, 16
    jmp 1b

    // Reached from trampoline 0 when the domain's entry function returns.
    .p2align 5
    .globl sfi_return_from_domain
sfi_return_from_domain:
    ST_LOAD 0, %rsp
    // Also where faults and time-outs end a call (rsp = host_rsp).
    .globl sfi_unwind
sfi_unwind:
    X87_EMPTY                        // the caller's x87 stack is empty
    ST_POP 8
    ST_POP 0
    ST_LOAD 24, %rdx
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
    ST_LOAD 0, %rsp
    push %r11
    ST_LOAD 8, %r11
    mov 8(%r11), %r11
    X87_EMPTY                        // host functions start with an empty x87 stack
    call *(%r11,%r10,8)
    // Our base, from the call state (the domain's registers are not trusted;
    // %r10 and %r11 are call-clobbered and carry no result).  A nested call
    // into another domain may have changed %gs.
    ST_LOAD 8, %r10
    mov (%r10), %r10
    ST_CMP %r10, 16
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
    ST_STORE %r10, 16
    jmp 2b

    ST_EXTRA

    .globl sfi_stub_end
sfi_stub_end:
    .text
