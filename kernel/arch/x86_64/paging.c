/* x86-64 4-level paging.
 *
 * The kernel half (PML4 entries 256-511) is built once at boot and copied
 * into every address space, so it is the same everywhere and never gains a
 * PML4 entry later.  It holds:
 *   0xffff800000000000  the physical-memory window (2 MiB pages, RW, NX)
 *   0xfffffe0000000000  the capability segment: the one kernel-half PML4 entry
 *                       that each address space has for itself (cappages,
 *                       kernel-only, RW, NX; see docs/kernel-manual.md)
 *   0xffffff0000000000  device registers (4 KiB pages, uncached, NX)
 *   0xffffffff80000000  the kernel image: text RX, rodata R+NX, data RW+NX
 *   0xffffffffc0000000  the process-number array: 64 MiB of 4 KiB pages, each
 *                       an account's number page (RW+NX) or the zero page (R+NX)
 * Nothing in it is user-accessible, and no page is writable and executable;
 * paging_check() verifies both at run time (KERNEL.CHECK_PAGING). */
#include "paging.h"
#include "arch.h"
#include "keep/abi.h"
#include "lib.h"
#include "x86.h"

#define MMIO_WINDOW 0xffffff0000000000ULL
/* The kernel image, the physical window and the device window need at most
 * 32 tables; the number region needs 33 (a directory and 32 tables). */
#define POOL_PAGES (32 + 1 + NUMBER_REGION_SIZE / (2ULL << 20))

extern u8 _text[], _etext[], _rodata[], _erodata[], _data[], _end[];

static u64 kernel_pml4[512] __attribute__((aligned(4096)));
static u64 pt_pool[POOL_PAGES][512] __attribute__((aligned(4096)));
static unsigned pt_pool_used;
static unsigned mmio_pages;
static bool pcid_enabled;
static u64 global_flag;
/* What the number region shows where no account bought a page. */
static const u8 zero_page[PAGE_SIZE] __attribute__((aligned(4096)));

u64 kernel_virt_to_phys(const void *va) { return (u64)(uptr)va - KERNEL_VMA; }
u64 kernel_pml4_phys(void) { return kernel_virt_to_phys(kernel_pml4); }

static u64 *table_of(u64 entry) { return phys_to_virt(entry & PTE_ADDR); }

/* Kernel page tables come from a fixed boot-time pool in the image. */
static u64 pool_alloc(void *ctx UNUSED)
{
    if (pt_pool_used == POOL_PAGES)
        panic("paging: boot page-table pool exhausted (too much physical memory?)");
    return kernel_virt_to_phys(pt_pool[pt_pool_used++]);
}

static unsigned index_of(u64 va, int level) { return (unsigned)(va >> (12 + 9 * level)) & 511; }

/* The entry for va at the given level (0 = page table), creating the tables
 * above it with `inter` flags; NULL if a table could not be allocated. */
static u64 *walk_create(u64 *pml4, u64 va, int level, u64 inter, pt_alloc_fn alloc, void *ctx)
{
    u64 *t = pml4;
    for (int l = 3; l > level; l--) {
        u64 *e = &t[index_of(va, l)];
        if (!(*e & PTE_P)) {
            u64 pa = alloc(ctx);
            if (!pa)
                return NULL;
            memset(phys_to_virt(pa), 0, PAGE_SIZE);
            *e = pa | inter;
        }
        ASSERT(!(*e & PTE_PS));
        t = table_of(*e);
    }
    return &t[index_of(va, level)];
}

static void kmap(u64 va, u64 pa, u64 flags, int level)
{
    u64 *e = walk_create(kernel_pml4, va, level, PTE_P | PTE_W, pool_alloc, NULL);
    *e = pa | flags | PTE_P;
}

static bool is_guard_page(u64 va)
{
    return va == (u64)(uptr)kernel_stacks.guard || va == (u64)(uptr)kernel_stacks.ist_guard;
}

void paging_init(u64 max_phys)
{
    u64 g = global_flag = (cpu0.features & KEEP_CPU_GLOBAL) ? PTE_G : 0;
    if (max_phys > PHYS_WINDOW_MAX)
        max_phys = PHYS_WINDOW_MAX;

    for (u64 va = (u64)(uptr)_text; va < (u64)(uptr)_etext; va += PAGE_SIZE)
        kmap(va, va - KERNEL_VMA, g, 0);
    for (u64 va = (u64)(uptr)_rodata; va < (u64)(uptr)_erodata; va += PAGE_SIZE)
        kmap(va, va - KERNEL_VMA, g | PTE_NX, 0);
    for (u64 va = (u64)(uptr)_data; va < (u64)(uptr)_end; va += PAGE_SIZE)
        if (!is_guard_page(va))
            kmap(va, va - KERNEL_VMA, g | PTE_W | PTE_NX, 0);
    for (u64 pa = 0; pa < max_phys; pa += 2ULL << 20)
        kmap(PHYS_WINDOW + pa, pa, g | PTE_W | PTE_NX | PTE_PS, 1);
    /* Create the device window's tables now: address spaces copy the kernel
     * half of the PML4 when they are made, so it must not gain entries later. */
    ASSERT(walk_create(kernel_pml4, MMIO_WINDOW, 0, PTE_P | PTE_W, pool_alloc, NULL));
    for (u64 va = NUMBER_REGION; va < NUMBER_REGION + NUMBER_REGION_SIZE; va += PAGE_SIZE)
        kmap(va, kernel_virt_to_phys(zero_page), g | PTE_NX, 0);

    write_cr3(kernel_pml4_phys());
    if (cpu0.features & KEEP_CPU_PCID) {
        write_cr4(read_cr4() | (1ULL << 17));
        pcid_enabled = true;
    }
}

void *map_mmio(u64 pa)
{
    ASSERT(mmio_pages < 512); /* one page table of device mappings */
    u64 va = MMIO_WINDOW + (u64)mmio_pages++ * PAGE_SIZE;
    kmap(va, pa & PTE_ADDR, PTE_W | PTE_NX | PTE_PCD | PTE_PWT, 0);
    invlpg(va);
    return (void *)(uptr)(va + (pa & 0xfff));
}

void number_region_map(u64 va, u64 pa)
{
    ASSERT(va >= NUMBER_REGION && va < NUMBER_REGION + NUMBER_REGION_SIZE && !(va & 0xfff));
    if (pa)
        kmap(va, pa, global_flag | PTE_W | PTE_NX, 0);
    else
        kmap(va, kernel_virt_to_phys(zero_page), global_flag | PTE_NX, 0);
    invlpg(va);
}

#define CAPSEG_SLOT ((KEEP_CAP_SEGMENT >> 39) & 511)

void pml4_init_user(u64 pml4_pa)
{
    u64 *t = phys_to_virt(pml4_pa);
    memset(t, 0, 256 * sizeof(u64));
    memcpy(t + 256, kernel_pml4 + 256, 256 * sizeof(u64));
}

int user_map(u64 pml4_pa, u64 va, u64 pa, u64 pte_flags, pt_alloc_fn alloc, void *ctx)
{
    u64 *e = walk_create(phys_to_virt(pml4_pa), va, 0, PTE_P | PTE_W | PTE_U, alloc, ctx);
    if (!e)
        return -1;
    *e = pa | pte_flags | PTE_P | PTE_U;
    return 0;
}

u64 capseg_va(u64 cap_addr) { return KEEP_CAP_SEGMENT + (cap_addr / KEEP_CAPPAGE_SLOTS) * PAGE_SIZE; }

int capseg_map(u64 pml4_pa, u64 cap_addr, u64 pa, pt_alloc_fn alloc, void *ctx)
{
    u64 *e = walk_create(phys_to_virt(pml4_pa), capseg_va(cap_addr), 0, PTE_P | PTE_W, alloc, ctx);
    if (!e)
        return -1;
    *e = pa | PTE_P | PTE_W | PTE_NX;
    return 0;
}

unsigned tables_missing(u64 pml4_pa, u64 va)
{
    u64 *t = phys_to_virt(pml4_pa);
    for (int l = 3; l > 0; l--) {
        u64 e = t[index_of(va, l)];
        if (!(e & PTE_P))
            return (unsigned)l;
        t = table_of(e);
    }
    return 0;
}

static void free_subtree(u64 *t, int level, const struct table_walk *w)
{
    for (unsigned i = 0; i < 512; i++) {
        if (!(t[i] & PTE_P))
            continue;
        if (level > 0) {
            free_subtree(table_of(t[i]), level - 1, w);
            w->free_table(w->ctx, t[i] & PTE_ADDR);
        } else {
            w->unmap_leaf(t[i] & PTE_ADDR);
        }
        t[i] = 0;
    }
}

/* 48-bit sweep positions to addresses: the kernel half is sign-extended. */
static u64 canonical(u64 a) { return a & (1ULL << 47) ? a | 0xffff000000000000ULL : a; }

static bool sweep_table(u64 *t, int level, u64 base, struct frame_sweep *s)
{
    if (!s->budget) {
        s->pos = base; /* it stops before a table, and goes on from there */
        return false;
    }
    s->budget--;
    unsigned shift = 12 + 9 * (unsigned)level;
    for (unsigned i = s->pos > base ? (unsigned)((s->pos - base) >> shift) : 0; i < 512; i++) {
        u64 e = t[i];
        if (!(e & PTE_P))
            continue;
        u64 at = base | (u64)i << shift;
        if (level > 0 && !(e & PTE_PS)) {
            if (!sweep_table(table_of(e), level - 1, at, s))
                return false;
        } else if (level == 0 && (e & PTE_ADDR) == s->pa) {
            t[i] = 0;
            s->gone(s->ctx, canonical(at));
            s->n++;
        }
    }
    return true;
}

bool unmap_frame_sweep(u64 pml4_pa, struct frame_sweep *s)
{
    u64 *pml4 = phys_to_virt(pml4_pa);
    for (unsigned i = (unsigned)(s->pos >> 39); i < 512; i++) {
        if ((i >= 256 && i != CAPSEG_SLOT) || !(pml4[i] & PTE_P))
            continue;
        if (!sweep_table(table_of(pml4[i]), 2, (u64)i << 39, s))
            return false;
    }
    s->pos = SWEEP_DONE;
    return true;
}

static void each_leaf(u64 *t, int level, void (*fn)(void *, u64), void *ctx)
{
    for (unsigned i = 0; i < 512; i++) {
        if (!(t[i] & PTE_P))
            continue;
        if (level > 0)
            each_leaf(table_of(t[i]), level - 1, fn, ctx);
        else
            fn(ctx, t[i] & PTE_ADDR);
    }
}

void capseg_for_each(u64 pml4_pa, void (*fn)(void *ctx, u64 pa), void *ctx)
{
    u64 e = ((u64 *)phys_to_virt(pml4_pa))[CAPSEG_SLOT];
    if (e & PTE_P)
        each_leaf(table_of(e), 2, fn, ctx);
}

u64 *user_table_link(u64 pml4_pa, u64 va, int level)
{
    u64 *t = phys_to_virt(pml4_pa);
    for (int l = 3; l > level; l--) {
        u64 e = t[index_of(va, l)];
        if (!(e & PTE_P) || (e & PTE_PS))
            return NULL;
        t = table_of(e);
    }
    u64 *link = &t[index_of(va, level)];
    return (*link & PTE_P) && !(*link & PTE_PS) ? link : NULL;
}

void free_table_below(u64 table_pa, int level, const struct table_walk *w)
{
    free_subtree(phys_to_virt(table_pa), level - 1, w);
}

static void adopt_subtree(u64 *t, int level, const struct adopt_walk *w)
{
    for (unsigned i = 0; i < 512; i++) {
        u64 e = t[i];
        if (!(e & PTE_P))
            continue;
        if (!w->keep(w->ctx, e & PTE_ADDR, level) || (e & PTE_PS))
            t[i] = 0;
        else if (level > 0)
            adopt_subtree(table_of(e), level - 1, w);
    }
}

void user_tables_adopt(u64 pml4_pa, const struct adopt_walk *w)
{
    u64 *pml4 = phys_to_virt(pml4_pa);
    for (unsigned i = 0; i < 512; i++) {
        if (i >= 256 && i != CAPSEG_SLOT) {
            pml4[i] = kernel_pml4[i]; /* this boot's kernel half */
            continue;
        }
        if (!(pml4[i] & PTE_P))
            continue;
        if (!w->keep(w->ctx, pml4[i] & PTE_ADDR, 3))
            pml4[i] = 0;
        else
            adopt_subtree(table_of(pml4[i]), 2, w);
    }
}

/* free_subtree, freeing at most *budget tables (and those over the last,
 * its subtree empty): every entry it clears has been handed to w, so a
 * later call finds only what is left. */
static bool free_subtree_part(u64 *t, int level, const struct table_walk *w, unsigned *budget)
{
    for (unsigned i = 0; i < 512; i++) {
        if (!(t[i] & PTE_P))
            continue;
        if (level > 0) {
            if (!*budget || !free_subtree_part(table_of(t[i]), level - 1, w, budget))
                return false;
            w->free_table(w->ctx, t[i] & PTE_ADDR);
            if (*budget) /* a subtree that ended the budget exactly: 0, never below */
                (*budget)--;
        } else {
            w->unmap_leaf(t[i] & PTE_ADDR);
        }
        t[i] = 0;
    }
    return true;
}

bool free_user_tables_part(u64 pml4_pa, const struct table_walk *w, unsigned *budget)
{
    u64 *pml4 = phys_to_virt(pml4_pa);
    for (unsigned i = 0; i < 512; i++) {
        if ((i >= 256 && i != CAPSEG_SLOT) || !(pml4[i] & PTE_P))
            continue;
        if (!*budget || !free_subtree_part(table_of(pml4[i]), 2, w, budget))
            return false;
        w->free_table(w->ctx, pml4[i] & PTE_ADDR);
        if (*budget)
            (*budget)--;
        pml4[i] = 0;
    }
    return true;
}

void free_user_tables(u64 pml4_pa, const struct table_walk *w)
{
    unsigned all = ~0u;
    free_user_tables_part(pml4_pa, w, &all);
}

u64 *user_pte(u64 pml4_pa, u64 va)
{
    u64 *t = phys_to_virt(pml4_pa);
    for (int l = 3; l > 0; l--) {
        u64 e = t[index_of(va, l)];
        if (!(e & PTE_P) || (e & PTE_PS))
            return NULL;
        t = table_of(e);
    }
    return &t[index_of(va, 0)];
}

bool user_translate(u64 pml4_pa, u64 va, bool write, u64 *pa)
{
    if (va >= KEEP_USER_TOP)
        return false;
    u64 *e = user_pte(pml4_pa, va);
    if (!e || !(*e & PTE_P) || !(*e & PTE_U) || (write && !(*e & (PTE_W | PTE_CKW))))
        return false;
    *pa = (*e & PTE_ADDR) | (va & 0xfff);
    return true;
}

u64 paging_cr3(u64 pml4_pa, u16 pcid)
{
    if (pcid_enabled && pcid)
        return pml4_pa | pcid | (1ULL << 63); /* keep this PCID's TLB entries */
    return pcid_enabled ? pml4_pa | pcid : pml4_pa;
}

void switch_address_space(u64 pml4_pa, u16 pcid, bool flush)
{
    if (pcid_enabled && pcid && !flush)
        write_cr3(pml4_pa | pcid | (1ULL << 63)); /* keep this PCID's TLB entries */
    else if (pcid_enabled)
        write_cr3(pml4_pa | pcid);
    else
        write_cr3(pml4_pa);
}

void flush_page(u64 va) { invlpg(va); }

void user_write_protect(u64 pml4_pa)
{
    u64 *t = phys_to_virt(pml4_pa);
    for (unsigned i = 0; i < 256; i++)
        t[i] &= ~PTE_W;
}

bool user_write_lift(u64 pml4_pa, u64 va, void (*touch)(u64 pa))
{
    if (va >= KEEP_USER_TOP)
        return false;
    u64 *t = phys_to_virt(pml4_pa);
    for (int l = 3; l > 0; l--) {
        u64 *e = &t[index_of(va, l)];
        if (!(*e & PTE_P) || (*e & PTE_PS))
            return false;
        u64 *next = table_of(*e);
        if (!(*e & PTE_W)) {
            for (unsigned i = 0; i < 512; i++) {
                if (!(next[i] & PTE_P))
                    continue;
                if (l > 1)
                    next[i] &= ~PTE_W;
                else if (next[i] & PTE_W)
                    next[i] = (next[i] & ~PTE_W) | PTE_CKW;
            }
            *e |= PTE_W;
        }
        t = next;
    }
    u64 *leaf = &t[index_of(va, 0)];
    if ((*leaf & (PTE_P | PTE_U)) != (PTE_P | PTE_U))
        return false;
    if (*leaf & PTE_CKW) {
        touch(*leaf & PTE_ADDR);
        *leaf = (*leaf & ~PTE_CKW) | PTE_W;
    }
    if (!(*leaf & PTE_W))
        return false;
    invlpg(va); /* also drops the current PCID's cached upper levels */
    return true;
}

/* Page-table checks. */
struct check_ctx {
    unsigned check;
    u64 violations, checked;
};

static void check_leaf(struct check_ctx *c, u64 va, u64 eff_w, u64 eff_nx, bool any_u)
{
    c->checked++;
    bool kernel = va >= 0xffff800000000000ULL;
    switch (c->check) {
    case KEEP_CHECK_WX:
        if (eff_w && !eff_nx)
            c->violations++;
        break;
    case KEEP_CHECK_KERNEL_USER:
        if (kernel && any_u)
            c->violations++;
        break;
    case KEEP_CHECK_KERNEL_DATA_NX:
        if (kernel && !eff_nx && !(va >= (u64)(uptr)_text && va < (u64)(uptr)_etext))
            c->violations++;
        break;
    }
}

static void check_table(struct check_ctx *c, u64 *t, int level, u64 base, unsigned from, unsigned to,
                        bool w, bool nx, bool any_u)
{
    for (unsigned i = from; i < to; i++) {
        u64 e = t[i];
        if (!(e & PTE_P))
            continue;
        u64 va = base + ((u64)i << (12 + 9 * level));
        if (level == 3 && i >= 256)
            va |= 0xffff000000000000ULL; /* sign extension */
        bool ew = w && (e & (PTE_W | PTE_CKW)), enx = nx || (e & PTE_NX), eu = any_u || (e & PTE_U);
        if (level == 0 || (e & PTE_PS))
            check_leaf(c, va, ew, enx, eu);
        else
            check_table(c, table_of(e), level - 1, va, 0, 512, ew, enx, eu);
    }
}

u64 paging_check(unsigned check, u64 user_pml4_pa, u64 *checked)
{
    struct check_ctx c = {check, 0, 0};
    u64 *user = phys_to_virt(user_pml4_pa);
    /* The kernel half as the caller's address space sees it. */
    check_table(&c, user, 3, 0, 256, 512, true, false, false);
    for (unsigned i = 256; i < 512; i++)
        if (i != CAPSEG_SLOT && user[i] != kernel_pml4[i])
            c.violations++; /* the kernel half must be the kernel's own */
    if (check == KEEP_CHECK_WX)
        check_table(&c, user, 3, 0, 0, 256, true, false, false);
    *checked = c.checked;
    return c.violations;
}
