# Hand-written module that must be rejected.
# expect: branch into a sandboxing sequence
	.text
	.globl f
	.type f, @function
f:
	jmp 1f
	.p2align 5
	subq $8, %rsp
	movl %esp, %esp
1:	addq %r14, %rsp
	popq %r11
	andl $-32, %r11d
	addq %r14, %r11
	jmp *%r11
