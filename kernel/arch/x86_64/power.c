/* Leaving the machine: ACPI soft-off and QEMU's isa-debug-exit device. */
#include "arch.h"
#include "lib.h"
#include "x86.h"

/* QEMU's isa-debug-exit device (added by the harness at port 0xf4) ends QEMU
 * with status (code << 1) | 1.  Without the device the write is ignored. */
#define DEBUG_EXIT_PORT 0xf4

/* On q35 the firmware (SeaBIOS) places the ICH9 power-management block at
 * 0x600; PM1a_CNT is at offset 4.  SLP_TYP for S5 is 0 in QEMU's tables, so
 * writing SLP_EN alone enters soft-off.  (Parsing the FADT and the _S5 object
 * is the general way; see docs/boot.md.) */
#define ICH9_PM1A_CNT 0x604
#define PIIX4_PM1A_CNT 0xB004
#define SLP_EN (1u << 13)

NORETURN void machine_poweroff(void)
{
    kprintf("keep: power off\n");
    cli();
    outw(ICH9_PM1A_CNT, SLP_EN);
    outw(PIIX4_PM1A_CNT, SLP_EN);
    /* QEMU takes the soft-off request in its main loop, after this write
     * returns: give it half a second (TSC; ~1.5 G cycles at most) before the
     * fallback, which would otherwise end QEMU first with status 1. */
    u64 wait = cpu0.tsc_hz ? cpu0.tsc_hz / 2 : 1500000000ull;
    for (u64 t0 = rdtsc(); rdtsc() - t0 < wait;)
        pause();
    outl(DEBUG_EXIT_PORT, 0); /* fallback where ACPI did not take */
    for (;;)
        hlt();
}

NORETURN void machine_debug_exit(u32 code)
{
    cli();
    outl(DEBUG_EXIT_PORT, code);
    machine_poweroff();
}
