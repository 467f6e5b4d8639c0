# Hand-written module that must be rejected.
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	.nops 26
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
