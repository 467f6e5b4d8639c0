# Hand-written module that must be rejected: the return address is forged in %rcx
# and a jump goes to the push of an %rcx return sequence, past its mask and base add.
# expect: branch into a sandboxing sequence
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %rcx
	jmp 1f
	.p2align 5
	popq %rcx
	andl $-32, %ecx
	addq __sfi_base(%rip), %rcx
1:	pushq %rcx
	ret
