/* Wrappers: revocable forwarding objects around a capability. */
#ifndef KEEP_WRAPPER_H
#define KEEP_WRAPPER_H

#include "cap.h"
#include "paging.h"

struct account;

struct wrapper {
    struct cap inner;        /* what invoking the wrapper invokes */
    struct account *account; /* paid for the frame; may destroy it */
    struct wrapper *prev, *next; /* the account's wrappers */
};

u64 wrapper_create(struct account *a, struct cap inner); /* the caller checked the account */
void wrapper_destroy(struct wrapper *w);
static inline struct wrapper *wrapper_from_cap(struct cap c) { return phys_to_virt(cap_pa(c)); }

#endif
