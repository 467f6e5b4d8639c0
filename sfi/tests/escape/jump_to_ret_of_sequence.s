# Hand-written module that must be rejected: the return address is forged on the
# stack and a jump goes straight to the ret of a return sequence.
# expect: branch into a sandboxing sequence
	.text
	.globl f
	.type f, @function
f:
	movq %rdi, (%rsp)
	jmp 1f
	.p2align 5
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
1:	ret
