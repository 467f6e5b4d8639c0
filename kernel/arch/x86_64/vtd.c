/* Intel VT-d DMA remapping (Intel VT-d specification, chapters 3, 6, 7, 9,
 * 10; register-based invalidation).  One remapping unit, the one the DMAR
 * table says covers every PCI device (QEMU's intel-iommu).  The root table
 * has an entry per bus, each bus a context table with an entry per
 * function, which names the function's domain: its number and the top of
 * its second-level page tables (dma_domain.c).  A function without a
 * context entry has all its DMA blocked and reported as a fault. */
#include "vtd.h"
#include "acpi.h"
#include "arch.h"
#include "dma_domain.h"
#include "frame.h"
#include "keep/abi.h"
#include "lib.h"
#include "paging.h"

#define REG_CAP 0x08
#define REG_ECAP 0x10
#define REG_GCMD 0x18
#define REG_GSTS 0x1c
#define REG_RTADDR 0x20
#define REG_CCMD 0x28
#define REG_FSTS 0x34
#define REG_FECTL 0x38
#define REG_FEDATA 0x3c
#define REG_FEADDR 0x40
#define REG_FEUADDR 0x44

#define GCMD_TE (1u << 31)
#define GCMD_SRTP (1u << 30)
#define GSTS_KEEP 0x96ffffffu /* the persistent bits of GSTS that GCMD repeats */
#define CCMD_ICC (1ULL << 63)
#define CCMD_GLOBAL (1ULL << 61)
#define IOTLB_IVT (1ULL << 63)
#define IOTLB_GLOBAL (1ULL << 60)
#define IOTLB_DOMAIN (2ULL << 60)
#define FRCD_F (1ULL << 63)
#define FSTS_PFO 1u

static volatile u8 *regs; /* NULL: no IOMMU, nothing translated */
static u64 reg_base, reg_pages;
static u64 cap, ecap;
static unsigned iotlb_off, fault_off, fault_count, levels;
static u64 *root_table; /* 256 entries of 2 words: bus -> context table */
static bool all_functions; /* the unit translates every function's DMA ... */
static u16 scoped[64];     /* ... or these (source ids) */
static unsigned scoped_count;

static u32 rd32(unsigned off) { return *(volatile u32 *)(regs + off); }
static u64 rd64(unsigned off) { return *(volatile u64 *)(regs + off); }
static void wr32(unsigned off, u32 v) { *(volatile u32 *)(regs + off) = v; }
static void wr64(unsigned off, u64 v) { *(volatile u64 *)(regs + off) = v; }

bool vtd_enabled(void) { return regs != NULL; }
unsigned vtd_levels(void) { return levels ? levels : 3; }
unsigned vtd_domain_ids(void) { return regs ? 1u << (4 + 2 * (cap & 7)) : 65536; }
bool vtd_owns_page(u64 pa) { return regs && pa >= reg_base && pa < reg_base + reg_pages * PAGE_SIZE; }

/* Set one GCMD bit and wait for the unit to show it in GSTS. */
static void gcmd(u32 bit)
{
    wr32(REG_GCMD, (rd32(REG_GSTS) & GSTS_KEEP) | bit);
    while (!(rd32(REG_GSTS) & bit))
        __asm__ volatile("pause");
}

static void context_invalidate_all(void)
{
    wr64(REG_CCMD, CCMD_ICC | CCMD_GLOBAL);
    while (rd64(REG_CCMD) & CCMD_ICC)
        __asm__ volatile("pause");
}

static void iotlb_invalidate(u64 what)
{
    __asm__ volatile("mfence" ::: "memory"); /* table writes before the command */
    wr64(iotlb_off + 8, IOTLB_IVT | what);
    while (rd64(iotlb_off + 8) & IOTLB_IVT)
        __asm__ volatile("pause");
}

void vtd_flush_domain(u16 did)
{
    if (regs)
        iotlb_invalidate(IOTLB_DOMAIN | (u64)did << 32);
}

static u64 *context_entry(u16 sid)
{
    u64 ct = root_table[2 * (sid >> 8)] & PTE_ADDR;
    return ct ? (u64 *)phys_to_virt(ct) + 2 * (sid & 0xff) : NULL;
}

bool vtd_covers(u16 sid)
{
    for (unsigned i = 0; i < scoped_count; i++)
        if (scoped[i] == sid)
            return true;
    return regs && all_functions;
}

u16 vtd_device_domain(u16 sid)
{
    u64 *ce = regs ? context_entry(sid) : NULL;
    return ce && (ce[0] & 1) ? (u16)(ce[1] >> 8) : 0;
}

bool vtd_attach_needs_frame(u16 sid) { return !context_entry(sid); }

void vtd_attach(u16 sid, u16 did, u64 root_pa)
{
    u64 *root = &root_table[2 * (sid >> 8)];
    if (!(*root & 1)) {
        u64 ct = frame_alloc(FRAME_KERNEL);
        ASSERT(ct);
        *root = ct | 1;
    }
    u64 *ce = context_entry(sid);
    /* Translation type 0 (untranslated requests through the second-level
     * tables), address width 1 (39 bits, 3 levels) or 2 (48, 4). */
    ce[1] = (u64)did << 8 | (levels - 2);
    __asm__ volatile("" ::: "memory");
    ce[0] = root_pa | 1;
    context_invalidate_all();
    vtd_flush_domain(did);
}

void vtd_detach(u16 sid)
{
    u64 *ce = context_entry(sid);
    u16 did = (u16)(ce[1] >> 8);
    ce[0] = ce[1] = 0;
    context_invalidate_all();
    vtd_flush_domain(did);
}

unsigned vtd_detach_domain(u16 did)
{
    unsigned n = 0;
    for (unsigned sid = 0; regs && sid < 65536; sid++)
        if (vtd_device_domain((u16)sid) == did) {
            vtd_detach((u16)sid);
            n++;
        }
    return n;
}

void vtd_fault_irq(void)
{
    if (!regs)
        return;
    for (unsigned i = 0; i < fault_count; i++) {
        unsigned off = fault_off + 16 * i;
        u64 hi = rd64(off + 8);
        if (!(hi & FRCD_F))
            continue;
        u64 addr = rd64(off) & PTE_ADDR;
        u16 sid = (u16)hi;
        unsigned reason = (unsigned)(hi >> 32) & 0xff;
        bool write = !((hi >> 62) & 1); /* T: 0 write, 1 read */
        wr32(off + 12, 1u << 31);       /* clear F */
        u16 did = vtd_device_domain(sid);
        if (!did || !dma_domain_fault(did, sid, addr, reason, write))
            kprintf("keep: DMA fault of device %02x:%02x.%u (no domain handles it): %s at %lx, reason %u\n",
                    sid >> 8, (sid >> 3) & 31, sid & 7, write ? "write" : "read", addr, reason);
    }
    wr32(REG_FSTS, FSTS_PFO);
}

void vtd_init(void)
{
    const struct acpi_header *t = acpi_find("DMAR");
    if (!t) {
        kprintf("keep: no IOMMU (no ACPI DMAR table): DMA is not confined\n");
        return;
    }
    /* Remapping structures follow the 48-byte header; type 0 is a DRHD:
     * the first one of segment 0 is the unit used.  It covers every PCI
     * function (INCLUDE_PCI_ALL) or those its device scopes list; QEMU
     * lists each endpoint (scope type 1, a one-step path: device, function). */
    u64 base = 0;
    for (const u8 *p = (const u8 *)t + 48; !base && p + 16 <= (const u8 *)t + t->length;) {
        u16 type = *(const u16 *)p, len = *(const u16 *)(p + 2);
        if (len < 4)
            break;
        if (type == 0 && len >= 16 && *(const u16 *)(p + 6) == 0) {
            memcpy(&base, p + 8, 8);
            all_functions = p[4] & 1;
            for (unsigned i = 16; i + 8 <= len && p[i + 1] >= 6; i += p[i + 1])
                if (p[i] == 1 && p[i + 1] == 8 && scoped_count < ARRAY_SIZE(scoped))
                    scoped[scoped_count++] = (u16)(p[i + 5] << 8 | p[i + 6] << 3 | (p[i + 7] & 7));
        }
        p += len;
    }
    if (!base) {
        kprintf("keep: the DMAR table names no remapping unit: DMA is not confined\n");
        return;
    }
    regs = map_mmio(base);
    cap = rd64(REG_CAP);
    ecap = rd64(REG_ECAP);
    iotlb_off = (unsigned)((ecap >> 8) & 0x3ff) * 16;
    fault_off = (unsigned)((cap >> 24) & 0x3ff) * 16;
    fault_count = (unsigned)((cap >> 40) & 0xff) + 1;
    unsigned end = fault_off + 16 * fault_count > iotlb_off + 16 ? fault_off + 16 * fault_count : iotlb_off + 16;
    if (end > PAGE_SIZE) { /* map_mmio maps one page */
        kprintf("keep: IOMMU registers beyond its first page (%u bytes): DMA is not confined\n", end);
        regs = NULL;
        return;
    }
    reg_base = base;
    reg_pages = 1;
    /* Second-level widths: 39 bits (3 levels) where offered, else 48 (4). */
    unsigned sagaw = (unsigned)(cap >> 8) & 0x1f;
    levels = (sagaw & 2) ? 3 : (sagaw & 4) ? 4 : 0;
    u64 rt = frame_alloc(FRAME_KERNEL);
    if (!levels || !rt) {
        kprintf("keep: IOMMU without 39- or 48-bit tables (SAGAW %x): DMA is not confined\n", sagaw);
        regs = NULL;
        return;
    }
    root_table = phys_to_virt(rt);
    wr64(REG_RTADDR, rt);
    gcmd(GCMD_SRTP);
    context_invalidate_all();
    iotlb_invalidate(IOTLB_GLOBAL);
    /* Fault events: an MSI to this CPU's local APIC (id 0). */
    wr32(REG_FEDATA, VEC_DMA_FAULT);
    wr32(REG_FEADDR, 0xfee00000u);
    wr32(REG_FEUADDR, 0);
    wr32(REG_FECTL, 0);
    gcmd(GCMD_TE);
    kprintf("keep: IOMMU at %lx: DMA remapping on, %u-level tables, %u fault records%s, scope %s%u functions\n",
            base, levels, fault_count, (cap >> 7) & 1 ? ", caching mode" : "", all_functions ? "all PCI, " : "",
            scoped_count);
}
