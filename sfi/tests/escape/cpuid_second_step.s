# Hand-written module that must be rejected: a second step of %rsp before the first is checked.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	subq $64, %rsp
	.p2align 5
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_cpuid
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
