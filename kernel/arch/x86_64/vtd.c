/* Intel VT-d DMA and interrupt remapping (Intel VT-d specification,
 * chapters 3, 5, 6, 7, 9, 10).  One remapping unit, the first the DMAR
 * table names for PCI segment 0 (QEMU's intel-iommu).  The root table has
 * an entry per bus, each bus a context table with an entry per function,
 * which names the function's domain: its number and the top of its
 * second-level page tables (dma_domain.c).  A function without a context
 * entry has all its DMA blocked and reported as a fault.
 *
 * Interrupt remapping, where the unit has it (and queued invalidation,
 * which it needs): every interrupt message goes through the interrupt
 * remapping table, which holds the I/O APIC's lines, each entry usable by
 * the I/O APIC alone (its source id, from DMAR), and the MSI lines, each
 * usable by the one PCI function it was routed to.  Compatibility-
 * format messages are not enabled, so by the specification a device that
 * writes to the interrupt address range (a forged MSI) is stopped and
 * reported like a DMA fault; QEMU 7.2 delivers them anyway (docs/devices.md). */
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
#define REG_IQT 0x88
#define REG_IQA 0x90
#define REG_IRTA 0xb8

#define GCMD_TE (1u << 31)
#define GCMD_SRTP (1u << 30)
#define GCMD_QIE (1u << 26)
#define GCMD_IRE (1u << 25)
#define GCMD_SIRTP (1u << 24)
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
static int ioapic_sid = -1; /* the I/O APIC's source id (DMAR device scope type 3) */

/* Queued invalidation: a page of 256 descriptors of 2 words, and the word a
 * wait descriptor sets when the unit has done everything before it. */
static u64 *inv_queue;
static unsigned inv_tail;
static volatile u32 inv_done;
/* The interrupt remapping table: entry n for interrupt line n (I/O APIC
 * lines, then MSI lines). */
static u64 *irt;

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

/* Queue one descriptor and a wait descriptor behind it; return when the
 * unit has processed both. */
static void queue_invalidation(u64 lo, u64 hi)
{
    u64 *d = inv_queue + 2 * inv_tail;
    d[0] = lo;
    d[1] = hi;
    inv_tail = (inv_tail + 1) % 256;
    inv_done = 0;
    d = inv_queue + 2 * inv_tail;
    d[0] = 0x5 | 1u << 5 | 1ULL << 32; /* wait, status write of 1 */
    d[1] = (u64)(uptr)&inv_done - KERNEL_VMA; /* the kernel image lies at KERNEL_VMA + its physical address */
    inv_tail = (inv_tail + 1) % 256;
    __asm__ volatile("mfence" ::: "memory"); /* descriptors and tables before the tail */
    wr64(REG_IQT, (u64)inv_tail << 4);
    while (!inv_done)
        __asm__ volatile("pause");
}

/* Once queued invalidation is on, register-based invalidation must not be used. */
static void context_invalidate_all(void)
{
    if (inv_queue) {
        queue_invalidation(0x1 | 1u << 4, 0); /* context cache, global */
        return;
    }
    wr64(REG_CCMD, CCMD_ICC | CCMD_GLOBAL);
    while (rd64(REG_CCMD) & CCMD_ICC)
        __asm__ volatile("pause");
}

static void iotlb_invalidate(u64 what)
{
    if (inv_queue) { /* IOTLB: the register's granularity (bits 61:60) at bits 5:4, DID at 31:16 */
        queue_invalidation(0x2 | (what >> 60 & 3) << 4 | 3u << 6 | (what >> 32 & 0xffff) << 16, 0);
        return;
    }
    __asm__ volatile("mfence" ::: "memory"); /* table writes before the command */
    wr64(iotlb_off + 8, IOTLB_IVT | what);
    while (rd64(iotlb_off + 8) & IOTLB_IVT)
        __asm__ volatile("pause");
}

bool vtd_route_line(unsigned line, unsigned vector, bool level)
{
    if (!irt)
        return false;
    /* Present, physical destination APIC 0, fixed delivery; the high word
     * lets only the I/O APIC's source id use it (SVT 1, SQ 0). */
    irt[2 * line + 1] = (u64)ioapic_sid | 1ULL << 18;
    irt[2 * line] = 1 | (level ? 1u << 4 : 0) | (u64)vector << 16;
    queue_invalidation(0x4 | 1u << 4 | (u64)line << 32, 0); /* interrupt entry cache, that index */
    return true;
}

void vtd_route_msi(unsigned handle, unsigned vector, u16 sid, u64 *addr, u64 *data)
{
    if (!irt) { /* compatibility format: this CPU (APIC id 0), fixed, edge */
        *addr = 0xfee00000u;
        *data = vector;
        return;
    }
    /* Present, fixed, edge, physical destination APIC 0; only function sid
     * may use the entry (SVT 1, SQ 0: all 16 bits compared). */
    irt[2 * handle + 1] = (u64)sid | 1ULL << 18;
    irt[2 * handle] = 1 | (u64)vector << 16;
    queue_invalidation(0x4 | 1u << 4 | (u64)handle << 32, 0);
    /* Remappable format (bit 4): handle[14:0] at bits 19:5, handle[15] at
     * bit 2, no subhandle (SHV 0), so the data is 0. */
    *addr = 0xfee00000u | (u64)(handle & 0x7fff) << 5 | 1u << 4 | (u64)(handle >> 15 & 1) << 2;
    *data = 0;
}

void vtd_unroute_msi(unsigned handle)
{
    if (!irt)
        return;
    irt[2 * handle] = irt[2 * handle + 1] = 0;
    queue_invalidation(0x4 | 1u << 4 | (u64)handle << 32, 0);
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

void vtd_detach_domain(u16 did, unsigned devices)
{
    for (unsigned bus = 0; regs && devices && bus < 256; bus++) {
        if (!(root_table[2 * bus] & 1))
            continue;
        for (unsigned devfn = 0; devices && devfn < 256; devfn++)
            if (vtd_device_domain((u16)(bus << 8 | devfn)) == did) {
                vtd_detach((u16)(bus << 8 | devfn));
                devices--;
            }
    }
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
            for (unsigned i = 16; i + 8 <= len && p[i + 1] >= 6; i += p[i + 1]) {
                u16 sid = (u16)(p[i + 5] << 8 | p[i + 6] << 3 | (p[i + 7] & 7));
                if (p[i] == 1 && p[i + 1] == 8 && scoped_count < ARRAY_SIZE(scoped))
                    scoped[scoped_count++] = sid;
                if (p[i] == 3 && p[i + 1] == 8) /* an I/O APIC */
                    ioapic_sid = sid;
            }
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
    /* Queued invalidation, and with it interrupt remapping, where the unit
     * has both and DMAR names the I/O APIC. */
    u64 iq = (ecap >> 1 & 1) ? frame_alloc(FRAME_KERNEL) : 0;
    if (iq) {
        wr64(REG_IQT, 0);
        wr64(REG_IQA, iq); /* 128-bit descriptors, one page */
        gcmd(GCMD_QIE);
        inv_queue = phys_to_virt(iq);
    }
    u64 it = inv_queue && (ecap >> 3 & 1) && ioapic_sid >= 0 ? frame_alloc(FRAME_KERNEL) : 0;
    if (it) {
        irt = phys_to_virt(it);
        wr64(REG_IRTA, it | 7); /* 2^(7+1) = 256 entries, xAPIC format */
        gcmd(GCMD_SIRTP);
        queue_invalidation(0x4, 0); /* interrupt entry cache, global */
        gcmd(GCMD_IRE);             /* CFI stays 0: compatibility-format messages are refused */
    }
    /* Fault events: an MSI to this CPU's local APIC (id 0); the unit's own
     * messages are never remapped. */
    wr32(REG_FEDATA, VEC_DMA_FAULT);
    wr32(REG_FEADDR, 0xfee00000u);
    wr32(REG_FEUADDR, 0);
    wr32(REG_FECTL, 0);
    gcmd(GCMD_TE);
    kprintf("keep: IOMMU at %lx: DMA remapping on, %u-level tables, %u fault records%s, scope %s%u functions; "
            "interrupt remapping %s\n",
            base, levels, fault_count, (cap >> 7) & 1 ? ", caching mode" : "", all_functions ? "all PCI, " : "",
            scoped_count, irt ? "on" : "off");
}
