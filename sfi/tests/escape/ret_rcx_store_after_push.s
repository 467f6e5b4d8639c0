# Hand-written module that must be rejected: the %rcx return with a store to the slot between the
# push and the ret.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	movq %rdi, (%rsp)
	ret
