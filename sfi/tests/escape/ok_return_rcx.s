# Hand-written module that must be accepted: the return sequence sfi-cc writes in
# compiled code, through %rcx (13 bytes, no REX prefix), after a call that ends at
# a bundle end.
# expect: accepted
	.text
	.globl f
	.type f, @function
f:
	.nops 27
	call g
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
	.p2align 5
g:
	movq %rdi, %rax
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
	pushq %rcx
	ret
	int3
