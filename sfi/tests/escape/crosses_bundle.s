# Hand-written module that must be rejected.
# expect: instruction crosses a bundle boundary
	.text
	.globl f
	.type f, @function
f:
	.nops 28
	movl $1, %eax
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
