# setjmp/longjmp for the mini libc.  Plain x86-64 assembly: sfi-cc rewrites
# it like compiler output (stores through %gs, masked jump, re-based %rsp).
	.text
	.globl setjmp
	.type setjmp, @function
setjmp:
	movq %rbx, (%rdi)
	movq %rbp, 8(%rdi)
	movq %r12, 16(%rdi)
	movq %r13, 24(%rdi)
	movq %r15, 32(%rdi)
	movq %r14, 56(%rdi)
	leaq 8(%rsp), %rdx
	movq %rdx, 40(%rdi)
	movq (%rsp), %rdx
	movq %rdx, 48(%rdi)
	xorl %eax, %eax
	ret
	.size setjmp, .-setjmp

	.globl longjmp
	.type longjmp, @function
longjmp:
	movl %esi, %eax
	testl %eax, %eax
	jne 1f
	incl %eax
1:
	movq (%rdi), %rbx
	movq 8(%rdi), %rbp
	movq 16(%rdi), %r12
	movq 24(%rdi), %r13
	movq 32(%rdi), %r15
	movq 56(%rdi), %r14
	movq 48(%rdi), %rdx
	movq 40(%rdi), %rsp
	jmp *%rdx
	.size longjmp, .-longjmp
	.section .note.GNU-stack,"",@progbits
