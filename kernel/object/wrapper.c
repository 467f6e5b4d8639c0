/* Wrappers.  A wrapper holds a copy of a capability; invoking a WRAPPER
 * capability invokes that copy with the rights both have (invoke.c).
 * Destroying the wrapper raises the version of its frame, which revokes
 * every copy of every capability to it, and wrappers built on it with them,
 * while the wrapped capability itself is untouched.
 *
 * A wrapper may stand for a device capability too.  What was done through
 * it that outlives the invocation goes with it: device pages mapped
 * through it are unmapped (recorded in its frame, below the header) and
 * interrupt lines bound or routed through it are unbound and unrouted
 * (interrupt.c keeps which), so a driver can be taken off its device
 * without being destroyed. */
#include "wrapper.h"
#include "account.h"
#include "aspace.h"
#include "device.h"
#include "frame.h"
#include "ipc.h"
#include "lib.h"
#include "keep/abi.h"
#include "process.h"

_Static_assert(__builtin_offsetof(struct wrapper, maps) <= WRAPPER_HEADER, "the header fits");

/* Does record m still describe a mapping (and, if unmap, remove it)? */
static bool record_live(const struct wrapper_map *m, bool unmap)
{
    return aspace_device_mapped(m->as_pa, m->as_version, m->va, m->pa, unmap);
}

/* Drop the records of mappings that are gone (unmapped, their space
 * destroyed, their tables taken back). */
static void compact(struct wrapper *w)
{
    u32 n = 0;
    for (u32 i = 0; i < w->nmaps; i++)
        if (record_live(&w->maps[i], false))
            w->maps[n++] = w->maps[i];
    w->nmaps = n;
}

u64 wrapper_map_room(const u64 *via, unsigned nvia)
{
    for (unsigned i = 0; i < nvia; i++) {
        struct wrapper *w = phys_to_virt(via[i]);
        if (w->nmaps == WRAPPER_MAPS)
            compact(w);
        if (w->nmaps == WRAPPER_MAPS)
            return KEEP_ERR_NO_MEMORY;
    }
    return KEEP_ERR_OK;
}

void wrapper_note_map(const u64 *via, unsigned nvia, struct aspace *as, u64 va, u64 pa)
{
    u64 as_pa = virt_to_phys_window(as);
    for (unsigned i = 0; i < nvia; i++) {
        struct wrapper *w = phys_to_virt(via[i]);
        ASSERT(w->nmaps < WRAPPER_MAPS); /* wrapper_map_room said so */
        w->maps[w->nmaps++] = (struct wrapper_map){as_pa, frame_info(as_pa)->version, va, pa};
    }
}

void wrapper_note_interrupt(const u64 *via, unsigned nvia)
{
    for (unsigned i = 0; i < nvia; i++)
        ((struct wrapper *)phys_to_virt(via[i]))->interrupts = 1;
}

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
    for (u32 i = 0; i < w->nmaps; i++)
        record_live(&w->maps[i], true);
    if (w->interrupts)
        interrupt_wrapper_revoked(pa);
    if (w->prev)
        w->prev->next = w->next;
    else
        w->account->wrappers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    kmem_free(w->account, pa);
}
