# Hand-written module that must be rejected: the register is masked and based, then
# overwritten with a forged return address before the push.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	movq %rdi, %r11
	pushq %r11
	ret
