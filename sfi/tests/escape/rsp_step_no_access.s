# Hand-written module that must be rejected: lea, prefetch and nop name %rsp but do not touch memory, so they do not check it.
# expect: branch before the stack pointer was checked
	.text
	.globl f
	.type f, @function
f:
	subq $64, %rsp
	leaq (%rsp), %rax
	prefetcht0 (%rsp)
	nopl (%rsp)
	jmp 1f
1:	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
