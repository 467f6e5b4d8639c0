# Hand-written module that must be rejected: clearing 29 low bits could take %rsp
# from the stack area down into the shared area.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	andq $-0x20000000, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
