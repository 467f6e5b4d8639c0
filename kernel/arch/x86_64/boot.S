/* Multiboot entry and the 32- to 64-bit trampoline.
 *
 * QEMU's -kernel loader refuses 64-bit ELF files, so the header uses the
 * multiboot "a.out kludge" (flag bit 16): the loader copies the flat image
 * from _load_start to _edata_phys, zeroes up to _end_phys and jumps to
 * _start32 in 32-bit protected mode with paging off.
 *
 * The trampoline builds temporary page tables that map the first GiB three
 * times (identity, the physical-memory window at 0xffff800000000000 and the
 * kernel window at 0xffffffff80000000) with 2 MiB pages, enables PAE, long
 * mode and NX, and jumps to the higher half.  paging.c replaces these tables
 * with the real ones before anything else runs. */

#define MB_MAGIC 0x1BADB002
#define MB_FLAGS 0x00010003 /* align modules, memory info, a.out kludge */
#define KERNEL_VMA 0xffffffff80000000

    .section .multiboot, "a"
    .align 4
mb_header:
    .long MB_MAGIC
    .long MB_FLAGS
    .long -(MB_MAGIC + MB_FLAGS)
    .long mb_header
    .long _load_start
    .long _edata_phys
    .long _end_phys
    .long _start32

    .section .boot.text, "ax"
    .code32
    .globl _start32
_start32:
    cli
    mov %eax, %edi               /* multiboot magic: first argument of kmain */
    mov %ebx, %esi               /* multiboot info (physical): second argument */
    mov $boot_stack_top, %esp

    /* pd: 512 x 2 MiB pages covering the first GiB */
    mov $boot_pd, %ebx
    xor %ecx, %ecx
1:  mov %ecx, %eax
    shl $21, %eax
    or $0x83, %eax               /* present, writable, 2 MiB */
    mov %eax, (%ebx, %ecx, 8)
    movl $0, 4(%ebx, %ecx, 8)
    inc %ecx
    cmp $512, %ecx
    jne 1b

    mov $boot_pd, %eax
    or $0x3, %eax
    mov %eax, boot_pdpt_low      /* pdpt_low[0] -> pd (0..1 GiB) */
    mov %eax, boot_pdpt_high + 510 * 8 /* pdpt_high[510] -> pd (-2 GiB) */
    mov $boot_pdpt_low, %eax
    or $0x3, %eax
    mov %eax, boot_pml4          /* identity */
    mov %eax, boot_pml4 + 256 * 8 /* physical-memory window */
    mov $boot_pdpt_high, %eax
    or $0x3, %eax
    mov %eax, boot_pml4 + 511 * 8 /* kernel window */

    mov %cr4, %eax
    or $0x20, %eax               /* PAE */
    mov %eax, %cr4
    mov $boot_pml4, %eax
    mov %eax, %cr3
    mov $0xC0000080, %ecx        /* EFER */
    rdmsr
    or $0x901, %eax              /* SCE | LME | NXE */
    wrmsr
    mov %cr0, %eax
    or $0x80010001, %eax         /* PG | WP | PE */
    mov %eax, %cr0

    lgdt boot_gdt_ptr
    ljmp $0x08, $start64_low

    .code64
start64_low:
    movabs $start64_high, %rax
    jmp *%rax

    .section .boot.data, "aw"
    .align 4096
boot_pml4:      .fill 512, 8, 0
boot_pdpt_low:  .fill 512, 8, 0
boot_pdpt_high: .fill 512, 8, 0
boot_pd:        .fill 512, 8, 0
boot_stack:     .fill 256, 8, 0
boot_stack_top:
    .align 8
boot_gdt:
    .quad 0
    .quad 0x00209A0000000000     /* 64-bit code */
    .quad 0x0000920000000000     /* data */
boot_gdt_ptr:
    .word boot_gdt_ptr - boot_gdt - 1
    .long boot_gdt

    .text
start64_high:
    xor %eax, %eax
    mov %eax, %ds
    mov %eax, %es
    mov %eax, %ss
    mov %eax, %fs
    mov %eax, %gs
    movabs $kernel_stacks + 4096 + 16384, %rsp
    xor %ebp, %ebp               /* ends the backtrace */
    /* edi, esi still hold the multiboot magic and info address */
    call kmain
2:  hlt
    jmp 2b

    .section .note.GNU-stack, "", @progbits
