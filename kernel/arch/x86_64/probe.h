/* Loads that may fault, for the paths that cannot afford a walk: the
 * capability-segment probe of the MMU lookup and the fast path's reads of
 * a user IPC buffer.  Each is one instruction listed in the exception
 * table (section ex_table: its address and a fix-up label); a kernel page
 * fault at a listed instruction resumes at the label (trap.c), so a probe
 * costs nothing beyond the load when the page is there. */
#ifndef KEEP_PROBE_H
#define KEEP_PROBE_H

#include "types.h"

struct ex_entry {
    u64 insn, fixup;
};
extern const struct ex_entry ex_table_start[], ex_table_end[];

#define EX_ENTRY(insn, fixup) ".pushsection ex_table, \"a\"\n.balign 8\n.quad " insn ", " fixup "\n.popsection\n"

/* out = *(u64 *)addr, or goto fault when the page is not mapped.  The
 * asm is volatile because GCC 12 drops an asm goto whose output is unused
 * (the capability-segment probe only wants the fault). */
#define PROBE_LOAD(out, addr, fault)                                                                     \
    __asm__ volatile goto("1: mov (%1), %0\n" EX_ENTRY("1b", "%l2") : "=r"(out) : "r"(addr) : : fault)

/* stac and clac, each listed in section smap_sites: on a CPU without SMAP
 * (where they are invalid) cpu.c replaces each with a 3-byte NOP at boot,
 * so that a user probe needs no test of its own. */
#define SMAP_SITE(insn) "661: " insn "\n.pushsection smap_sites, \"a\"\n.balign 8\n.quad 661b\n.popsection\n"
#define STAC SMAP_SITE("stac")
#define CLAC SMAP_SITE("clac")
extern const u64 smap_sites_start[], smap_sites_end[];

/* One word at va in the user half of the loaded address space (the caller
 * checked that va lies there): true and *out, or false if it is unmapped.
 * The access is bracketed by stac/clac (trap.c clears AC when it takes the
 * fix-up). */
static ALWAYS_INLINE bool user_probe(u64 va, u64 *out)
{
    const u64 *p = (const u64 *)(uptr)va;
    u64 w;
    __asm__ volatile goto(STAC "1: mov (%1), %0\n" CLAC EX_ENTRY("1b", "%l2") : "=r"(w) : "r"(p) : : fault);
    *out = w;
    return true;
fault:
    return false;
}

/* Two neighbouring words at va and va + 8 (the caller checked that both
 * lie in the user half, on one page): true, or false if it is unmapped. */
static ALWAYS_INLINE bool user_probe2(u64 va, u64 *a, u64 *b)
{
    const u64 *p = (const u64 *)(uptr)va;
    u64 x, y;
    __asm__ volatile goto(STAC "1: mov (%2), %0\n2: mov 8(%2), %1\n" CLAC EX_ENTRY("1b", "%l3") EX_ENTRY("2b", "%l3")
                          : "=&r"(x), "=r"(y)
                          : "r"(p)
                          :
                          : fault);
    *a = x;
    *b = y;
    return true;
fault:
    return false;
}

#endif
