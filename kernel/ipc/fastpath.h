/* The IPC fast path (fastpath.c). */
#ifndef KEEP_FASTPATH_H
#define KEEP_FASTPATH_H

struct process;

/* Complete the invocation in s's registers by the fast path and leave the
 * kernel into the receiver; returns, having changed nothing, when the
 * invocation needs the general path. */
void ipc_fastpath(struct process *s);

#endif
