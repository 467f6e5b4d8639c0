# Hand-written module that must be rejected: the code ends before the small step of %rsp was checked.
# sfi-ld ends every module's code with int3 (rule 10), and int3 is a trap, which rule 5 refuses
# inside an unchecked step; code that ends right after the step is tests/corpus's step_at_end.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	.nops 28
	subq $64, %rsp
