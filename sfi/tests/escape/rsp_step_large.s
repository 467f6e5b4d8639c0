# Hand-written module that must be rejected: a step of more than 64 KiB could go past the never-mapped gap below the stack area, so it is re-sandboxed at once.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	subq $0x10008, %rsp
	movq %rax, (%rsp)
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
