# Hand-written module that must be rejected.
# expect: direct branch outside the code segment
	.text
	.globl f
	.type f, @function
f:
	call f-0x10000+0x40
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
