# Hand-written module that must be rejected: mov %esp,%esp keeps %rsp in the domain
# but not in the stack area, where a pushed return address could be in shared memory.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, %rsp
	movl %esp, %esp
	addq __sfi_base(%rip), %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
