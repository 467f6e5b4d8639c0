# Hand-written module that must be rejected: the %rsp fix-up adds %r14, which
# the domain controls, instead of the base slot.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	subq $64, %rsp
	orl $0xf0000000, %esp
	addq %r14, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
