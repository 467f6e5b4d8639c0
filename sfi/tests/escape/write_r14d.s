# Hand-written module that must be rejected.
# expect: writes dedicated register %r14
	.text
	.globl f
	.type f, @function
f:
	xorl %r14d, %r14d
	popq %r11
	andl $-32, %r11d
	addq %r14, %r11
	jmp *%r11
