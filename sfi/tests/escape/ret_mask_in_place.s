# Hand-written module that must be rejected: the return address masked in place on
# the stack (one instruction instead of pop, mask, add, push) leaves its upper half
# as the domain wrote it, so the ret could reach any 4 GiB region.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, 4(%rsp)
	andl $-32, (%rsp)
	ret
