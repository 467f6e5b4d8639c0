/* The kernel's symbol table, for symbolised backtraces.  tools/gensyms.py
 * generates it from a first link of the kernel (see the Makefile). */
#ifndef KEEP_KSYMS_H
#define KEEP_KSYMS_H

#include "types.h"

struct ksym {
    u64 addr;
    const char *name;
};
extern const struct ksym ksyms[];
extern const u64 ksyms_count;

/* The function containing addr and the offset into it; NULL if unknown. */
const char *ksym_lookup(u64 addr, u64 *offset);

#endif
