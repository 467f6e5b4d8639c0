# Hand-written module that must be rejected: a small step of %rsp may wait for its checking access, but a branch before that would carry the unchecked %rsp to the target.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	subq $64, %rsp
	jmp 1f
1:	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
