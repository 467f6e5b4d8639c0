# Hand-written module that must be rejected.
# expect: undecodable instruction
	.text
	.globl f
	.type f, @function
f:
	.byte 0x06
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
