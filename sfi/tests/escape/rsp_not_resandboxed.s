# Hand-written module that must be rejected: a step of %rsp by a register is never checked later, only re-sandboxed at once (rule 5).
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	subq %rax, %rsp
	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
