# Hand-written module that must be rejected.
# expect: branch into the middle of an instruction
	.text
	.globl f
	.type f, @function
f:
	jmp 1f+2
1:	movabsq $0x050f050f050f050f, %rax
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
