# Hand-written module that must be rejected: a raw cpuid (sfi-cc rewrites it into a call of the runtime's cpuid entry).
# expect: instruction set not allowed
	.text
	.globl f
	.type f, @function
f:
	cpuid
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
