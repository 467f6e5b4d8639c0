# Hand-written module that must be rejected: an access below %rsp, more than 64 KiB above it, with an index or through %gs does not prove that %rsp is near the stack.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	subq $64, %rsp
	movq %rax, -8(%rsp)
	movq %rax, 65544(%rsp)
	movq (%rsp,%rbx,1), %rax
	movq %rax, %gs:(%esp)
	jmp 1f
1:	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
