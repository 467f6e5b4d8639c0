/* DMA domains (docs/devices.md).  A domain is one frame from its account
 * and second-level page tables (VT-d's format: bit 0 read, bit 1 write)
 * grown from the same account.  MAP takes a PAGE capability, so a driver
 * can only let its device reach frames it holds, and raises the frame's
 * map count (MEMORY.RECLAIM refuses a mapped frame); UNMAP invalidates the
 * IOMMU's IOTLB before it lowers the count.  Devices are attached by their
 * configuration page (a DEVMEM capability), which vtd.c turns into a
 * context entry naming the domain's number.  Without an IOMMU a domain
 * still keeps its mappings (a mediator may check against them), but
 * attaches nothing; there a mediator HOLDs the frames of each request it
 * puts on a device, and a frame whose page is destroyed under a hold is
 * not reused until RELEASE (frame.c: FRAME_HELD). */
#include "dma_domain.h"
#include "account.h"
#include "acpi.h"
#include "device.h"
#include "frame.h"
#include "invoke.h"
#include "ipc.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"
#include "vtd.h"

#define SL_R 1ULL
#define SL_W 2ULL
#define MAX_DOMAINS 256

struct dma_domain {
    u64 root_pa;              /* top-level table */
    struct account *account;  /* paid for the frame and the tables */
    u16 did;                  /* the IOMMU's domain number (1 up; 0 is reserved) */
    u32 devices;
    u64 pages;
    struct cap handler;       /* SENDER for DMA_FAULT messages, or null */
    u64 faults, lost;
    u32 qhead, qcount;
    u64 queue[KEEP_DMA_FAULT_QUEUE][4];
    /* Holds: tables of 512 words, each a held frame's address | its tag (0: empty). */
    u64 hold_pa[KEEP_DMA_HOLD_FRAMES];
    u64 holds;
    bool dying; /* its destruction is under way, in parts: every method is STALE */
};
_Static_assert(sizeof(struct dma_domain) <= PAGE_SIZE, "a domain fits its frame");

static struct dma_domain *domains[MAX_DOMAINS]; /* by number */

static struct dma_domain *domain_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }
static unsigned address_bits(void) { return 12 + 9 * vtd_levels(); }

/* The entry for addr in the table of `level` (levels..1) at table_pa. */
static u64 *entry(u64 table_pa, unsigned level, u64 addr)
{
    return (u64 *)phys_to_virt(table_pa) + ((addr >> (12 + 9 * (level - 1))) & 511);
}

/* The leaf entry for addr; NULL when a table on the way is missing, unless
 * create, which takes them from the account (the caller checked it holds
 * dma_tables_missing frames). */
static u64 *leaf(struct dma_domain *d, u64 addr, bool create)
{
    u64 t = d->root_pa;
    for (unsigned level = vtd_levels(); level > 1; level--) {
        u64 *e = entry(t, level, addr);
        if (!(*e & (SL_R | SL_W))) {
            if (!create)
                return NULL;
            *e = kmem_alloc(d->account, FRAME_PAGETABLE) | SL_R | SL_W;
        }
        t = *e & PTE_ADDR;
    }
    return entry(t, 1, addr);
}

static unsigned dma_tables_missing(struct dma_domain *d, u64 addr)
{
    u64 t = d->root_pa;
    for (unsigned level = vtd_levels(); level > 1; level--) {
        u64 *e = entry(t, level, addr);
        if (!(*e & (SL_R | SL_W)))
            return level - 1;
        t = *e & PTE_ADDR;
    }
    return 0;
}

u64 dma_domain_create(struct invocation *inv, struct account *a)
{
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[0], &dest);
    if (e)
        return e;
    unsigned did = 1, limit = vtd_domain_ids() < MAX_DOMAINS ? vtd_domain_ids() : MAX_DOMAINS;
    while (did < limit && domains[did])
        did++;
    if (did >= limit)
        return KEEP_ERR_BAD_STATE;
    if ((e = kmem_need(inv, a, 2)))
        return e;
    u64 pa = kmem_alloc(a, FRAME_DMA_DOMAIN);
    struct dma_domain *d = phys_to_virt(pa);
    d->account = a;
    d->did = (u16)did;
    d->root_pa = kmem_alloc(a, FRAME_PAGETABLE);
    domains[did] = d;
    *dest = cap_make(KEEP_TYPE_DMA_DOMAIN, KEEP_RIGHT_ALL, 0, frame_info(pa)->version, pa);
    return KEEP_ERR_OK;
}

/* Free the tables below table_pa (of `level`) and unpin the pages, at
 * most *budget tables (counted down to 0, and those over the last, their
 * subtrees empty): true when nothing is left below it; false when the
 * budget ran out first, every entry it cleared gone, so that another call
 * goes on. */
static bool free_below(struct account *a, u64 table_pa, unsigned level, unsigned *budget)
{
    u64 *t = phys_to_virt(table_pa);
    for (unsigned i = 0; i < 512; i++) {
        if (!(t[i] & (SL_R | SL_W)))
            continue;
        if (level > 1) {
            if (!*budget || !free_below(a, t[i] & PTE_ADDR, level - 1, budget))
                return false;
            kmem_free(a, t[i] & PTE_ADDR);
            if (*budget)
                (*budget)--;
        } else {
            frame_info(t[i] & PTE_ADDR)->maps--;
        }
        t[i] = 0;
    }
    return true;
}

static u64 *mapped(struct dma_domain *d, u64 addr, u64 *err)
{
    u64 *l;
    if ((addr & (PAGE_SIZE - 1)) || addr >> address_bits())
        *err = KEEP_ERR_INVALID_ARG;
    else if (!(l = leaf(d, addr, false)) || !(*l & (SL_R | SL_W)))
        *err = KEEP_ERR_NOT_MAPPED;
    else
        return l;
    return NULL;
}

/* The rights of a leaf entry, as a capability's. */
static u64 leaf_rights(u64 e) { return (e & SL_R ? KEEP_RIGHT_READ : 0) | (e & SL_W ? KEEP_RIGHT_WRITE : 0); }

/* Let go of the holds with tags in [tag, tag + count); how many. */
static u64 release(struct dma_domain *d, u64 tag, u64 count)
{
    u64 n = 0;
    for (unsigned t = 0; t < KEEP_DMA_HOLD_FRAMES && d->hold_pa[t]; t++) {
        u64 *h = phys_to_virt(d->hold_pa[t]);
        for (unsigned i = 0; i < 512; i++) {
            if (!h[i] || (h[i] & (PAGE_SIZE - 1)) - tag >= count)
                continue;
            frame_unhold(h[i] & ~(PAGE_SIZE - 1));
            h[i] = 0;
            n++;
        }
    }
    d->holds -= n;
    return n;
}

static u64 hold(struct invocation *inv, struct dma_domain *d)
{
    u64 tag = inv->arg[1], need = inv->arg[2], e;
    if (vtd_enabled())
        return KEEP_ERR_BAD_STATE;
    if (tag >= KEEP_DMA_HOLD_TAGS || !need || (need & ~(KEEP_RIGHT_READ | KEEP_RIGHT_WRITE)))
        return KEEP_ERR_INVALID_ARG;
    u64 *l = mapped(d, inv->arg[0], &e);
    if (!l)
        return e;
    u64 have = leaf_rights(*l), pa = *l & PTE_ADDR;
    if ((need & have) != need)
        return KEEP_ERR_NO_RIGHTS;
    if (frame_info(pa)->holds == KEEP_DMA_HOLD_MAX)
        return KEEP_ERR_IN_USE;
    u64 *slot = NULL;
    unsigned t = 0;
    for (; t < KEEP_DMA_HOLD_FRAMES && d->hold_pa[t] && !slot; t++) {
        u64 *h = phys_to_virt(d->hold_pa[t]);
        for (unsigned i = 0; i < 512 && !slot; i++)
            if (!h[i])
                slot = &h[i];
    }
    if (!slot) {
        if (t == KEEP_DMA_HOLD_FRAMES)
            return KEEP_ERR_IN_USE;
        if ((e = kmem_need(inv, d->account, 1)))
            return e;
        d->hold_pa[t] = kmem_alloc(d->account, FRAME_PAGETABLE);
        slot = phys_to_virt(d->hold_pa[t]);
    }
    *slot = pa | tag;
    frame_hold(pa);
    d->holds++;
    inv->res[0] = have;
    inv->res[1] = pa / PAGE_SIZE;
    return KEEP_ERR_OK;
}

/* Destroy d, freeing at most *budget of its tables: false when the budget
 * ran out first.  The first part takes its devices off (the IOTLB is
 * invalidated: no device reaches the pages after it) and its holds; from
 * then on it is dying, every method STALE, until the last part raises its
 * version. */
static bool destroy(struct dma_domain *d, struct account *a, unsigned *budget)
{
    u64 pa = virt_to_phys_window(d);
    if (!d->dying) {
        release(d, 0, KEEP_DMA_HOLD_TAGS);
        for (unsigned t = 0; t < KEEP_DMA_HOLD_FRAMES && d->hold_pa[t]; t++) {
            kmem_free(a, d->hold_pa[t]);
            d->hold_pa[t] = 0;
        }
        vtd_detach_domain(d->did, d->devices);
        d->devices = 0;
        d->dying = true;
    }
    if (!free_below(a, d->root_pa, vtd_levels(), budget))
        return false;
    kmem_free(a, d->root_pa);
    domains[d->did] = NULL;
    frame_info(pa)->version++;
    kmem_free(a, pa);
    return true;
}

u64 dma_domain_destroy(struct invocation *inv, struct cap c, struct account *a)
{
    struct dma_domain *d = domain_from_cap(c);
    if (d->account != a)
        return KEEP_ERR_INVALID_ARG;
    unsigned tables = KEEP_DESTROY_TABLES; /* in parts, as an address space */
    if (!destroy(d, a, &tables)) {
        destroy_restarts++;
        inv->caller->regs.rip -= 2;
        return INV_DONE;
    }
    return KEEP_ERR_OK;
}

/* Clear every leaf below table_pa (of `level`) that maps pa; how many. */
static u64 unmap_below(u64 table_pa, unsigned level, u64 pa)
{
    u64 *t = phys_to_virt(table_pa), n = 0;
    for (unsigned i = 0; i < 512; i++) {
        if (!(t[i] & (SL_R | SL_W)))
            continue;
        if (level > 1) {
            n += unmap_below(t[i] & PTE_ADDR, level - 1, pa);
        } else if ((t[i] & PTE_ADDR) == pa) {
            t[i] = 0;
            n++;
        }
    }
    return n;
}

u64 dma_domain_unmap_frame(u64 pa)
{
    u64 total = 0;
    for (unsigned i = 1; i < MAX_DOMAINS; i++) {
        struct dma_domain *d = domains[i];
        u64 n = d ? unmap_below(d->root_pa, vtd_levels(), pa) : 0;
        if (!n)
            continue;
        vtd_flush_domain(d->did); /* before the frame can be reused */
        d->pages -= n;
        frame_info(pa)->maps -= (u32)n;
        total += n;
    }
    return total;
}

bool dma_domain_destroy_all(struct account *a, unsigned *budget)
{
    /* Each domain counts as a table (its root) against the part's budget,
     * so that an account holding every domain number is taken down in
     * parts too, not only one with deep domains. */
    for (unsigned i = 1; i < MAX_DOMAINS; i++) {
        if (!domains[i] || domains[i]->account != a)
            continue;
        if (!*budget || !destroy(domains[i], a, budget))
            return false;
        if (*budget)
            (*budget)--;
    }
    return true;
}

static u64 map(struct invocation *inv, struct dma_domain *d)
{
    struct cap pg;
    u64 addr = inv->arg[1], rights = inv->arg[2];
    if (!rights || (rights & ~(KEEP_RIGHT_READ | KEEP_RIGHT_WRITE)))
        return KEEP_ERR_INVALID_ARG;
    u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_PAGE, rights, &pg);
    if (e)
        return e;
    /* Persistent memory never reaches a device: a device's writes would
     * escape the checkpoint's copy-on-write (checkpoint.h). */
    if ((addr & (PAGE_SIZE - 1)) || addr >> address_bits() || frame_in_pool(cap_pa(pg)))
        return KEEP_ERR_INVALID_ARG;
    u64 *l = leaf(d, addr, false);
    if (l && (*l & (SL_R | SL_W)))
        return KEEP_ERR_EXISTS;
    if (frame_info(cap_pa(pg))->flags & FRAME_REVOKING)
        return KEEP_ERR_IN_USE; /* being revoked (memory.c) */
    if ((e = kmem_need(inv, d->account, dma_tables_missing(d, addr))))
        return e;
    l = leaf(d, addr, true);
    *l = cap_pa(pg) | (rights & KEEP_RIGHT_READ ? SL_R : 0) | (rights & KEEP_RIGHT_WRITE ? SL_W : 0);
    frame_info(cap_pa(pg))->maps++;
    d->pages++;
    vtd_flush_domain(d->did); /* caching mode: even a new mapping may be cached as absent */
    return KEEP_ERR_OK;
}


static u64 unmap(struct dma_domain *d, u64 addr)
{
    u64 e, *l = mapped(d, addr, &e);
    if (!l)
        return e;
    u64 pa = *l & PTE_ADDR;
    *l = 0;
    vtd_flush_domain(d->did); /* before the frame can be reclaimed */
    frame_info(pa)->maps--;
    d->pages--;
    return KEEP_ERR_OK;
}

/* The source id of the PCI function named by (devmem, offset). */
static u64 function(struct invocation *inv, u16 *sid) { return devmem_pci_function(inv, inv->arg[0], inv->arg[1], sid); }

static u64 attach(struct invocation *inv, struct dma_domain *d)
{
    u16 sid;
    u64 e = function(inv, &sid);
    if (e)
        return e;
    if (!vtd_enabled() || !vtd_covers(sid))
        return KEEP_ERR_BAD_STATE;
    if (vtd_device_domain(sid))
        return KEEP_ERR_IN_USE;
    if (vtd_attach_needs_frame(sid) && !frame_free_count())
        return KEEP_ERR_NO_MEMORY;
    vtd_attach(sid, d->did, d->root_pa);
    d->devices++;
    return KEEP_ERR_OK;
}

static u64 detach(struct invocation *inv, struct dma_domain *d)
{
    u16 sid;
    u64 e = function(inv, &sid);
    if (e)
        return e;
    if (!vtd_enabled() || vtd_device_domain(sid) != d->did)
        return KEEP_ERR_NOT_MAPPED;
    vtd_detach(sid);
    d->devices--;
    return KEEP_ERR_OK;
}

/* The handler's process, when it waits in an open receive. */
static struct process *receiving_handler(struct dma_domain *d)
{
    if (cap_is_null(d->handler))
        return NULL;
    struct process *p = process_from_cap(d->handler);
    return p && !process_is_out(p) && p->state == KEEP_STATE_BLOCKED && p->wait_kind == WAIT_RECV ? p : NULL;
}

bool dma_domain_fault(u16 did, u16 sid, u64 addr, unsigned reason, bool write)
{
    struct dma_domain *d = did < MAX_DOMAINS ? domains[did] : NULL;
    if (!d)
        return false;
    d->faults++;
    struct process *h = cap_is_null(d->handler) ? NULL : process_from_cap(d->handler);
    if (!h)
        return true; /* counted only */
    if (d->qcount == KEEP_DMA_FAULT_QUEUE) {
        d->lost++;
        return true;
    }
    u64 *w = d->queue[(d->qhead + d->qcount++) % KEEP_DMA_FAULT_QUEUE];
    w[0] = sid;
    w[1] = addr;
    w[2] = reason;
    w[3] = write;
    struct process *p = receiving_handler(d);
    if (p)
        dma_domain_deliver_pending(p);
    else if (!process_is_out(h)) /* an exported handler finds it at a later fault */
        h->irq_pending |= DMA_FAULT_PENDING;
    return true;
}

bool dma_domain_deliver_pending(struct process *p)
{
    for (unsigned i = 1; i < MAX_DOMAINS; i++) {
        struct dma_domain *d = domains[i];
        if (!d || !d->qcount || cap_is_null(d->handler) || process_from_cap(d->handler) != p)
            continue;
        u64 *w = d->queue[d->qhead];
        d->qhead = (d->qhead + 1) % KEEP_DMA_FAULT_QUEUE;
        d->qcount--;
        ipc_deliver_kernel(p, KEEP_LABEL_DMA_FAULT, cap_payload(d->handler), w);
        return true;
    }
    p->irq_pending &= ~DMA_FAULT_PENDING;
    return false;
}

u64 dma_domain_invoke(struct invocation *inv)
{
    struct dma_domain *d = domain_from_cap(inv->cap);
    if (inv->method < KEEP_M_DMA_DOMAIN_INFO || inv->method > KEEP_M_DMA_DOMAIN_RELEASE)
        return KEEP_ERR_INVALID_METHOD;
    if (d->dying) /* as good as destroyed (destroy) */
        return KEEP_ERR_STALE;
    switch (inv->method) {
    case KEEP_M_DMA_DOMAIN_INFO:
        inv->res[0] = address_bits();
        inv->res[1] = d->pages;
        inv->res[2] = d->devices;
        inv->res[3] = vtd_enabled();
        return KEEP_ERR_OK;
    case KEEP_M_DMA_DOMAIN_MAP:
        return map(inv, d);
    case KEEP_M_DMA_DOMAIN_UNMAP:
        return unmap(d, inv->arg[0]);
    case KEEP_M_DMA_DOMAIN_LOOKUP: {
        u64 e, *l = mapped(d, inv->arg[0], &e);
        if (!l)
            return e;
        inv->res[0] = leaf_rights(*l);
        inv->res[1] = (*l & PTE_ADDR) / PAGE_SIZE;
        return KEEP_ERR_OK;
    }
    case KEEP_M_DMA_DOMAIN_ATTACH:
        return attach(inv, d);
    case KEEP_M_DMA_DOMAIN_DETACH:
        return detach(inv, d);
    case KEEP_M_DMA_DOMAIN_SET_FAULT_HANDLER: {
        struct cap s = {0, 0};
        if (inv->arg[0]) {
            u64 e = cap_lookup(inv->caller->as, inv->arg[0], KEEP_TYPE_SENDER, KEEP_RIGHT_WRITE, &s);
            if (e)
                return e;
            if (process_is_out(process_from_cap(s)))
                return KEEP_ERR_BAD_STATE; /* exported (ACCOUNT.REVOKE_PROCESS) */
        }
        d->handler = s;
        d->qcount = 0; /* faults queued for the old handler are not the new one's */
        return KEEP_ERR_OK;
    }
    case KEEP_M_DMA_DOMAIN_HOLD:
        return hold(inv, d);
    case KEEP_M_DMA_DOMAIN_RELEASE:
        if (inv->arg[0] >= KEEP_DMA_HOLD_TAGS || inv->arg[1] > KEEP_DMA_HOLD_TAGS - inv->arg[0])
            return KEEP_ERR_INVALID_ARG;
        inv->res[0] = release(d, inv->arg[0], inv->arg[1]);
        return KEEP_ERR_OK;
    default:
        inv->res[0] = d->faults;
        inv->res[1] = d->qcount;
        inv->res[2] = d->lost;
        inv->res[3] = d->holds;
        return KEEP_ERR_OK;
    }
}
