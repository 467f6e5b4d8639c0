/* Symbol lookup by binary search over the sorted table from tools/gensyms.py. */
#include "ksyms.h"

const char *ksym_lookup(u64 addr, u64 *offset)
{
    u64 lo = 0, hi = ksyms_count;
    *offset = 0;
    if (hi == 0 || addr < ksyms[0].addr)
        return NULL;
    while (hi - lo > 1) {
        u64 mid = lo + (hi - lo) / 2;
        if (ksyms[mid].addr <= addr)
            lo = mid;
        else
            hi = mid;
    }
    *offset = addr - ksyms[lo].addr;
    return ksyms[lo].name;
}
