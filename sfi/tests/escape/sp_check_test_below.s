# Hand-written module that must be rejected: the check sfi-cc writes after a small step where the flags are dead, but testing below the new %rsp (an access there proves nothing about %rsp).
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	subq $24, %rsp
	testl %esp, -8(%rsp)
	je 1f
1:
	addq $24, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
