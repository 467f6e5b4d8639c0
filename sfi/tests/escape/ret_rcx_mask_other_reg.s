# Hand-written module that must be rejected: the %rcx return whose mask is applied to %ecx's
# neighbour %edx; %rcx, pushed, is only based, not masked.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andl $-32, %edx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
