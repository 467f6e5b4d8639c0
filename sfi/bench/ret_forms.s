# The return sequences compared by ret_forms.c (docs/sfi.md, "Why the return
# is not shorter"), natively: the same function (one lea) returning by a plain
# ret, by the masked push/ret (sfi-cc's), by masking the slot in place and
# writing its upper half from the base (two 4-byte stores the ret reads as one
# 8-byte load), and by NaCl's and LFI's masked jmp.  `base` stands for the
# base slot: the upper half of this code's addresses, so that every form
# returns where the plain ret does.  Each caller's call ends at a bundle end.
	.section .note.GNU-stack, "", @progbits
	.data
	.p2align 3
base:	.quad 0
	.text
	.globl setbase
setbase:
	leaq setbase(%rip), %rax
	movabsq $0xffffffff00000000, %rcx
	andq %rcx, %rax
	movq %rax, base(%rip)
	ret
	.p2align 5
f_plain:
	leaq 1(%rdi), %rax
	ret
	.p2align 5
f_push:
	leaq 1(%rdi), %rax
	popq %rcx
	andl $-32, %ecx
	addq base(%rip), %rcx
	pushq %rcx
	ret
	.p2align 5
f_split:
	leaq 1(%rdi), %rax
	andl $-32, (%rsp)
	movl base+4(%rip), %ecx
	movl %ecx, 4(%rsp)
	ret
	.p2align 5
f_jmp:
	leaq 1(%rdi), %rax
	popq %rcx
	andl $-32, %ecx
	addq base(%rip), %rcx
	jmp *%rcx
.macro LOOP name, fn
	.globl \name
	.p2align 5
\name:
	pushq %rbx
	movq %rdi, %rbx
	xorl %edi, %edi
	.p2align 5
1:
	.nops 27
	call \fn
	movq %rax, %rdi
	.nops 6
	subq $1, %rbx
	jnz 1b
	popq %rbx
	ret
.endm
LOOP loop_plain, f_plain
LOOP loop_push, f_push
LOOP loop_split, f_split
LOOP loop_jmp, f_jmp
