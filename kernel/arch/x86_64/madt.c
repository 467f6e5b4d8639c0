/* MADT parsing (ACPI 6.5, 5.2.12): entries of type 0-5 after a 44-byte
 * header; only the I/O APIC (1), interrupt source override (2) and local
 * APIC address override (5) matter here. */
#include "madt.h"
#include "lib.h"

#define MADT_IOAPIC 1
#define MADT_OVERRIDE 2
#define MADT_LAPIC_ADDR 5

static u32 rd32(const u8 *p) { return (u32)p[0] | (u32)p[1] << 8 | (u32)p[2] << 16 | (u32)p[3] << 24; }
static u64 rd64(const u8 *p) { return rd32(p) | (u64)rd32(p + 4) << 32; }

/* An override's MPS INTI flags: polarity in bits 0-1, trigger in 2-3 (01
 * high/edge, 11 low/level, 00 as the bus says: for ISA high and edge). */
static u8 override_mode(u16 flags)
{
    u8 mode = 0;
    if ((flags & 3) == 3)
        mode |= MADT_LOW;
    if (((flags >> 2) & 3) == 3)
        mode |= MADT_LEVEL;
    return mode;
}

void madt_parse(const struct acpi_header *h, struct madt *m)
{
    memset(m, 0, sizeof *m);
    m->lapic_pa = 0xfee00000;
    m->ioapic_pa = 0xfec00000;
    for (unsigned i = 0; i < 16; i++)
        m->isa_gsi[i] = (u8)i;
    for (unsigned i = 16; i < KEEP_IRQ_LINES; i++)
        m->mode[i] = MADT_LEVEL | MADT_LOW;
    if (!h || h->length < 44)
        return;
    const u8 *t = (const u8 *)h, *end = t + h->length;
    m->found = true;
    m->lapic_pa = rd32(t + 36);
    bool ioapic = false;
    for (const u8 *e = t + 44; e + 2 <= end && e[1] >= 2 && e + e[1] <= end; e += e[1]) {
        if (e[0] == MADT_IOAPIC && e[1] >= 12 && !ioapic && rd32(e + 8) == 0) {
            m->ioapic_pa = rd32(e + 4);
            ioapic = true;
        } else if (e[0] == MADT_OVERRIDE && e[1] >= 10 && e[2] == 0 && e[3] < 16) {
            u32 gsi = rd32(e + 4);
            if (gsi >= KEEP_IRQ_LINES)
                continue;
            m->isa_gsi[e[3]] = (u8)gsi;
            m->mode[gsi] = override_mode((u16)(e[8] | e[9] << 8));
            m->overrides++;
        } else if (e[0] == MADT_LAPIC_ADDR && e[1] >= 12) {
            m->lapic_pa = rd64(e + 4);
        }
    }
}
