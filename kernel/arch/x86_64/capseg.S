/* The capability-segment probe.  capseg_load(slot, out) loads a capability
 * through the kernel-only alias of the current capability space.  If no
 * cappage is mapped there the first load faults; trap_from_kernel finds the
 * faulting rip at capseg_load_insn and resumes at capseg_load_fixup, which
 * returns 1.  The second load is on the same page, so it cannot fault. */
    .text
    .globl capseg_load, capseg_load_insn, capseg_load_fixup
capseg_load:
capseg_load_insn:
    mov (%rdi), %rax
    mov 8(%rdi), %rdx
    mov %rax, (%rsi)
    mov %rdx, 8(%rsi)
    xor %eax, %eax
    ret
capseg_load_fixup:
    mov $1, %eax
    ret

    .section .note.GNU-stack, "", @progbits
