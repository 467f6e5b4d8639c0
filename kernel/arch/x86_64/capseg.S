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


/* The user-word probe of the IPC fast path.  user_load(va, out) reads one
 * word of the current address space's user half (the caller checked that va
 * lies there); a fault resumes at user_load_fixup, which returns 1.  With
 * SMAP on, the access is bracketed by stac and clac. */
    .text
    .globl user_load, user_load_insn, user_load_fixup
user_load:
    testb $1, smap_on(%rip)
    jz 1f
    stac
1:
user_load_insn:
    mov (%rdi), %rax
    testb $1, smap_on(%rip)
    jz 2f
    clac
2:  mov %rax, (%rsi)
    xor %eax, %eax
    ret
user_load_fixup:
    testb $1, smap_on(%rip)
    jz 3f
    clac
3:  mov $1, %eax
    ret

    .section .note.GNU-stack, "", @progbits
