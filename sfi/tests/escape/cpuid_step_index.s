# Hand-written module that must be rejected: the cpuid sequence with an index register in the step.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 21
	leaq -128(%rsp,%rax), %rsp
	call __sfi_cpuid
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
