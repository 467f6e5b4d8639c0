/* Start the root task: make its kernel-memory account from free memory,
 * load the ELF file named "root" from the boot image into a new address
 * space paid by that account, give it a stack, map the boot image read-only
 * for it, map one cappage at capability address 0 holding the initial
 * capabilities and make it runnable.  Every other program is loaded by the
 * root task itself. */
#include "account.h"
#include "aspace.h"
#include "boot.h"
#include "bootimage.h"
#include "device.h"
#include "elf.h"
#include "frame.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"

static struct account *root_account;

/* Top the root account up from free memory so that it holds n frames. */
static void fund(u64 n)
{
    if (root_account->free_count >= n)
        return;
    if (frame_free_count() < n - root_account->free_count)
        panic("root task: out of memory");
    account_fund(root_account, n - root_account->free_count);
}

static void map_or_panic(struct aspace *as, u64 va, u64 pa, u64 rights)
{
    fund(aspace_map_tables(as, va));
    aspace_map_frame(as, va, pa, rights, false);
}

static u64 new_page(void)
{
    u64 pa = frame_alloc(FRAME_PAGE);
    if (!pa)
        panic("root task: out of memory");
    return pa;
}

static void load_segment(struct aspace *as, const u8 *file, const struct elf_segment *s)
{
    u64 rights = KEEP_RIGHT_READ | (s->write ? KEEP_RIGHT_WRITE : 0) | (s->exec ? KEEP_RIGHT_EXEC : 0);
    for (u64 page = ALIGN_DOWN(s->vaddr, PAGE_SIZE); page < s->vaddr + s->memsz; page += PAGE_SIZE) {
        u64 pa = new_page();
        u8 *dst = phys_to_virt(pa);
        /* The part of the file that lands on this page. */
        u64 lo = page > s->vaddr ? page : s->vaddr;
        u64 hi = page + PAGE_SIZE < s->vaddr + s->filesz ? page + PAGE_SIZE : s->vaddr + s->filesz;
        if (hi > lo)
            memcpy(dst + (lo - page), file + s->offset + (lo - s->vaddr), hi - lo);
        map_or_panic(as, page, pa, rights);
    }
}

/* The end of RAM below 4 GiB: device memory starts above it. */
static u64 low_ram_top(void)
{
    u64 top = 0;
    const struct memmap *m = &boot_info.memmap;
    for (unsigned i = 0; i < m->count; i++) {
        u64 end = m->r[i].base + m->r[i].length;
        if (m->r[i].type == KEEP_MEM_RESERVED || m->r[i].base >= (1ULL << 32))
            continue;
        end = end < (1ULL << 32) ? end : (1ULL << 32);
        top = end > top ? end : top;
    }
    return (top + PAGE_SIZE - 1) & ~(PAGE_SIZE - 1);
}

void root_task_start(void)
{
    const u8 *img = phys_to_virt(boot_info.image_pa);
    const u8 *file;
    u64 len;
    const char *why;
    struct elf_image elf;
    if (!bootimage_find(img, boot_info.image_size, "root", &file, &len, &why))
        panic("boot image refused: %s", why);
    if (!elf_parse(file, len, KEEP_USER_TOP, &elf, &why))
        panic("root task refused: %s", why);

    root_account = account_create(0);
    if (!root_account)
        panic("root task: out of memory");
    fund(ASPACE_FRAMES + 2); /* the space; the process and its number page */
    u64 as_pa = aspace_create(root_account);
    struct aspace *as = phys_to_virt(as_pa);
    struct process *p = process_create(as, root_account);
    process_set_name(p, "root");

    for (unsigned i = 0; i < elf.nseg; i++)
        load_segment(as, file, &elf.seg[i]);
    for (u64 i = 1; i <= KEEP_ROOT_STACK_PAGES; i++)
        map_or_panic(as, KEEP_ROOT_STACK_TOP - i * PAGE_SIZE, new_page(),
                     KEEP_RIGHT_READ | KEEP_RIGHT_WRITE);
    for (u64 off = 0; off < boot_info.image_size; off += PAGE_SIZE)
        map_or_panic(as, KEEP_BOOT_IMAGE_VADDR + off, boot_info.image_pa + off, KEEP_RIGHT_READ);

    u64 cappage = frame_alloc(FRAME_CAPPAGE);
    if (!cappage)
        panic("root task: out of memory");
    fund(aspace_cappage_tables(as, 0));
    aspace_map_cappage(as, 0, cappage);
    struct cap *caps = phys_to_virt(cappage);
    u64 acct_pa = virt_to_phys_window(root_account);
    caps[KEEP_SLOT_CONSOLE] = cap_make(KEEP_TYPE_CONSOLE, KEEP_RIGHT_ALL, 0, 0, 0);
    caps[KEEP_SLOT_KERNEL] = cap_make(KEEP_TYPE_KERNEL, KEEP_RIGHT_ALL, 0, 0, 0);
    caps[KEEP_SLOT_MEMORY] = cap_make(KEEP_TYPE_MEMORY, KEEP_RIGHT_ALL, 0, 0, 0);
    caps[KEEP_SLOT_TIMER] = cap_make(KEEP_TYPE_TIMER, KEEP_RIGHT_ALL, 0, 0, 0);
    caps[KEEP_SLOT_PERSISTENT_MEMORY] = cap_make(KEEP_TYPE_MEMORY, KEEP_RIGHT_ALL, 0, 0, 1);
    caps[KEEP_SLOT_CHECKPOINT] = cap_make(KEEP_TYPE_CHECKPOINT, KEEP_RIGHT_ALL, 0, 0, 0);
    /* Device memory up to the end of the physical address space (at most
     * 2^44: a range's first page number has 32 bits); RAM above 4 GiB is
     * refused page by page (devmem.c). */
    u64 dev_base = low_ram_top() / PAGE_SIZE, dev_rw = KEEP_RIGHT_READ | KEEP_RIGHT_WRITE;
    u64 dev_end = 1ULL << (cpu0.phys_bits < 44 ? cpu0.phys_bits : 44);
    caps[KEEP_SLOT_DEVMEM] = cap_make(KEEP_TYPE_DEVMEM, dev_rw, 0, 0,
                                      range_w1(dev_base, dev_end / PAGE_SIZE - dev_base));
    caps[KEEP_SLOT_IOPORT] = cap_make(KEEP_TYPE_IOPORT, dev_rw, 0, 0, range_w1(0, 0x10000));
    caps[KEEP_SLOT_INTERRUPT] = cap_make(KEEP_TYPE_INTERRUPT, dev_rw, 0, 0, range_w1(0, KEEP_IRQ_LINES + KEEP_MSI_LINES));
    caps[KEEP_SLOT_SELF_PROCESS] = process_cap(p);
    caps[KEEP_SLOT_SELF_ASPACE] =
        cap_make(KEEP_TYPE_ASPACE, KEEP_RIGHT_ALL, 0, frame_info(as_pa)->version, as_pa);
    caps[KEEP_SLOT_ACCOUNT] =
        cap_make(KEEP_TYPE_ACCOUNT, KEEP_RIGHT_ALL, 0, frame_info(acct_pa)->version, acct_pa);
    fund(KEEP_ROOT_ACCOUNT_FRAMES);

    p->regs.rip = elf.entry;
    p->regs.rsp = KEEP_ROOT_STACK_TOP;
    p->regs.rdi = KEEP_BOOT_IMAGE_VADDR;
    p->regs.rsi = boot_info.image_size;
    process_make_runnable(p);
    kprintf("keep: root task loaded (%u segments, entry %p)\n", elf.nseg, (void *)(uptr)elf.entry);
}
