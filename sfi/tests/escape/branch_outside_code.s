# Hand-written module that must be rejected.
# expect: direct branch outside the code segment
	.text
	.globl f
	.type f, @function
f:
	jmp f+0x100000
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
