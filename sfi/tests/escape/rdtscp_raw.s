# Hand-written module that must be rejected: a raw rdtscp.
# expect: instruction set not allowed
	.text
	.globl f
	.type f, @function
f:
	rdtscp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
