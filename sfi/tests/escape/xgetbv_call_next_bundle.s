# Hand-written module that must be rejected: the xgetbv sequence calling the entry page's bundle after the xgetbv entry (int3, no entry).
# expect: direct branch outside the code segment
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_xgetbv+32
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
