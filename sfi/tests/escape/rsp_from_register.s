# Hand-written module that must be rejected.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
