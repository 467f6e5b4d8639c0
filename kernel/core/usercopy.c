/* Reaching user memory: translate through the address space's page tables
 * and copy through the physical window.  The kernel never dereferences a
 * user pointer, so a bad pointer is an error code, not a kernel fault. */
#include "aspace.h"
#include "checkpoint.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"

bool user_range_ok(struct aspace *as, u64 va, u64 len, bool write)
{
    if (len == 0)
        return true;
    if (va >= KEEP_USER_TOP || len > KEEP_USER_TOP - va)
        return false;
    u64 pa;
    for (u64 page = ALIGN_DOWN(va, PAGE_SIZE); page < va + len; page += PAGE_SIZE)
        if (!user_translate(as->pml4_pa, page, write, &pa))
            return false;
    return true;
}

/* Both copies require a range that user_range_ok() accepted. */
void copy_from_user(struct aspace *as, void *dst, u64 va, u64 len)
{
    u8 *d = dst;
    while (len) {
        u64 pa, n = PAGE_SIZE - (va & (PAGE_SIZE - 1));
        if (n > len)
            n = len;
        ASSERT(user_translate(as->pml4_pa, va, false, &pa));
        memcpy(d, phys_to_virt(pa), n);
        d += n, va += n, len -= n;
    }
}

void copy_to_user(struct aspace *as, u64 va, const void *src, u64 len)
{
    const u8 *s = src;
    while (len) {
        u64 pa, n = PAGE_SIZE - (va & (PAGE_SIZE - 1));
        if (n > len)
            n = len;
        ASSERT(user_translate(as->pml4_pa, va, true, &pa));
        checkpoint_touch(ALIGN_DOWN(pa, PAGE_SIZE));
        memcpy(phys_to_virt(pa), s, n);
        s += n, va += n, len -= n;
    }
}

/* Both ranges must have been checked (the IPC buffers of both processes). */
void copy_user_to_user(struct aspace *to, u64 to_va, struct aspace *from, u64 from_va, u64 len)
{
    while (len) {
        u64 spa, dpa, n = PAGE_SIZE - (from_va & (PAGE_SIZE - 1));
        if (n > PAGE_SIZE - (to_va & (PAGE_SIZE - 1)))
            n = PAGE_SIZE - (to_va & (PAGE_SIZE - 1));
        if (n > len)
            n = len;
        ASSERT(user_translate(from->pml4_pa, from_va, false, &spa));
        ASSERT(user_translate(to->pml4_pa, to_va, true, &dpa));
        checkpoint_touch(ALIGN_DOWN(dpa, PAGE_SIZE));
        memmove(phys_to_virt(dpa), phys_to_virt(spa), n);
        to_va += n, from_va += n, len -= n;
    }
}
