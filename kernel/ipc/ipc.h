/* IPC: the send and receive phases of an invocation, return capabilities,
 * and fault messages (docs/kernel-manual.md, "IPC" and "Faults"). */
#ifndef KEEP_IPC_H
#define KEEP_IPC_H

#include "cap.h"
#include "types.h"

struct process;
struct invocation;

/* A SENDER or RETURN capability invoked in inv (mode SEND, CALL or
 * SEND_RECV); returns an error, INV_BLOCKED or INV_DONE. */
u64 ipc_send(struct invocation *inv, u64 mode);
/* The open receive phase of process p (the current process). */
u64 ipc_receive(struct process *p, u64 tag, u64 timeout_ms);
/* Send p's fault message to the handler `to` names (a call made for p);
 * false, with nothing changed, when no handler can be reached. */
bool ipc_fault(struct process *p, struct cap to, u64 label, const u64 words[4]);
/* An IRQ message from interrupt line `line` to r, which is receiving. */
void ipc_deliver_irq(struct process *r, u64 line, u64 payload);
void ipc_deliver_kernel(struct process *r, u64 label, u64 payload, const u64 words[4]);
/* A receive or a sleep ran out of time. */
void ipc_timeout(struct process *p);

void sendq_remove(struct process *q, struct process *p);
/* The wrapper whose frame is w is being revoked; r is the process its
 * chain of capabilities ends at: wake r's queued senders that came through
 * it, with STALE. */
void ipc_wrapper_revoked(struct process *r, u64 w);
/* Is p's IPC buffer mapped writable (kept until a mapping goes away)? */
bool ipc_buffer_ok(struct process *p);

#endif
