# Hand-written module that must be rejected: the masked register is not the one pushed.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %rax
	ret
