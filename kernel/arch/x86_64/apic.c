/* Local APIC timer, I/O APIC routing and the legacy PIC (masked).
 * The timer is one-shot, armed for the scheduler's next event (sched.c):
 * in TSC-deadline mode where CPUID has it, else in one-shot count mode,
 * calibrated against the PIT at boot like the TSC.  Where
 * the APICs are and how each I/O APIC input is triggered come from the
 * ACPI MADT (madt.c). */
#include "arch.h"
#include "keep/abi.h"
#include "lib.h"
#include "madt.h"
#include "paging.h"
#include "vtd.h"
#include "x86.h"


#define LAPIC_EOI 0xB0
#define LAPIC_ISR 0x100 /* eight registers, 0x10 apart: in-service bits of vectors 0-255 */
#define LAPIC_SVR 0xF0
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_TIMER_INIT 0x380
#define LAPIC_TIMER_CUR 0x390
#define LAPIC_TIMER_DIV 0x3E0

static volatile u32 *lapic;
volatile u32 *lapic_isr0; /* in-service bits of vectors 0-31 (entry.S, trap.c); 0 until the APIC is mapped */
static volatile u32 *ioapic;
static struct madt madt;
static u64 tsc10;        /* TSC ticks in 10 ms */
static u32 apic10;       /* APIC-timer counts in 10 ms (divide by 16) */
static u64 armed = ~0ULL; /* the TSC value the timer fires at; ~0: none */

static void lapic_write(u32 reg, u32 v) { lapic[reg / 4] = v; }
static u32 lapic_read(u32 reg) { return lapic[reg / 4]; }

void apic_eoi(void) { lapic_write(LAPIC_EOI, 0); }

bool apic_in_service(unsigned vector) { return lapic_read(LAPIC_ISR + 0x10 * (vector / 32)) >> (vector % 32) & 1; }

static void ioapic_write(u32 reg, u32 v)
{
    ioapic[0] = reg;
    ioapic[4] = v;
}

static u32 ioapic_read(u32 reg)
{
    ioapic[0] = reg;
    return ioapic[4];
}

#define IOAPIC_ACTIVE_LOW (1u << 13)
#define IOAPIC_LEVEL (1u << 15)
#define IOAPIC_MASKED (1u << 16)

/* Fixed delivery to APIC 0 (the boot CPU).  With interrupt remapping on,
 * the entry is in remappable format (bit 48) with handle = line, and the
 * remapping entry carries vector and destination (vtd.c). */
void ioapic_program(unsigned line, unsigned vector, bool masked)
{
    u32 lo = vector | (madt.mode[line] & MADT_LOW ? IOAPIC_ACTIVE_LOW : 0) |
             (madt.mode[line] & MADT_LEVEL ? IOAPIC_LEVEL : 0) | (masked ? IOAPIC_MASKED : 0);
    u32 hi = vtd_route_line(line, vector, madt.mode[line] & MADT_LEVEL) ? 1u << 16 | line << 17 : 0;
    ioapic_write(0x10 + 2 * line, IOAPIC_MASKED);
    ioapic_write(0x11 + 2 * line, hi);
    ioapic_write(0x10 + 2 * line, lo);
}

void ioapic_mask(unsigned line, bool masked)
{
    u32 lo = ioapic_read(0x10 + 2 * line) & ~IOAPIC_MASKED;
    ioapic_write(0x10 + 2 * line, lo | (masked ? IOAPIC_MASKED : 0));
}

unsigned isa_line(unsigned irq) { return madt.isa_gsi[irq]; }

void ioapic_route_isa(unsigned irq, unsigned vector) { ioapic_program(isa_line(irq), vector, false); }

bool apic_owns_page(u64 pa)
{
    pa &= ~0xfffULL;
    return pa == (madt.lapic_pa & ~0xfffULL) || pa == (madt.ioapic_pa & ~0xfffULL);
}

static void pic_disable(void)
{
    /* Remap the 8259s away from the exception vectors, then mask every line. */
    outb(0x20, 0x11);
    outb(0xA0, 0x11);
    outb(0x21, 0xF0);
    outb(0xA1, 0xF8);
    outb(0x21, 0x04);
    outb(0xA1, 0x02);
    outb(0x21, 0x01);
    outb(0xA1, 0x01);
    outb(0x21, 0xFF);
    outb(0xA1, 0xFF);
}

/* Run PIT channel 2 for about 10 ms; return the TSC and APIC-timer ticks it took. */
static void calibrate(u64 *tsc_per_10ms, u32 *apic_per_10ms)
{
    const u16 pit_count = 11932; /* 1193182 Hz / 100 */
    outb(0x61, (u8)((inb(0x61) & ~0x02) | 0x01)); /* gate on, speaker off */
    outb(0x43, 0xB0);                              /* channel 2, lo/hi, mode 0 */
    outb(0x42, (u8)pit_count);
    outb(0x42, (u8)(pit_count >> 8));
    lapic_write(LAPIC_TIMER_DIV, 0x3); /* divide by 16 */
    lapic_write(LAPIC_TIMER_INIT, 0xFFFFFFFF);
    u64 t0 = rdtsc();
    while (!(inb(0x61) & 0x20))
        pause();
    u64 t1 = rdtsc();
    u32 cur = lapic_read(LAPIC_TIMER_CUR);
    lapic_write(LAPIC_TIMER_INIT, 0);
    *tsc_per_10ms = t1 - t0;
    *apic_per_10ms = 0xFFFFFFFF - cur;
}

/* Fire the timer at TSC value `when`, unless it fires earlier already
 * (that interrupt arms it again).  Count mode fires at most a second
 * ahead; the interrupt then finds nothing due and arms it again. */
void apic_arm(u64 when)
{
    if (when >= armed)
        return;
    if (cpu0.features & KEEP_CPU_TSC_DEADLINE) {
        armed = when;
        wrmsr(MSR_TSC_DEADLINE, when);
        return;
    }
    u64 now = rdtsc();
    u64 d = when > now ? when - now : 0;
    if (d > 100 * tsc10)
        d = 100 * tsc10;
    u64 n = d * apic10 / tsc10;
    armed = now + d;
    lapic_write(LAPIC_TIMER_INIT, n ? (u32)n : 1);
}

void apic_timer_fired(void) { armed = ~0ULL; }

void apic_init(void)
{
    if (!(cpu0.features & KEEP_CPU_APIC))
        panic("this CPU has no local APIC");
    pic_disable();
    madt_parse(acpi_find("APIC"), &madt);
    kprintf("keep: apic: %s: local APIC 0x%lx, I/O APIC 0x%lx, %u interrupt source overrides\n",
           madt.found ? "MADT" : "no MADT, PC defaults", madt.lapic_pa, madt.ioapic_pa, madt.overrides);
    lapic = map_mmio(madt.lapic_pa);
    ioapic = map_mmio(madt.ioapic_pa);
    lapic_isr0 = lapic + LAPIC_ISR / 4;
    wrmsr(MSR_APIC_BASE, rdmsr(MSR_APIC_BASE) | (1ULL << 11)); /* global enable */
    lapic_write(LAPIC_SVR, 0x100 | VEC_SPURIOUS);               /* software enable */

    calibrate(&tsc10, &apic10);
    if (!tsc10 || !apic10)
        panic("the TSC or the APIC timer does not count");
    cpu0.tsc_hz = tsc10 * 100;
    cpu0.tsc_khz = tsc10 / 10;
    cpu0.tsc_boot = rdtsc();
    lapic_write(LAPIC_TIMER_DIV, 0x3);
    bool deadline = cpu0.features & KEEP_CPU_TSC_DEADLINE;
    lapic_write(LAPIC_LVT_TIMER, (deadline ? 2u << 17 : 0) | VEC_TIMER); /* TSC-deadline or one-shot */
    kprintf("keep: apic: one-shot timer, %s\n", deadline ? "TSC-deadline mode" : "count mode");
}
