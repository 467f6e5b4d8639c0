# Hand-written module that must be rejected: the cpuid sequence with a jump instead of the call: the step of %rsp is not checked before the branch.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	leaq -128(%rsp), %rsp
	jmp __sfi_cpuid
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
