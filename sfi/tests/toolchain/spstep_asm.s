# Small %rsp steps that no access checks before a branch (sfi-cc's
# defer_sp_checks): where the flags are dead after the step, sfi-cc checks
# it at once (`sub $8` as a push, another step by a `test` of the new top);
# where something reads the step's flags, it keeps the full fix-up.
    .text
# int flags_after_step(void): ZF of `sub $8, %rsp`, which reads as 0; a
# push in its place would leave the compare's ZF = 1.
    .globl flags_after_step
    .type flags_after_step, @function
flags_after_step:
    xorl %eax, %eax
    cmpl %eax, %eax
    subq $8, %rsp
    setz %al
    addq $8, %rsp
    ret
    .size flags_after_step, .-flags_after_step

# long step_then_branch(long x): a prologue that tests its argument before
# any access: x ? 2x + 1 : 0.
    .globl step_then_branch
    .type step_then_branch, @function
step_then_branch:
    subq $8, %rsp
    testq %rdi, %rdi
    je 1f
    movq %rdi, (%rsp)
    movq (%rsp), %rax
    leaq 1(%rax,%rax), %rax
    addq $8, %rsp
    ret
1:
    xorl %eax, %eax
    addq $8, %rsp
    ret
    .size step_then_branch, .-step_then_branch

# long step24_then_branch(long x): the same with a 24-byte frame.
    .globl step24_then_branch
    .type step24_then_branch, @function
step24_then_branch:
    subq $24, %rsp
    cmpq $0, %rdi
    je 1f
    movq %rdi, 16(%rsp)
    movq 16(%rsp), %rax
    leaq 3(%rax,%rax), %rax
    addq $24, %rsp
    ret
1:
    xorl %eax, %eax
    addq $24, %rsp
    ret
    .size step24_then_branch, .-step24_then_branch
