# Hand-written module that must be rejected: a call to a bundle of the entry page that is not a runtime entry.
# expect: direct branch outside the code segment
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_cpuid+0x60
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
