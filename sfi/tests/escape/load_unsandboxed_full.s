# Hand-written module that must be rejected (full protection claimed).
# flags: --full
# expect: unsandboxed load
	.text
	.globl f
	.type f, @function
f:
	movq 8(%rdi), %rax
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
