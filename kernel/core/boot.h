/* What the kernel learned at boot, kept for KERNEL.INFO, MEMMAP and CMDLINE. */
#ifndef KEEP_BOOT_H
#define KEEP_BOOT_H

#include "memmap.h"

#define CMDLINE_MAX 256

struct boot_info {
    struct memmap memmap;
    char cmdline[CMDLINE_MAX];
    u64 cmdline_len;
    u64 image_pa, image_size; /* the boot image (first multiboot module) */
    u64 kernel_bytes;
};
extern struct boot_info boot_info;

/* root_task.c: load the root task from the boot image and make it runnable. */
void root_task_start(void);

#endif
