/* The physical memory map: the firmware's map with the kernel image, the
 * boot image and the first MiB carved out, sorted, merged, non-overlapping.
 * Pure logic, also compiled into the host unit tests. */
#ifndef KEEP_MEMMAP_H
#define KEEP_MEMMAP_H

#include "types.h"

#define MEMMAP_MAX 64

struct mem_range {
    u64 base, length;
    u32 type; /* KEEP_MEM_* */
};

struct memmap {
    struct mem_range r[MEMMAP_MAX];
    unsigned count;
};

/* Build *out from firmware ranges (USABLE or RESERVED) and carve-outs, which
 * win over firmware ranges where they overlap.  Ranges of length 0 are
 * ignored.  Returns false if the result does not fit in MEMMAP_MAX entries. */
bool memmap_build(struct memmap *out, const struct mem_range *fw, unsigned nfw,
                  const struct mem_range *carve, unsigned ncarve);

/* Sum of the lengths of entries of the given type. */
u64 memmap_total(const struct memmap *m, u32 type);

/* The end of the highest RAM entry (USABLE, KERNEL or BOOT_IMAGE). */
u64 memmap_ram_end(const struct memmap *m);

/* Does a RAM entry (USABLE, KERNEL or BOOT_IMAGE) hold pa? */
bool memmap_is_ram(const struct memmap *m, u64 pa);

#endif
