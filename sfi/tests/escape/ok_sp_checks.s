# Hand-written module that must be accepted: the checks sfi-cc writes after a small step where the flags are dead: sub $8 as a push, another step followed at once by a test of the new top, each before a branch.
# expect: accepted
	.text
	.globl f
	.type f, @function
f:
	pushq %rax
	testq %rdi, %rdi
	je 2f
2:
	popq %rax
	subq $24, %rsp
	testl %esp, (%rsp)
	je 1f
	.p2align 5
1:
	addq $24, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
