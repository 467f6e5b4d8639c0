/* ACPI table finder (the RSDP in the BIOS area, then the RSDT or XSDT) and
 * the MCFG table's ECAM window.  Tables are read through the physical
 * window, which covers RAM up to the last usable range rounded up to 2 MiB:
 * QEMU's firmware keeps them in reserved RAM just below that. */
#include "acpi.h"
#include "boot.h"
#include "lib.h"
#include "paging.h"

struct rsdp {
    char sig[8];
    u8 checksum;
    char oem[6];
    u8 revision;
    u32 rsdt;
    u32 length;
    u64 xsdt;
    u8 xchecksum, reserved[3];
} __attribute__((packed));

static u64 window_end(void) { return ALIGN_UP(memmap_ram_end(&boot_info.memmap), 2ULL << 20); }

static bool sum_ok(const void *p, u64 n)
{
    u8 s = 0;
    for (u64 i = 0; i < n; i++)
        s += ((const u8 *)p)[i];
    return s == 0;
}

static const struct acpi_header *table_at(u64 pa)
{
    if (!pa || pa + sizeof(struct acpi_header) > window_end())
        return NULL;
    const struct acpi_header *h = phys_to_virt(pa);
    if (h->length < sizeof *h || pa + h->length > window_end() || !sum_ok(h, h->length))
        return NULL;
    return h;
}

static const struct rsdp *find_rsdp(void)
{
    /* The first KiB of the EBDA, then the BIOS area 0xE0000-0xFFFFF, on
     * 16-byte boundaries (ACPI 5.2.5.1). */
    u64 ebda = (u64)*(const u16 *)phys_to_virt(0x40e) << 4;
    u64 ranges[2][2] = {{ebda, ebda + 1024}, {0xe0000, 0x100000}};
    for (unsigned r = ebda ? 0 : 1; r < 2; r++)
        for (u64 pa = ranges[r][0]; pa + 20 <= ranges[r][1]; pa += 16) {
            const struct rsdp *p = phys_to_virt(pa);
            if (!memcmp(p->sig, "RSD PTR ", 8) && sum_ok(p, 20))
                return p;
        }
    return NULL;
}

const struct acpi_header *acpi_find(const char sig[4])
{
    const struct rsdp *r = find_rsdp();
    if (!r)
        return NULL;
    bool x = r->revision >= 2 && r->xsdt;
    const struct acpi_header *root = table_at(x ? r->xsdt : r->rsdt);
    if (!root)
        return NULL;
    unsigned width = x ? 8 : 4;
    const u8 *entries = (const u8 *)(root + 1);
    for (u64 i = 0; i < (root->length - sizeof *root) / width; i++) {
        u64 pa = 0;
        memcpy(&pa, entries + i * width, width);
        const struct acpi_header *h = table_at(pa);
        if (h && !memcmp(h->sig, sig, 4))
            return h;
    }
    return NULL;
}

/* The ECAM area of PCI segment 0: 4 KiB per function, 1 MiB per bus. */
static u64 ecam_base;
static unsigned ecam_bus_first, ecam_bus_last;

void acpi_pci_init(void)
{
    const struct acpi_header *m = acpi_find("MCFG");
    if (!m)
        return;
    struct entry {
        u64 base;
        u16 segment;
        u8 bus_first, bus_last;
        u32 reserved;
    } __attribute__((packed));
    const struct entry *e = (const struct entry *)((const u8 *)m + sizeof *m + 8);
    for (; (const u8 *)(e + 1) <= (const u8 *)m + m->length; e++)
        if (e->segment == 0) {
            ecam_base = e->base;
            ecam_bus_first = e->bus_first;
            ecam_bus_last = e->bus_last;
            kprintf("keep: PCI configuration space (ECAM) at %lx, buses %u-%u\n", ecam_base,
                    ecam_bus_first, ecam_bus_last);
            return;
        }
}

bool acpi_pci_function(u64 pa, u16 *sid)
{
    if (!ecam_base || pa < ecam_base + ((u64)ecam_bus_first << 20) ||
        pa >= ecam_base + ((u64)(ecam_bus_last + 1) << 20) || (pa & (PAGE_SIZE - 1)))
        return false;
    *sid = (u16)((pa - ecam_base) >> 12);
    return true;
}
