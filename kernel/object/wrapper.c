/* Wrappers.  A wrapper holds a copy of a capability; invoking a WRAPPER
 * capability invokes that copy with the rights both have (invoke.c).
 * Destroying the wrapper raises the version of its frame, which revokes
 * every copy of every capability to it, and wrappers built on it with them,
 * while the wrapped capability itself is untouched. */
#include "wrapper.h"
#include "account.h"
#include "frame.h"
#include "keep/abi.h"

u64 wrapper_create(struct account *a, struct cap inner)
{
    u64 pa = kmem_alloc(a, FRAME_WRAPPER);
    struct wrapper *w = phys_to_virt(pa);
    w->inner = inner;
    w->account = a;
    return pa;
}

void wrapper_destroy(struct wrapper *w)
{
    u64 pa = virt_to_phys_window(w);
    frame_info(pa)->version++;
    kmem_free(w->account, pa);
}
