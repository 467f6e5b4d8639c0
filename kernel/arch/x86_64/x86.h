/* x86-64 instructions and registers used by the kernel, as inline functions. */
#ifndef KEEP_X86_H
#define KEEP_X86_H

#include "types.h"

/* Segment selectors (see cpu.c for the GDT; the order is what SYSRET needs). */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x1b
#define SEL_UCODE 0x23
#define SEL_TSS 0x28

#define MSR_EFER 0xC0000080
#define MSR_STAR 0xC0000081
#define MSR_LSTAR 0xC0000082
#define MSR_FMASK 0xC0000084
#define MSR_APIC_BASE 0x1B
#define MSR_TSC_DEADLINE 0x6E0

#define RFLAGS_IF (1ULL << 9)
#define RFLAGS_AC (1ULL << 18)

static inline void outb(u16 port, u8 v) { __asm__ volatile("outb %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outw(u16 port, u16 v) { __asm__ volatile("outw %0, %1" ::"a"(v), "Nd"(port)); }
static inline void outl(u16 port, u32 v) { __asm__ volatile("outl %0, %1" ::"a"(v), "Nd"(port)); }
static inline u8 inb(u16 port)
{
    u8 v;
    __asm__ volatile("inb %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline u16 inw(u16 port)
{
    u16 v;
    __asm__ volatile("inw %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}
static inline u32 inl(u16 port)
{
    u32 v;
    __asm__ volatile("inl %1, %0" : "=a"(v) : "Nd"(port));
    return v;
}

static inline u64 rdmsr(u32 msr)
{
    u32 lo, hi;
    __asm__ volatile("rdmsr" : "=a"(lo), "=d"(hi) : "c"(msr));
    return ((u64)hi << 32) | lo;
}
static inline void wrmsr(u32 msr, u64 v)
{
    __asm__ volatile("wrmsr" ::"c"(msr), "a"((u32)v), "d"((u32)(v >> 32)));
}

static inline void cpuid(u32 leaf, u32 sub, u32 *a, u32 *b, u32 *c, u32 *d)
{
    __asm__ volatile("cpuid" : "=a"(*a), "=b"(*b), "=c"(*c), "=d"(*d) : "a"(leaf), "c"(sub));
}

static inline u64 rdtsc(void)
{
    u32 lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return ((u64)hi << 32) | lo;
}

static inline u64 read_cr0(void) { u64 v; __asm__ volatile("mov %%cr0, %0" : "=r"(v)); return v; }
static inline u64 read_cr2(void) { u64 v; __asm__ volatile("mov %%cr2, %0" : "=r"(v)); return v; }
static inline u64 read_cr3(void) { u64 v; __asm__ volatile("mov %%cr3, %0" : "=r"(v)); return v; }
static inline u64 read_cr4(void) { u64 v; __asm__ volatile("mov %%cr4, %0" : "=r"(v)); return v; }
static inline void write_cr0(u64 v) { __asm__ volatile("mov %0, %%cr0" ::"r"(v) : "memory"); }
static inline void write_cr3(u64 v) { __asm__ volatile("mov %0, %%cr3" ::"r"(v) : "memory"); }
static inline void write_cr4(u64 v) { __asm__ volatile("mov %0, %%cr4" ::"r"(v) : "memory"); }

/* User fs/gs bases (only with CR4.FSGSBASE set). */
#define CR4_FSGSBASE (1ULL << 16)
static inline u64 rdfsbase(void) { u64 v; __asm__ volatile("rdfsbase %0" : "=r"(v)); return v; }
static inline u64 rdgsbase(void) { u64 v; __asm__ volatile("rdgsbase %0" : "=r"(v)); return v; }
static inline void wrfsbase(u64 v) { __asm__ volatile("wrfsbase %0" ::"r"(v)); }
static inline void wrgsbase(u64 v) { __asm__ volatile("wrgsbase %0" ::"r"(v)); }
static inline void invlpg(u64 va) { __asm__ volatile("invlpg (%0)" ::"r"(va) : "memory"); }
static inline void cli(void) { __asm__ volatile("cli" ::: "memory"); }
static inline void sti_hlt(void) { __asm__ volatile("sti; hlt" ::: "memory"); }
static inline void hlt(void) { __asm__ volatile("hlt" ::: "memory"); }
static inline void pause(void) { __asm__ volatile("pause"); }

#endif
