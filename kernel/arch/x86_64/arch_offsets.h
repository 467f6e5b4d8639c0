/* Structure offsets used by entry.S; cpu.c checks them with _Static_assert. */
#ifndef KEEP_ARCH_OFFSETS_H
#define KEEP_ARCH_OFFSETS_H

#define CPU_USER_RSP 0
#define CPU_KSTACK_TOP 8
#define TSS_RSP0 4
/* struct regs */
#define REGS_R15 0
#define REGS_R14 8
#define REGS_R13 16
#define REGS_R12 24
#define REGS_R10 40
#define REGS_R9 48
#define REGS_R8 56
#define REGS_RBP 64
#define REGS_RDI 72
#define REGS_RSI 80
#define REGS_RDX 88
#define REGS_RBX 104
#define REGS_RAX 112
#define REGS_VECTOR 120
#define REGS_RIP 136
#define REGS_CS 144
#define REGS_RFLAGS 152
#define REGS_RSP 160

#define SEL_UDATA 0x1b
#define SEL_UCODE 0x23
#define VEC_SYSCALL 0x100

#endif
