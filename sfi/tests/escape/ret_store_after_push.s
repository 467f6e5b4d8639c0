# Hand-written module that must be rejected: a store between the push of the masked
# address and the ret forges the slot the ret reads.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	movq %rdi, (%rsp)
	ret
