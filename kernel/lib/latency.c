/* The latency build's table (latency.h): per kind of entry, the longest
 * time from the entry to the return to user mode, in TSC ticks (under
 * QEMU's -icount shift=0, instructions), how often it came, and the
 * total.  KERNEL.DEBUG_EXIT prints it before QEMU leaves; tools/latency.py
 * reads it.  In the default build this file is empty. */
#ifdef KEEP_LATENCY
#include "arch.h"
#include "latency.h"
#include "lib.h"
#include "x86.h"

#define KINDS (LAT_METHODS + LAT_MAX_TYPE * LAT_MAX_METHOD)

static u64 t0;
static unsigned kind;
static bool open;
static u64 longest[KINDS], count[KINDS];

void lat_enter(unsigned k)
{
    /* An interrupt in the idle loop comes while an entry is still open
     * (the idle loop is part of the entry that found nothing to run): it
     * is measured from its own arrival. */
    t0 = rdtsc();
    kind = k;
    open = true;
}

void lat_method(u64 type, u64 method)
{
    if (type < LAT_MAX_TYPE && method < LAT_MAX_METHOD)
        kind = LAT_METHODS + (unsigned)(type * LAT_MAX_METHOD + method);
}

void lat_exit(void)
{
    if (!open)
        return;
    u64 d = rdtsc() - t0;
    open = false;
    count[kind]++;
    if (d > longest[kind])
        longest[kind] = d;
}

void lat_dump(void)
{
    kprintf("latency: kind type method longest count\n");
    for (unsigned k = 0; k < KINDS; k++) {
        if (!count[k])
            continue;
        if (k < LAT_METHODS)
            kprintf("latency: %u - - %lu %lu\n", k, longest[k], count[k]);
        else
            kprintf("latency: %u %u %u %lu %lu\n", k, (k - LAT_METHODS) / LAT_MAX_METHOD,
                    (k - LAT_METHODS) % LAT_MAX_METHOD, longest[k], count[k]);
    }
    kprintf("latency: end\n");
}
#endif
