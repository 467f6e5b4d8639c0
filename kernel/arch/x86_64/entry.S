/* Kernel entry and exit: the system call, interrupts and exceptions.
 *
 * From user mode every entry saves the user context into the current
 * process's struct regs (TSS.rsp0 and the syscall path both point just past
 * it), then switches to the one kernel stack and calls C, which never returns:
 * it finishes with arch_return_to_user() on whatever process runs next.
 * Nothing stays on the kernel stack between entries (atomic kernel operations).
 *
 * From kernel mode (the idle loop, or a kernel bug) the frame is built on the
 * kernel stack and the handler returns with iretq. */

#include "arch_offsets.h"

    .text

/* Push the general registers in the order of struct regs (r15 lowest). */
.macro PUSH_GPRS
    push %rax
    push %rbx
    push %rcx
    push %rdx
    push %rsi
    push %rdi
    push %rbp
    push %r8
    push %r9
    push %r10
    push %r11
    push %r12
    push %r13
    push %r14
    push %r15
.endm

.macro POP_GPRS
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %r11
    pop %r10
    pop %r9
    pop %r8
    pop %rbp
    pop %rdi
    pop %rsi
    pop %rdx
    pop %rcx
    pop %rbx
    pop %rax
.endm

/* Leave by sysretq from the struct regs at rsp: the callee-saved
 * registers, rip (into rcx), rflags (into r11) and the user rsp. */
.macro SYSRET_REST
    mov REGS_RBX(%rsp), %rbx
    mov REGS_RBP(%rsp), %rbp
    mov REGS_R12(%rsp), %r12
    mov REGS_R13(%rsp), %r13
    mov REGS_R14(%rsp), %r14
    mov REGS_R15(%rsp), %r15
    mov REGS_RIP(%rsp), %rcx
    mov REGS_RFLAGS(%rsp), %r11
    mov REGS_RSP(%rsp), %rsp
    sysretq
.endm

/* syscall: rcx = user rip, r11 = user rflags, interrupts masked by FMASK. */
    .globl syscall_entry
syscall_entry:
    mov %rsp, cpu0 + CPU_USER_RSP(%rip)
    mov tss0 + TSS_RSP0(%rip), %rsp
    pushq $SEL_UDATA
    pushq cpu0 + CPU_USER_RSP(%rip)
    push %r11
    pushq $SEL_UCODE
    push %rcx
    pushq $0
    pushq $VEC_SYSCALL
    PUSH_GPRS
    mov cpu0 + CPU_KSTACK_TOP(%rip), %rsp
#ifdef KCOV
    movb $1, kcov_sys(%rip)     /* the coverage build's scope (kernel/lib/kcov.c) */
    movq $0, kcov_prev(%rip)
#endif
    /* rbp keeps the user's value: a backtrace stops at a frame pointer
     * outside the kernel stack (trap.c), so it needs no clearing here */
    call syscall_dispatch
    ud2

/* One 16-byte stub per vector: push a zero error code where the CPU pushes
 * none, then the vector number, then join the common path.  The CPU raises
 * 17 (#AC: CR0.AM is clear), 21 (#CP: no CET), 29 (#VC: no SEV-ES) and 30
 * (#SX) never here, so those vectors can only be interrupts: no error code.
 * 8 and 10-14 push one as exceptions; err_or_irq tells them from a device's
 * message with the same vector, which pushes none. */
    .align 16
    .globl vector_stubs
vector_stubs:
    .set i, 0
    .rept 256
    .align 16
    .if (i == 8) || (i >= 10 && i <= 14)
    pushq $i
    jmp err_or_irq
    .else
    pushq $0
    pushq $i
    jmp trap_common
    .endif
    .set i, i + 1
    .endr

/* An exception vector that carries an error code.  If the local APIC has
 * the vector in service, this is an interrupt (a stray or forged message:
 * trap.c) and no error code was pushed: put a zero one under the vector so
 * that the frame has its usual shape. */
err_or_irq:                     /* stack: vector, [error code], rip, ... */
    push %rax
    push %rcx
    mov lapic_isr0(%rip), %rax  /* the in-service bits of vectors 0-31, or 0 before the APIC */
    test %rax, %rax
    jz 1f
    mov 16(%rsp), %ecx
    mov (%rax), %eax
    bt %ecx, %eax
    jnc 1f
    pop %rcx
    pop %rax
    pushq (%rsp)                /* vector, vector, rip, ... */
    movq $0, 8(%rsp)            /* vector, 0, rip, ... */
    jmp trap_common
1:  pop %rcx
    pop %rax
    jmp trap_common

trap_common:
    PUSH_GPRS
    testb $3, REGS_CS(%rsp)
    jz 1f
    /* from user mode: the frame is in the process control block */
#ifdef KCOV
    movb $0, kcov_sys(%rip)
#endif
    mov %rsp, %rdi
    mov cpu0 + CPU_KSTACK_TOP(%rip), %rsp
    xor %ebp, %ebp
    call trap_from_user
    ud2
1:  /* from kernel mode: the frame is on the kernel stack */
    mov %rsp, %rdi
    cld
    call trap_from_kernel
    POP_GPRS
    add $16, %rsp
    iretq

/* arch_return_to_user(struct regs *r): leave the kernel into r's context.
 * A context saved by syscall leaves by sysretq (rcx and r11 are clobbered
 * by the syscall contract anyway, so they are not restored); any other
 * leaves by iretq, restoring all. */
    .globl arch_return_to_user
arch_return_to_user:
    mov %rdi, %rsp
    cmpq $VEC_SYSCALL, REGS_VECTOR(%rsp)
    jne 2f
    mov REGS_RAX(%rsp), %rax
    mov REGS_RDX(%rsp), %rdx
    mov REGS_RSI(%rsp), %rsi
    mov REGS_RDI(%rsp), %rdi
    mov REGS_R8(%rsp), %r8
    mov REGS_R9(%rsp), %r9
    mov REGS_R10(%rsp), %r10
    SYSRET_REST
2:  POP_GPRS
    add $16, %rsp
    iretq

/* fastpath_exit(u64 payload, u64 tag, const struct regs *from, struct regs *to):
 * the IPC fast path's way out into `to`, which waited in a system call: its
 * message registers come straight from the sender's saved ones (rax 0,
 * rsi the tag, rdi the payload, rdx r8 r9 r10 from `from`) rather than
 * through to's struct regs, and the rest as arch_return_to_user restores
 * them. */
    .globl fastpath_exit
fastpath_exit:                  /* rdi, rsi: already what `to` gets */
    mov %rcx, %rsp
    mov REGS_R8(%rdx), %r8
    mov REGS_R9(%rdx), %r9
    mov REGS_R10(%rdx), %r10
    mov REGS_RDX(%rdx), %rdx
    xor %eax, %eax
    SYSRET_REST

/* fastpath_exit_words(u64 payload, u64 tag, const u64 *words, struct regs *to):
 * the same with the words from words[0..3] (a fault message's). */
    .globl fastpath_exit_words
fastpath_exit_words:
    mov %rcx, %rsp
    mov 8(%rdx), %r8
    mov 16(%rdx), %r9
    mov 24(%rdx), %r10
    mov (%rdx), %rdx
    xor %eax, %eax
    SYSRET_REST

/* fastpath_exit_word(u64 payload, u64 tag, u64 word, struct regs *to):
 * a kernel object's answer to `to`'s own system call, for the notification
 * fast path: rax 0, rdx the word, r8 r9 r10 0, rsi and rdi as they were
 * (passed back), the rest as arch_return_to_user restores them. */
    .globl fastpath_exit_word
fastpath_exit_word:             /* rdi, rsi, rdx: already what `to` gets */
    mov %rcx, %rsp
    xor %eax, %eax
    xor %r8d, %r8d
    xor %r9d, %r9d
    xor %r10d, %r10d
    SYSRET_REST

    .section .rodata
    .align 8
    .globl vector_table
vector_table:
    .set i, 0
    .rept 256
    .quad vector_stubs + i * 16
    .set i, i + 1
    .endr

    .section .note.GNU-stack, "", @progbits
