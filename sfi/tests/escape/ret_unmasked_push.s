# Hand-written module that must be rejected: a pushed address returned to without the mask.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	pushq %rdi
	ret
