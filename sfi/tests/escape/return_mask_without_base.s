# Hand-written module that must be rejected.
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	jmp *%r11
