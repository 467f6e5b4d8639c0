# Hand-written module that must be rejected: the %rcx return split over two bundles: a jump to the
# second bundle's start (a masked jump can reach any) would find a forged %rcx pushed.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 20
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
