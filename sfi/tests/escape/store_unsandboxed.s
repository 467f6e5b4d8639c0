# Hand-written module that must be rejected.
# expect: unsandboxed store
	.text
	.globl f
	.type f, @function
f:
	movq %rax, 8(%rdi)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
