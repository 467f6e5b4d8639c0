/* INFO and RESTRICT for the device-resource capabilities (device.h). */
#include "device.h"
#include "invoke.h"
#include "process.h"
#include "keep/abi.h"

_Static_assert(KEEP_M_DEVMEM_INFO == KEEP_M_IOPORT_INFO && KEEP_M_IOPORT_INFO == KEEP_M_INTERRUPT_INFO &&
                   KEEP_M_DEVMEM_RESTRICT == KEEP_M_IOPORT_RESTRICT &&
                   KEEP_M_IOPORT_RESTRICT == KEEP_M_INTERRUPT_RESTRICT,
               "the range methods have the same numbers for every device type");

u64 range_invoke(struct invocation *inv, unsigned shift)
{
    struct cap c = inv->cap;
    if (inv->method == KEEP_M_DEVMEM_INFO) {
        inv->res[0] = range_base(c) << shift;
        inv->res[1] = range_count(c);
        return KEEP_ERR_OK;
    }
    /* A restricted copy is not revocable: through a wrapper it would
     * outlive the wrapper (wrapper.c). */
    if (inv->nvia)
        return KEEP_ERR_NO_RIGHTS;
    u64 first = inv->arg[0] >> shift, n = inv->arg[1];
    if ((inv->arg[0] & ((1ULL << shift) - 1)) || !range_holds(c, first, n))
        return KEEP_ERR_INVALID_ARG;
    struct cap *dest;
    u64 e = cap_empty_slot(inv->caller->as, inv->arg[2], &dest);
    if (e)
        return e;
    *dest = cap_make(cap_type(c), cap_rights(c), 0, 0, range_w1(first, n));
    return KEEP_ERR_OK;
}
