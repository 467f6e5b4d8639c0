/* The boot image: one multiboot module holding the root task and the other
 * user programs (built by tools/mkimage.py; format in docs/boot.md).
 * Pure logic, also compiled into the host unit tests. */
#ifndef KEEP_BOOTIMAGE_H
#define KEEP_BOOTIMAGE_H

#include "types.h"

#define BOOTIMAGE_MAGIC "KEEPIMG1"
#define BOOTIMAGE_NAME_MAX 48
#define BOOTIMAGE_MAX_ENTRIES 256

/* Find the entry called name.  On success *data and *len give its bytes;
 * on failure *why says what is wrong with the image (or that the name is
 * missing) and false is returned. */
bool bootimage_find(const u8 *img, u64 size, const char *name, const u8 **data, u64 *len,
                    const char **why);

#endif
