# Hand-written module that must be rejected: the %rcx return (sfi-cc's return in compiled code) with a 64-bit mask,
# which keeps the upper half of the popped address, so base + address can lie anywhere.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andq $-32, %rcx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
