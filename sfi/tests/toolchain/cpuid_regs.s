# unsigned long preserves(int which, unsigned leaf, unsigned long subleaf):
# runs cpuid (which 0; %eax = leaf, %ecx = subleaf with its upper half
# 0xdeadbeef), rdtsc (1), rdtscp (2) or xgetbv (3; %ecx = 0 with the same
# upper half) with every other register, the flags
# and the red zone set to known values, and returns a bit per thing it
# changed that the instruction does not change (0: none).  Bits: 0-4 CF ZF
# SF OF PF; 5-8 upper halves of %rax %rbx %rcx %rdx not zero where written;
# 9-19 %rbp %rsi %rdi %r8-%r15; 20-35 the 16 red-zone quadwords; 36 %rsp;
# 37 %rbx, 38 %rcx where not written (rdtsc, xgetbv).
    .text
    .globl preserves
    .type preserves, @function
    .p2align 5
preserves:
    push %rbx
    push %rbp
    push %r12
    push %r13
    push %r14
    push %r15
    sub $64, %rsp
    movq $8, -8(%rsp)
    movq $16, -16(%rsp)
    movq $24, -24(%rsp)
    movq $32, -32(%rsp)
    movq $40, -40(%rsp)
    movq $48, -48(%rsp)
    movq $56, -56(%rsp)
    movq $64, -64(%rsp)
    movq $72, -72(%rsp)
    movq $80, -80(%rsp)
    movq $88, -88(%rsp)
    movq $96, -96(%rsp)
    movq $104, -104(%rsp)
    movq $112, -112(%rsp)
    movq $120, -120(%rsp)
    movq $128, -128(%rsp)
    movq $1, 0(%rsp)
    mov %rsp, 40(%rsp)
    mov %edi, 48(%rsp)
    mov %esi, %eax
    movabs $0xdeadbeef00000000, %rcx
    or %rdx, %rcx
    movabs $0x3333333333333333, %rbx
    movabs $0x4444444444444444, %rdx
    movabs $0x5555555555555555, %rbp
    movabs $0x6666666666666666, %rsi
    movabs $0x7777777777777777, %rdi
    movabs $0x0808080808080808, %r8
    movabs $0x0909090909090909, %r9
    movabs $0x0a0a0a0a0a0a0a0a, %r10
    movabs $0x0b0b0b0b0b0b0b0b, %r11
    movabs $0x0c0c0c0c0c0c0c0c, %r12
    movabs $0x0d0d0d0d0d0d0d0d, %r13
    movabs $0x0e0e0e0e0e0e0e0e, %r14
    movabs $0x0f0f0f0f0f0f0f0f, %r15
    cmpl $1, 48(%rsp)
    je 2f
    cmpl $2, 48(%rsp)
    je 3f
    cmpl $3, 48(%rsp)
    je 5f
    cmpq $2, 0(%rsp)                 # CF=1 ZF=0 SF=1 OF=0 PF=1
    cpuid
    jmp 4f
5:
    cmpq $2, 0(%rsp)
    xgetbv
    jmp 4f
2:
    cmpq $2, 0(%rsp)
    rdtsc
    jmp 4f
3:
    cmpq $2, 0(%rsp)
    rdtscp
4:
    setc 0(%rsp)
    setz 1(%rsp)
    sets 2(%rsp)
    seto 3(%rsp)
    setp 4(%rsp)
    mov %rax, 8(%rsp)
    mov %rbx, 16(%rsp)
    mov %rcx, 24(%rsp)
    mov %rdx, 32(%rsp)
    xor %eax, %eax
    cmpb $1, 0(%rsp)
    je 1f
    bts $0, %rax
1:
    cmpb $0, 1(%rsp)
    je 1f
    bts $1, %rax
1:
    cmpb $1, 2(%rsp)
    je 1f
    bts $2, %rax
1:
    cmpb $0, 3(%rsp)
    je 1f
    bts $3, %rax
1:
    cmpb $1, 4(%rsp)
    je 1f
    bts $4, %rax
1:
    mov 8(%rsp), %rbx
    shr $32, %rbx
    jz 1f
    bts $5, %rax
1:
    cmpl $0, 48(%rsp)
    jne 1f
    mov 16(%rsp), %rbx
    shr $32, %rbx
    jz 1f
    bts $6, %rax
1:
    cmpl $1, 48(%rsp)
    je 1f
    cmpl $3, 48(%rsp)
    je 1f
    mov 24(%rsp), %rbx
    shr $32, %rbx
    jz 1f
    bts $7, %rax
1:
    mov 32(%rsp), %rbx
    shr $32, %rbx
    jz 1f
    bts $8, %rax
1:
    movabs $0x5555555555555555, %rbx
    cmp %rbx, %rbp
    je 1f
    bts $9, %rax
1:
    movabs $0x6666666666666666, %rbx
    cmp %rbx, %rsi
    je 1f
    bts $10, %rax
1:
    movabs $0x7777777777777777, %rbx
    cmp %rbx, %rdi
    je 1f
    bts $11, %rax
1:
    movabs $0x0808080808080808, %rbx
    cmp %rbx, %r8
    je 1f
    bts $12, %rax
1:
    movabs $0x0909090909090909, %rbx
    cmp %rbx, %r9
    je 1f
    bts $13, %rax
1:
    movabs $0x0a0a0a0a0a0a0a0a, %rbx
    cmp %rbx, %r10
    je 1f
    bts $14, %rax
1:
    movabs $0x0b0b0b0b0b0b0b0b, %rbx
    cmp %rbx, %r11
    je 1f
    bts $15, %rax
1:
    movabs $0x0c0c0c0c0c0c0c0c, %rbx
    cmp %rbx, %r12
    je 1f
    bts $16, %rax
1:
    movabs $0x0d0d0d0d0d0d0d0d, %rbx
    cmp %rbx, %r13
    je 1f
    bts $17, %rax
1:
    movabs $0x0e0e0e0e0e0e0e0e, %rbx
    cmp %rbx, %r14
    je 1f
    bts $18, %rax
1:
    movabs $0x0f0f0f0f0f0f0f0f, %rbx
    cmp %rbx, %r15
    je 1f
    bts $19, %rax
1:
    cmpq $8, -8(%rsp)
    je 1f
    bts $20, %rax
1:
    cmpq $16, -16(%rsp)
    je 1f
    bts $21, %rax
1:
    cmpq $24, -24(%rsp)
    je 1f
    bts $22, %rax
1:
    cmpq $32, -32(%rsp)
    je 1f
    bts $23, %rax
1:
    cmpq $40, -40(%rsp)
    je 1f
    bts $24, %rax
1:
    cmpq $48, -48(%rsp)
    je 1f
    bts $25, %rax
1:
    cmpq $56, -56(%rsp)
    je 1f
    bts $26, %rax
1:
    cmpq $64, -64(%rsp)
    je 1f
    bts $27, %rax
1:
    cmpq $72, -72(%rsp)
    je 1f
    bts $28, %rax
1:
    cmpq $80, -80(%rsp)
    je 1f
    bts $29, %rax
1:
    cmpq $88, -88(%rsp)
    je 1f
    bts $30, %rax
1:
    cmpq $96, -96(%rsp)
    je 1f
    bts $31, %rax
1:
    cmpq $104, -104(%rsp)
    je 1f
    bts $32, %rax
1:
    cmpq $112, -112(%rsp)
    je 1f
    bts $33, %rax
1:
    cmpq $120, -120(%rsp)
    je 1f
    bts $34, %rax
1:
    cmpq $128, -128(%rsp)
    je 1f
    bts $35, %rax
1:
    cmp %rsp, 40(%rsp)
    je 1f
    bts $36, %rax
1:
    cmpl $0, 48(%rsp)
    je 1f
    movabs $0x3333333333333333, %rbx
    cmp %rbx, 16(%rsp)
    je 1f
    bts $37, %rax
1:
    cmpl $1, 48(%rsp)
    je 2f
    cmpl $3, 48(%rsp)
    jne 1f
2:
    movabs $0xdeadbeef00000000, %rbx
    cmp %rbx, 24(%rsp)
    je 1f
    bts $38, %rax
1:
    add $64, %rsp
    pop %r15
    pop %r14
    pop %r13
    pop %r12
    pop %rbp
    pop %rbx
    ret
    .size preserves, .-preserves
