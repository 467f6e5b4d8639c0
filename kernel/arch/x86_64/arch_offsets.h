/* Structure offsets used by entry.S; cpu.c checks them with _Static_assert. */
#ifndef KEEP_ARCH_OFFSETS_H
#define KEEP_ARCH_OFFSETS_H

#define CPU_USER_RSP 0
#define CPU_KSTACK_TOP 8
#define TSS_RSP0 4
#define REGS_VECTOR 120
#define REGS_CS 144

#define SEL_UDATA 0x1b
#define SEL_UCODE 0x23
#define VEC_SYSCALL 0x100

#endif
