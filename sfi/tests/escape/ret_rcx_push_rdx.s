# Hand-written module that must be rejected: the %rcx return pushing %rdx (the second return-value
# register, which the domain controls) instead of the masked %rcx.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %rdx
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	pushq %rdx
	ret
