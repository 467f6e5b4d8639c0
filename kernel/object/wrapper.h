/* Wrappers: revocable forwarding objects around a capability. */
#ifndef KEEP_WRAPPER_H
#define KEEP_WRAPPER_H

#include "cap.h"
#include "keep/abi.h"
#include "paging.h"

struct account;
struct aspace;

/* A device page mapped through the wrapper (ASPACE.MAP of a DEVMEM
 * capability reached through it): destroying the wrapper unmaps it.  The
 * space is named by its frame and version, so a destroyed space's record
 * is simply skipped. */
struct wrapper_map {
    u64 as_pa, as_version, va, pa;
};

#define WRAPPER_HEADER 48
#define WRAPPER_MAPS ((PAGE_SIZE - WRAPPER_HEADER) / sizeof(struct wrapper_map))

struct wrapper {
    struct cap inner;        /* what invoking the wrapper invokes */
    struct account *account; /* paid for the frame; may destroy it */
    struct wrapper *prev, *next; /* the account's wrappers */
    u32 nmaps;               /* records in maps */
    u32 interrupts;          /* an interrupt line was bound or routed through it */
    struct wrapper_map maps[WRAPPER_MAPS];
};
_Static_assert(sizeof(struct wrapper) <= PAGE_SIZE, "a wrapper is one frame");
_Static_assert(WRAPPER_MAPS == KEEP_WRAPPER_DEVICE_MAPS, "the ABI says how many");

u64 wrapper_create(struct account *a, struct cap inner); /* the caller checked the account */
void wrapper_destroy(struct wrapper *w);
static inline struct wrapper *wrapper_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

/* Follow *c through wrappers to what they stand for, with the rights of
 * every wrapper on the way; via[] gets the wrappers' frames.  INVALID_CAP
 * beyond KEEP_WRAPPER_DEPTH, STALE if a wrapped capability died. */
static inline u64 wrapper_resolve(struct cap *c, u64 *via, unsigned *nvia)
{
    for (unsigned depth = 0; cap_type(*c) == KEEP_TYPE_WRAPPER; depth++) {
        struct cap inner = wrapper_from_cap(*c)->inner;
        if (depth == KEEP_WRAPPER_DEPTH)
            return KEEP_ERR_INVALID_CAP;
        if (!cap_live(inner))
            return KEEP_ERR_STALE;
        via[(*nvia)++] = cap_pa(*c);
        *c = cap_restrict(inner, cap_rights(*c));
    }
    return KEEP_ERR_OK;
}

/* Can each wrapper of via[] record one more device mapping?  (NO_MEMORY
 * when one holds WRAPPER_MAPS live ones.)  Then record va -> pa of as in
 * each, once the mapping is made. */
u64 wrapper_map_room(const u64 *via, unsigned nvia);
void wrapper_note_map(const u64 *via, unsigned nvia, struct aspace *as, u64 va, u64 pa);
/* An interrupt line was bound or routed through the wrappers of via[]. */
void wrapper_note_interrupt(const u64 *via, unsigned nvia);

#endif
