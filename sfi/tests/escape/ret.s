# Hand-written module that must be rejected.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	ret
