# Hand-written module that must be rejected: the code ends before the small step of %rsp was checked.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	.nops 28
	subq $64, %rsp
