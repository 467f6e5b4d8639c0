# Hand-written module that must be rejected: a raw xgetbv (sfi-cc rewrites it, and its byte form, into a call of the runtime's xgetbv entry).
# expect: instruction set not allowed
	.text
	.globl f
	.type f, @function
f:
	xorl %ecx, %ecx
	xgetbv
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
