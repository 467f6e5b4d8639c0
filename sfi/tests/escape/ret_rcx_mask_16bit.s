# Hand-written module that must be rejected: the %rcx return with a 16-bit mask, which leaves bits
# 16-63 of the popped address as the domain wrote them.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %rcx
	andw $-32, %cx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
