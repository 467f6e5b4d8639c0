# Hand-written module that must be rejected.
# expect: transactional memory instruction
	.text
	.globl f
	.type f, @function
f:
	xbegin 1f
1:
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
