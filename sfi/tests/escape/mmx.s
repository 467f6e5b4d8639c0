# Hand-written module that must be rejected.
# expect: instruction set not allowed
	.text
	.globl f
	.type f, @function
f:
	paddb %mm0, %mm1
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
