# Hand-written module that must be rejected.
# expect: branch into a sandboxing sequence
	.text
	.globl f
	.type f, @function
f:
	jmp 1f
	.p2align 5
	subq $8, %rsp
	orl $0xf0000000, %esp
1:	addq __sfi_base(%rip), %rsp
	.p2align 5
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
