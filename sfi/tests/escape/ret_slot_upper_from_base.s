# Hand-written module that must be rejected: the slot masked in place and its upper
# half written from the base slot.  Sound as written, but not rule 9's return (the
# ret would read two 4-byte stores as one load, which the CPU does not forward,
# docs/sfi.md "Why the return is not shorter"); the verifier accepts one form only.
# expect: return instruction
	.text
	.globl f
	.type f, @function
f:
	andl $-32, (%rsp)
	movl __sfi_base+4(%rip), %ecx
	movl %ecx, 4(%rsp)
	ret
