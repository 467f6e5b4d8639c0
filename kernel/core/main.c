/* Kernel entry from the boot trampoline: read the multiboot information,
 * bring up the CPU, paging, frames and the timer, start the root task. */
#include "acpi.h"
#include "arch.h"
#include "boot.h"
#include "frame.h"
#include "keep/abi.h"
#include "lib.h"
#include "seal.h"
#include "paging.h"
#include "sched.h"
#include "vtd.h"
#include "x86.h"

#define MULTIBOOT_BOOTLOADER_MAGIC 0x2BADB002
#define MB_INFO_CMDLINE (1u << 2)
#define MB_INFO_MODS (1u << 3)
#define MB_INFO_MMAP (1u << 6)

struct mb_info {
    u32 flags, mem_lower, mem_upper, boot_device, cmdline, mods_count, mods_addr;
    u32 syms[4];
    u32 mmap_length, mmap_addr;
} __attribute__((packed));

struct mb_mmap_entry {
    u32 size;
    u64 base, length;
    u32 type;
} __attribute__((packed));

struct mb_module {
    u32 start, end, string, reserved;
};

struct boot_info boot_info;
extern u8 _end[];

/* Read what we need from the multiboot information while the boot page
 * tables still map the first GiB at the physical window. */
static void read_multiboot(u32 mbi_pa)
{
    const struct mb_info *mb = phys_to_virt(mbi_pa);
    if (!(mb->flags & MB_INFO_MMAP))
        panic("multiboot: the boot loader gave no memory map");
    if (!(mb->flags & MB_INFO_MODS) || mb->mods_count < 1)
        panic("multiboot: no boot image (give build/boot.img as the first module, -initrd)");

    if (mb->flags & MB_INFO_CMDLINE) {
        const char *c = phys_to_virt(mb->cmdline);
        boot_info.cmdline_len = strnlen(c, CMDLINE_MAX - 1);
        memcpy(boot_info.cmdline, c, boot_info.cmdline_len);
    }
    const struct mb_module *mod = phys_to_virt(mb->mods_addr);
    if (mod->end < mod->start || mod->start & (PAGE_SIZE - 1))
        panic("multiboot: boot image module is malformed");
    boot_info.image_pa = mod->start;
    boot_info.image_size = mod->end - mod->start;

    struct mem_range fw[MEMMAP_MAX];
    unsigned nfw = 0;
    for (u32 off = 0; off + sizeof(struct mb_mmap_entry) <= mb->mmap_length && nfw < MEMMAP_MAX - 4;) {
        const struct mb_mmap_entry *e = phys_to_virt((u64)mb->mmap_addr + off);
        fw[nfw++] = (struct mem_range){e->base, e->length,
                                       e->type == 1 ? (u32)KEEP_MEM_USABLE : (u32)KEEP_MEM_RESERVED};
        off += e->size + 4;
    }
    u64 kstart = 0x100000, kend = ALIGN_UP(kernel_virt_to_phys(_end), PAGE_SIZE);
    boot_info.kernel_bytes = kend - kstart;
    struct mem_range carve[] = {
        {0, 0x100000, KEEP_MEM_RESERVED}, /* firmware, boot loader data */
        {kstart, kend - kstart, KEEP_MEM_KERNEL},
        {boot_info.image_pa, ALIGN_UP(boot_info.image_size, PAGE_SIZE), KEEP_MEM_BOOT_IMAGE},
    };
    if (!memmap_build(&boot_info.memmap, fw, nfw, carve, ARRAY_SIZE(carve)))
        panic("multiboot: memory map has too many entries");
}

static void print_memmap(void)
{
    static const char *const names[] = {"?", "usable", "reserved", "kernel", "boot image"};
    const struct memmap *m = &boot_info.memmap;
    for (unsigned i = 0; i < m->count; i++)
        kprintf("  %016lx-%016lx %s\n", m->r[i].base, m->r[i].base + m->r[i].length - 1,
                m->r[i].type < 5 ? names[m->r[i].type] : "?");
}

/* pool=N on the command line (MiB, 0 to 1024), else PERSISTENT_POOL_MIB. */
static u64 pool_mib(void)
{
    const char *w = strstr_n(boot_info.cmdline, boot_info.cmdline_len, "pool=");
    if (!w || (w != boot_info.cmdline && w[-1] != ' '))
        return KEEP_PERSISTENT_POOL_MIB;
    u64 n = 0;
    const char *end = boot_info.cmdline + boot_info.cmdline_len;
    for (w += 5; w < end && *w >= '0' && *w <= '9' && n <= 1024; w++)
        n = n * 10 + (u64)(*w - '0');
    return n <= 1024 ? n : KEEP_PERSISTENT_POOL_MIB;
}

NORETURN void kmain(u32 magic, u32 mbi_pa)
{
    u64 t0 = rdtsc();
    serial_init();
    kprintf("\nKeep kernel %s booting\n", KEEP_VERSION_STRING);
    if (magic != MULTIBOOT_BOOTLOADER_MAGIC)
        panic("not started by a multiboot loader (magic %x)", magic);
    cpu_init();
    seal_init();
    sched_init();
    read_multiboot(mbi_pa);
    print_memmap();
    paging_init(memmap_ram_end(&boot_info.memmap));
    numbers_init();
    frame_init(&boot_info.memmap);
    frame_pool_init(pool_mib() * (1024 * 1024 / PAGE_SIZE));
    apic_init();
    acpi_pci_init();
    vtd_init();
    ioapic_route_isa(4, VEC_SERIAL);
    serial_enable_rx_irq();
    kprintf("keep: %lu MiB usable, %lu KiB kernel, TSC %lu MHz, features %lx, kernel start-up %lu ms\n",
            memmap_total(&boot_info.memmap, KEEP_MEM_USABLE) >> 20, boot_info.kernel_bytes >> 10,
            cpu0.tsc_hz / 1000000, cpu0.features, (rdtsc() - t0) / (cpu0.tsc_hz / 1000));
    /* For the harness (tools/test_boot.py): prove that a kernel fault is
     * reported with registers and a symbolised backtrace. */
    if (strstr_n(boot_info.cmdline, boot_info.cmdline_len, "selftest-kernel-fault")) {
        volatile u64 *unmapped;
        __asm__("mov $16, %0" : "=r"(unmapped)); /* hide the bad pointer from the compiler */
        kprintf("keep: deliberate kernel fault: %lx\n", *unmapped);
    }
    root_task_start();
    kernel_exit();
}
