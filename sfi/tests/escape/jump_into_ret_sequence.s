# Hand-written module that must be rejected: a jump to the push of a return sequence
# would return to an unmasked address.
# expect: branch into a sandboxing sequence
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %r11
	jmp 1f
	.p2align 5
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
1:	pushq %r11
	ret
