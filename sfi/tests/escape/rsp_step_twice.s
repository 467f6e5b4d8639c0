# Hand-written module that must be rejected: two small steps of %rsp before a check add up; each must be checked (or re-sandboxed) before the next.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	subq $65536, %rsp
	subq $65536, %rsp
	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
