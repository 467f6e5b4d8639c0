# Hand-written module that must be rejected: the cpuid sequence with a step of %rsp larger than 64 KiB.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 19
	leaq -0x10008(%rsp), %rsp
	call __sfi_cpuid
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
