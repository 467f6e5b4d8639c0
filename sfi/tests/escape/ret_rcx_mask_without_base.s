# Hand-written module that must be rejected: the %rcx return without the base add: the pushed
# address is a masked offset in the low 4 GiB of the address space, not in the domain.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andl $-32, %ecx
	pushq %rcx
	ret
