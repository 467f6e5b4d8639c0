/* Memory-map normalisation: split every range at every boundary, give each
 * piece the type of the strongest range covering it, merge neighbours. */
#include "memmap.h"
#include "keep/abi.h"

/* Stronger types win: carve-outs over firmware-reserved over usable. */
static int strength(u32 type, bool carve)
{
    if (carve)
        return 3;
    return type == KEEP_MEM_USABLE ? 1 : 2;
}

static u64 range_end(const struct mem_range *r)
{
    u64 e = r->base + r->length;
    return e < r->base ? ~0ULL : e; /* saturate on overflow */
}

static void sort_u64(u64 *a, unsigned n)
{
    for (unsigned i = 1; i < n; i++) {
        u64 v = a[i];
        unsigned j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

bool memmap_build(struct memmap *out, const struct mem_range *fw, unsigned nfw,
                  const struct mem_range *carve, unsigned ncarve)
{
    u64 points[4 * MEMMAP_MAX];
    unsigned np = 0;
    out->count = 0;
    if (nfw + ncarve > MEMMAP_MAX)
        return false;
    for (unsigned i = 0; i < nfw; i++)
        if (fw[i].length) {
            points[np++] = fw[i].base;
            points[np++] = range_end(&fw[i]);
        }
    for (unsigned i = 0; i < ncarve; i++)
        if (carve[i].length) {
            points[np++] = carve[i].base;
            points[np++] = range_end(&carve[i]);
        }
    sort_u64(points, np);

    for (unsigned i = 0; i + 1 < np; i++) {
        u64 lo = points[i], hi = points[i + 1];
        if (lo == hi)
            continue;
        int best = 0;
        u32 type = 0;
        /* Carve-outs count only where firmware says there is something. */
        bool covered = false;
        for (unsigned k = 0; k < nfw; k++) {
            if (!fw[k].length || fw[k].base > lo || range_end(&fw[k]) < hi)
                continue;
            covered = true;
            u32 t = fw[k].type == KEEP_MEM_USABLE ? KEEP_MEM_USABLE : KEEP_MEM_RESERVED;
            if (strength(t, false) > best) {
                best = strength(t, false);
                type = t;
            }
        }
        if (!covered)
            continue;
        for (unsigned k = 0; k < ncarve; k++) {
            if (!carve[k].length || carve[k].base > lo || range_end(&carve[k]) < hi)
                continue;
            if (strength(carve[k].type, true) > best) {
                best = strength(carve[k].type, true);
                type = carve[k].type;
            }
        }
        struct mem_range *last = out->count ? &out->r[out->count - 1] : NULL;
        if (last && last->type == type && last->base + last->length == lo) {
            last->length += hi - lo;
            continue;
        }
        if (out->count == MEMMAP_MAX)
            return false;
        out->r[out->count++] = (struct mem_range){lo, hi - lo, type};
    }
    return true;
}

u64 memmap_total(const struct memmap *m, u32 type)
{
    u64 sum = 0;
    for (unsigned i = 0; i < m->count; i++)
        if (m->r[i].type == type)
            sum += m->r[i].length;
    return sum;
}

u64 memmap_ram_end(const struct memmap *m)
{
    u64 end = 0;
    for (unsigned i = 0; i < m->count; i++)
        if (m->r[i].type != KEEP_MEM_RESERVED && m->r[i].base + m->r[i].length > end)
            end = m->r[i].base + m->r[i].length;
    return end;
}

bool memmap_is_ram(const struct memmap *m, u64 pa)
{
    for (unsigned i = 0; i < m->count; i++)
        if (m->r[i].type != KEEP_MEM_RESERVED && pa >= m->r[i].base && pa - m->r[i].base < m->r[i].length)
            return true;
    return false;
}
