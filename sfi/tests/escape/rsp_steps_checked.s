# Hand-written module that must be accepted: small steps of %rsp checked by a later access: a store at %rsp + 8 after other instructions, a call, a pop, a push, an access at 64 KiB.
# expect: accepted
	.text
	.globl f
	.type f, @function
f:
	subq $24, %rsp
	movq %rax, %gs:(%edi)
	movq %rax, 8(%rsp)
	subq $8, %rsp
	call f
	.p2align 5
	addq $16, %rsp
	popq %rbx
	subq $65536, %rsp
	pushq %rax
	.p2align 5
	addq $65536, %rsp
	movq 65536(%rsp), %rax
	addq $8, %rsp
	.p2align 5
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
