# Hand-written module that must be rejected: a %gs override on the base slot
# reads B + B + slot (and a RIP-relative %gs access is not a sandboxed load).
# expect: unsandboxed load
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq %gs:__sfi_base(%rip), %r11
	jmp *%r11
