# Hand-written module that must be rejected: %r14 is an ordinary register
# (the domain can write it); the base comes only from the base slot.
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	movq $0, %r14
	popq %r11
	andl $-32, %r11d
	addq %r14, %r11
	jmp *%r11
