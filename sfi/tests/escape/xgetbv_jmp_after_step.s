# Hand-written module that must be rejected: the xgetbv sequence with a jump instead of the call: the step of %rsp is not checked before the branch.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	leaq -128(%rsp), %rsp
	jmp __sfi_xgetbv
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
