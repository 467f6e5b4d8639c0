# Hand-written module that must be rejected: the %rcx return with a write of %cl between the base
# add and the push, which changes the low byte of the masked address (an unaligned target).
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	movb %dil, %cl
	pushq %rcx
	ret
