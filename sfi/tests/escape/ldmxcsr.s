# Hand-written module that must be rejected.
# expect: control-state instruction
	.text
	.globl f
	.type f, @function
f:
	ldmxcsr (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
