# Hand-written module that must be rejected: clearing 17 low bits could take %rsp below the 64 KiB that a checking access may leave it under the stack area.
# expect: stack pointer changed without re-sandboxing
	.text
	.globl f
	.type f, @function
f:
	andq $-0x20000, %rsp
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
