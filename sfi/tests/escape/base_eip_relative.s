# Hand-written module that must be rejected: an %eip-relative read of the base
# slot wraps to the low 4 GiB of the address space, outside the domain.
# expect: indirect branch not sandboxed
	.text
	.globl f
	.type f, @function
f:
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%eip), %r11
	jmp *%r11
