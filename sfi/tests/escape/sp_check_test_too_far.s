# Hand-written module that must be rejected: the check after a small step at more than 64 KiB above the new %rsp.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	subq $24, %rsp
	testl %esp, 0x10008(%rsp)
	je 1f
1:
	addq $24, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
