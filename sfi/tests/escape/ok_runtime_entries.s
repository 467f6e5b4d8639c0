# Hand-written module that must be accepted: the sequences sfi-cc writes for cpuid, rdtsc, rdtscp and xgetbv (a step of %rsp over the red zone, checked by the call of the runtime entry, which ends at a bundle end).
# expect: accepted
	.text
	.globl f
	.type f, @function
f:
	.p2align 5
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_cpuid
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_rdtsc
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_rdtscp
	.nops 22
	leaq -128(%rsp), %rsp
	call __sfi_xgetbv
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
