/* Wrappers.  A wrapper holds a copy of a capability; invoking a WRAPPER
 * capability invokes that copy with the rights both have (invoke.c).
 * Destroying the wrapper raises the version of its frame, which revokes
 * every copy of every capability to it, and wrappers built on it with them,
 * while the wrapped capability itself is untouched. */
#include "wrapper.h"
#include "account.h"
#include "frame.h"
#include "ipc.h"
#include "keep/abi.h"
#include "process.h"

u64 wrapper_create(struct account *a, struct cap inner)
{
    u64 pa = kmem_alloc(a, FRAME_WRAPPER);
    struct wrapper *w = phys_to_virt(pa);
    w->inner = inner;
    w->account = a;
    w->next = a->wrappers;
    if (a->wrappers)
        a->wrappers->prev = w;
    a->wrappers = w;
    return pa;
}

void wrapper_destroy(struct wrapper *w)
{
    u64 pa = virt_to_phys_window(w);
    /* The process the chain ends at, while the chain is live: senders
     * queued there through this wrapper fail now, not when it next
     * receives (which may be never). */
    struct cap c = w->inner;
    for (unsigned depth = 0; cap_type(c) == KEEP_TYPE_WRAPPER && cap_live(c) && depth < KEEP_WRAPPER_DEPTH; depth++)
        c = wrapper_from_cap(c)->inner;
    struct process *r = cap_type(c) == KEEP_TYPE_SENDER && cap_live(c) ? process_from_cap(c) : NULL;
    frame_info(pa)->version++;
    if (r)
        ipc_wrapper_revoked(r, pa);
    if (w->prev)
        w->prev->next = w->next;
    else
        w->account->wrappers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    kmem_free(w->account, pa);
}
