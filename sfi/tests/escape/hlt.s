# Hand-written module that must be rejected.
# expect: privileged instruction
	.text
	.globl f
	.type f, @function
f:
	hlt
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
