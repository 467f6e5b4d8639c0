/* Validation of static x86-64 ELF executables (ET_EXEC) for loading.
 * Pure logic, also compiled into the host unit tests. */
#ifndef KEEP_ELF_H
#define KEEP_ELF_H

#include "types.h"

#define ELF_MAX_SEGMENTS 16

struct elf_segment {
    u64 vaddr, memsz;     /* where in memory, how much */
    u64 offset, filesz;   /* what of the file goes there */
    bool write, exec;
};

struct elf_image {
    u64 entry;
    unsigned nseg;
    struct elf_segment seg[ELF_MAX_SEGMENTS];
};

/* Check the file and list its loadable segments.  Refuses (false, *why set)
 * anything outside the user half below `user_top`, segments that are both
 * writable and executable, overlapping segments, and any offset or size
 * outside the file. */
bool elf_parse(const u8 *file, u64 size, u64 user_top, struct elf_image *out, const char **why);

#endif
