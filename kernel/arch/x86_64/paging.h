/* x86-64 4-level paging: the kernel's own tables, the physical-memory window,
 * user mappings and the page-table checks behind KERNEL.CHECK_PAGING. */
#ifndef KEEP_PAGING_H
#define KEEP_PAGING_H

#include "types.h"

#define KERNEL_VMA 0xffffffff80000000ULL
#define PHYS_WINDOW 0xffff800000000000ULL
#define PHYS_WINDOW_MAX (16ULL << 30) /* the window covers the first 16 GiB */
/* The process-number array (kernel/object/process_number.c): 64 MiB in the
 * top 2 GiB, so that the IPC fast path indexes it with a 32-bit displacement
 * as it would a static table. */
#define NUMBER_REGION 0xffffffffc0000000ULL
#define NUMBER_REGION_SIZE (64ULL << 20)

#define PTE_P (1ULL << 0)
#define PTE_W (1ULL << 1)
#define PTE_U (1ULL << 2)
#define PTE_PWT (1ULL << 3)
#define PTE_PCD (1ULL << 4)
#define PTE_PS (1ULL << 7)
#define PTE_G (1ULL << 8)
/* Software bit of a user leaf: writable, its write bit held back by the
 * checkpoint's protection until its first write (user_write_lift). */
#define PTE_CKW (1ULL << 9)
#define PTE_NX (1ULL << 63)
#define PTE_ADDR 0x000ffffffffff000ULL

static inline void *phys_to_virt(u64 pa) { return (void *)(uptr)(pa + PHYS_WINDOW); }
u64 kernel_virt_to_phys(const void *va); /* for the kernel image only */
static inline u64 virt_to_phys_window(const void *va) { return (u64)(uptr)va - PHYS_WINDOW; }

/* Allocates one zeroed frame for a page table; returns 0 when none is left. */
typedef u64 (*pt_alloc_fn)(void *ctx);

void paging_init(u64 max_phys);
void *map_mmio(u64 pa);
/* Back one page of the number region with the frame pa, or, with 0, with
 * the zero page again (read-only); flushes the old translation. */
void number_region_map(u64 va, u64 pa);
u64 kernel_pml4_phys(void);

/* User address spaces. */
void pml4_init_user(u64 pml4_pa);
int user_map(u64 pml4_pa, u64 va, u64 pa, u64 pte_flags, pt_alloc_fn alloc, void *ctx);
u64 *user_pte(u64 pml4_pa, u64 va); /* the leaf entry, or NULL when no table is there */
bool user_translate(u64 pml4_pa, u64 va, bool write, u64 *pa);
/* The capability segment: map the cappage for cap_addr (kernel-only). */
u64 capseg_va(u64 cap_addr);
int capseg_map(u64 pml4_pa, u64 cap_addr, u64 pa, pt_alloc_fn alloc, void *ctx);
/* Page tables that mapping a page at va would have to create (0-3). */
unsigned tables_missing(u64 pml4_pa, u64 va);
/* Free every table of the user half and of the capability segment, and
 * tell unmap_leaf about every page and cappage that was mapped. */
struct table_walk {
    void (*free_table)(void *ctx, u64 pa);
    void (*unmap_leaf)(u64 pa);
    void *ctx;
};
void free_user_tables(u64 pml4_pa, const struct table_walk *w);
/* The same, freeing at most *budget tables (counted down to 0, and the
 * tables over the last one, whose subtrees it emptied): true when none is
 * left; false when the budget ran out first, with everything it cleared
 * handed to w, so that another call goes on (ACCOUNT.DESTROY_ALL). */
bool free_user_tables_part(u64 pml4_pa, const struct table_walk *w, unsigned *budget);
/* A restored address space: give it this boot's kernel half, and ask keep
 * about every table (level 1-3: the table an entry of that level links)
 * and every page or cappage (level 0) its user half and capability segment
 * name; an entry keep refuses is cleared (and what is below it is not
 * visited). */
struct adopt_walk {
    bool (*keep)(void *ctx, u64 pa, int level);
    void *ctx;
};
void user_tables_adopt(u64 pml4_pa, const struct adopt_walk *w);
/* The entry that links the page table of `level` (1: 4 KiB entries, 2: 2 MiB,
 * 3: 1 GiB) translating va into its parent, or NULL when there is none. */
u64 *user_table_link(u64 pml4_pa, u64 va, int level);
/* Call fn with the frame of every cappage mapped in the capability segment. */
void capseg_for_each(u64 pml4_pa, void (*fn)(void *ctx, u64 pa), void *ctx);
/* Remove the mappings of frame pa (user half and capability segment) from
 * the 48-bit address pos on, telling gone() each address and counting them
 * in n, visiting at most budget tables (each one's 512 entries).  True
 * when it got to the end (pos: SWEEP_DONE); false when the budget ran out
 * first, with pos at the table it stopped before: a sweep called again
 * with that pos goes on where this one stopped (MEMORY.REVOKE's restart). */
struct frame_sweep {
    u64 pa, pos;
    unsigned budget, n;
    void (*gone)(void *ctx, u64 va);
    void *ctx;
};
#define SWEEP_DONE (1ULL << 48)
bool unmap_frame_sweep(u64 pml4_pa, struct frame_sweep *s);
/* Empty the table of `level` at table_pa: free every table below it and
 * report every page it mapped (the table itself stays). */
void free_table_below(u64 table_pa, int level, const struct table_walk *w);
/* Load an address space; flush its TLB entries too when flush is set. */
void switch_address_space(u64 pml4_pa, u16 pcid, bool flush);
/* The CR3 value of switch_address_space(pml4_pa, pcid, false). */
u64 paging_cr3(u64 pml4_pa, u16 pcid);
void flush_page(u64 va);
/* The checkpoint's write protection (checkpoint.h): clear the write bit of
 * every present user entry of the top-level table (x86 ANDs it over the
 * levels, so every page below turns read-only without a lower table
 * touched). */
void user_write_protect(u64 pml4_pa);
/* A write fault at va: give the write bit back along va's walk, pushing the
 * protection one level down at each entry that had lost it (at the last
 * table, every writable page's write bit is held back in PTE_CKW), then
 * give the faulting page its write bit and tell touch() its frame; true
 * when the page is now writable to the user (the write is retried), false
 * for a real fault.  Keep never clears the write bit of an upper-level
 * entry for any other reason, so a clear one is always this protection;
 * a leaf's is held back only with PTE_CKW set. */
bool user_write_lift(u64 pml4_pa, u64 va, void (*touch)(u64 pa));

/* KERNEL.CHECK_PAGING: violations of one invariant; *checked = mappings examined. */
u64 paging_check(unsigned check, u64 user_pml4_pa, u64 *checked);

#endif
