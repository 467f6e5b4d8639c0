# Hand-written module that must be accepted: every sandboxing sequence by hand.
# expect: accepted
	.text
	.globl f
	.type f, @function
f:
	movq %rax, %gs:8(%edi)          # sandboxed store
	movq %rax, -8(%rsp)             # %rsp-relative store
	movq 16(%rdi), %rax             # loads are free in stores-only mode
	subq $64, %rsp                  # %rsp change, re-sandboxed in the same bundle
	orl $0xf0000000, %esp
	addq __sfi_base(%rip), %rsp
	andq $-16, %rsp                 # clearing low bits keeps %rsp in the stack area
	movq %rbx, (%rsp)
	.p2align 5
	.nops 20
	andl $-32, %eax                 # indirect call, ends at a bundle end
	addq __sfi_base(%rip), %rax
	call *%rax
	call g
	popq %r11
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	jmp *%r11
	.p2align 5
	.globl g
	.type g, @function
g:
	movq %rax, %gs:(%eax,%ebx,8)
	popq %r11                       # return through the pushed masked address
	andl $-32, %r11d
	addq __sfi_base(%rip), %r11
	pushq %r11
	ret
	.p2align 5
