/* Notifications: a word of event bits that senders OR in without blocking
 * and a waiter takes (WAIT, POLL), or that arrives as a NOTIFY message in
 * the receives of a bound process (docs/kernel-manual.md). */
#ifndef KEEP_NOTIFICATION_H
#define KEEP_NOTIFICATION_H

#include "cap.h"
#include "types.h"

struct account;
struct invocation;
struct process;

/* A bit of process.irq_pending: its bound notification has bits for it. */
#define NOTIFY_PENDING (1u << 29)
_Static_assert(KEEP_IRQ_LINES < 29, "the notification bit lies above the interrupt lines");

struct notification {
    u64 word;
    struct account *account;               /* paid for the frame; may destroy it */
    struct notification *prev, *next;      /* the account's notifications */
    struct process *waiter;                /* in WAIT (its ntfn_wait names this), or NULL */
    struct cap bound;                      /* SENDER of the bound process, or null */
};

/* ACCOUNT.CREATE_NOTIFICATION and ACCOUNT.DESTROY of one from a. */
u64 notification_create(struct invocation *inv, struct account *a);
u64 notification_destroy(struct cap c, struct account *a);
void notification_destroy_all(struct account *a);
u64 notification_invoke(struct invocation *inv);
/* p, waiting in WAIT, is destroyed or exported: it waits no more. */
void notification_unwait(struct process *p);
/* p is exported: its binding goes. */
void notification_unbind_process(struct process *p);
/* The notification c names, or NULL if c is no live NOTIFICATION. */
struct notification *notification_live(struct cap c);
/* OR bits (not 0) in: the waiter takes them, or a bound process in an open
 * receive gets them now, or at its next receive (SIGNAL; an interrupt
 * bound to the notification). */
void notification_signal(struct notification *n, u64 bits);
/* SIGNAL and WAIT for the system call's fast path (fastpath.c), which has
 * found c, a NOTIFICATION (no wrapper), invoked by s with the label alone:
 * true when done as notification_invoke would do it (s's results in its
 * registers, or s blocked in WAIT); false, with nothing changed, for
 * anything else (another method, a right missing, a stale capability, an
 * error), which the general path does or reports. */
bool notification_fast(struct process *s, struct cap c, u64 method);
/* p's receive: deliver its bound notification's bits (NOTIFY_PENDING). */
bool notification_deliver_pending(struct process *p);

#endif
