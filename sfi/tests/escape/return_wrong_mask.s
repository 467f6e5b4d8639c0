# Hand-written module that must be rejected.
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-16, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
