# Hand-written module that must be rejected: the mask and the base are applied to
# %r11, but %r10, which holds the forged address, is pushed.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %r10
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r10
	ret
