# Hand-written module that must be rejected: the %rcx return whose base is added to %rdx, so the
# pushed %rcx is a masked offset without the domain base (an address in the low 4 GiB).
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rdx
	pushq %rcx
	ret
