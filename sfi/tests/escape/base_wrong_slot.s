# Hand-written module that must be rejected: the base is added from another
# RIP-relative slot (here in the module's data, which the domain can write).
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq fake(%rip), %r11
	jmp *%r11
	.data
fake:	.quad 0
