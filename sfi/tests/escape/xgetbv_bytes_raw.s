# Hand-written module that must be rejected: xgetbv written as bytes, as libsodium and libdeflate write it, assembled without the rewriter: the verifier sees a raw xgetbv.
# expect: instruction set not allowed
	.text
	.globl f
	.type f, @function
f:
	xorl %ecx, %ecx
	.byte 0x0f, 0x01, 0xd0
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
