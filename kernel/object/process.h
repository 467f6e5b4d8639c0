/* Processes: saved registers and FPU state, an address space, an IPC
 * buffer, a fault handler, a priority and a state.  A process occupies one
 * frame from the account it was made from; its struct regs comes first so
 * that the entry code can save a user context straight into it.  Processes
 * are named by a 15-bit process number, which with a 39-bit version is what
 * PROCESS, SENDER and RETURN capabilities carry. */
#ifndef KEEP_PROCESS_H
#define KEEP_PROCESS_H

#include "arch.h"
#include "aspace.h"
#include "cap.h"
#include "paging.h"

enum wait_kind {
    WAIT_NONE,
    WAIT_CONSOLE,     /* console input (restarts) */
    WAIT_PROCESS,     /* PROCESS.WAIT on wait_target (restarts) */
    WAIT_SEND,        /* in wait_target's send queue (restarts) */
    WAIT_RECV,        /* open receive (completed by the sender) */
    WAIT_REPLY,       /* a call's reply (completed by the return capability) */
    WAIT_FAULT,       /* a fault message in wait_target's send queue */
    WAIT_FAULT_REPLY, /* a fault message delivered, waiting for the reply */
    WAIT_SLEEP,       /* TIMER.SLEEP (completed by the timer) */
    WAIT_OUT,         /* only process_out: the number's process is exported */
    WAIT_NOTIFY,      /* NOTIFICATION.WAIT on ntfn_wait (restarts) */
};

struct account;
struct notification;

struct process {
    struct regs regs; /* must stay first: TSS.rsp0 points just past it */
    u64 fs_base, gs_base;               /* its fs/gs bases while another process runs */
    struct fpu_state fpu;               /* 64-byte aligned (XSAVE) with no padding before it */
    struct aspace *as;
    struct account *account;            /* paid for this frame */
    struct process *rq_next, *rq_prev;  /* run queue of its priority */
    struct process *all_next;           /* every process, by pid */
    struct process *wait_target;        /* whose queue it is in, or whom it waits for */
    struct process *q_next;             /* link in wait_target's send queue */
    struct process *sendq_head, *sendq_tail; /* processes waiting to send to this one */
    struct process *sleep_next;         /* timer list, ordered by deadline */
    u64 deadline;                       /* TSC value to wake at; 0 when not on the list */
    u64 pid, num;
    u64 ipc_buf;                        /* user address of the IPC buffer, or 0 */
    u64 ipc_buf_checked;                /* 1 + its space's unmap_generation when found mapped writable */
    /* While it waits for a message (receive or reply): the receive slots
     * its IPC buffer named when the wait began. */
    u64 recv_addr[KEEP_MAX_RECV_SLOTS];
    u32 recv_n;
    /* While it waits to send (WAIT_SEND): the frames of the wrappers its
     * invocation came through, whose revocation ends the wait (STALE). */
    u32 nvia;
    u64 via[KEEP_WRAPPER_DEPTH];
    struct cap fault_handler;           /* SENDER, or null */
    struct cap fault_to;                /* where the pending fault message goes */
    u64 fault_label, fault_words[4];
    u64 code, fault_rip, fault_addr;    /* exit code or vector; fault details */
    /* A budget (sched.c): period 0 for none.  budget, period, used and
     * period_start in TSC ticks; while parked it is in the parked list
     * through rq_next/rq_prev, by the end of its period. */
    u64 budget, period, used, period_start;
    u32 budget_us, period_us;           /* as given to SET_BUDGET */
    u64 ran_out;                        /* periods it spent its budget in */
    /* The TSC ticks it has run (sched.h, sched_switch_cpu): while it runs,
     * that less the TSC value it started running at. */
    u64 cpu_time;
    /* Passive (sched.c, "lending"): while it serves a call, its time is
     * the caller's.  client: 1 + the number of the caller of the call it
     * received last (0: none), client_reply that call's return capability;
     * the call is outstanding while the number's reply word still matches.
     * timed: period, or 1 if passive: its IPC takes the general path.
     * park_end: while parked, the TSC value its wait ends at. */
    u64 timed, client, park_end;
    struct cap client_reply;
    u8 passive;
    u32 irq_pending;                    /* bound interrupt lines waiting to be received */
    struct notification *ntfn_wait;     /* WAIT_NOTIFY: the notification it waits in */
    struct notification *bound_ntfn;    /* NOTIFICATION.BIND: its signals come to this one's receives */
    u8 state, wait_kind, prio, emulate; /* state and wait_kind side by side: the fast path writes both */
    u8 uses_bases;                      /* has run wr/rd fs/gs base: runs with CR4.FSGSBASE */
    char name[16];
    /* Its MEMORY.REVOKE under way (memory.c): the frame and the version
     * its capability has, the space being swept (its frame, version and
     * serial) and where in it, and the mappings removed so far.  pa 0:
     * none. */
    struct revoke_cursor {
        u64 pa, version, as_pa, as_version, serial, pos, n;
    } revoke;
};
_Static_assert(sizeof(struct process) <= 4096, "a process fits in one frame");

#define PRIO_DEFAULT 10
#define PRIO_LEVELS 32

extern struct process *all_processes;

/* process_number.c: numbers are bought by accounts a page (63 numbers, one
 * frame) at a time, as their processes need them. */
void numbers_init(void);
/* Frames CREATE_PROCESS needs besides the process's own: 1 when the account
 * has no free number and must buy a page, else 0. */
u64 number_frames_needed(const struct account *a);
/* False only when the account has no free number and no page is left to buy. */
bool number_available(const struct account *a);
/* A free number of the account's (buying a page from its frames first if
 * needed; the caller made sure it can): its entry names nothing yet. */
u64 number_take(struct account *a);
/* The process with number num is gone for good: its capabilities go stale
 * and the number is free again (retired if its version is used up). */
void number_put(u64 num);
/* DESTROY_ALL: give back every number page of the account (none in use). */
void numbers_release_all(struct account *a);
u64 numbers_check(u64 *checked); /* CHECK_INVARIANTS */
/* The persistent range of number pages, for checkpoints (checkpoint.c):
 * the page a number frame of the pool is at (0: none); the range's
 * epochs and taken bits saved and loaded (after a restore); whether no
 * page of the range is taken; a restored page put back at its index
 * (false, with nothing mapped, if the index is not taken or the page's
 * header names another frame); and the range emptied (a failed restore). */
u64 numbers_persistent_page(u64 pa);
void numbers_persistent_save(u64 *epochs, u64 *bits);
void numbers_persistent_load(const u64 *epochs, const u64 *bits);
bool numbers_persistent_idle(void);
bool number_page_adopt(u64 idx, u64 pa);
void numbers_persistent_clear(void);
/* Process numbers in use (live or exported). */
extern u64 numbers_used;
/* Make a process in as from the account (which holds a frame). */
struct process *process_create(struct aspace *as, struct account *a);
void process_destroy(struct process *p);
/* A process restored from a checkpoint joins this boot's list (a new pid). */
void process_adopt(struct process *p);
/* Destroy the exported process with number num: its capabilities go stale
 * and its export can never be restored. */
void process_drop_exported(u64 num);
struct cap process_cap(struct process *p);
/* Process numbers (process_number.c): what PROCESS, SENDER and RETURN
 * capabilities name.  p: the live process, &process_out while exported, or
 * NULL.  version: of PROCESS and SENDER capabilities (34 bits), raised when
 * the process is destroyed.  reply: the first word of the RETURN capability
 * that answers the number's next (or current) call; its version (bits
 * 30-63) is raised, by adding 1 << CAP_PVERSION_SHIFT, when a reply is made
 * or the process destroyed.  Both stay with the number, so no capability of
 * a destroyed process ever names the next one with that number.
 *
 * A process exported by its kpager (ACCOUNT.REVOKE_PROCESS) has left the
 * kernel; its number then names process_out, a placeholder that is BLOCKED
 * in WAIT_OUT, so that the IPC fast path never takes it and every other
 * path can tell (process_is_out).  What the kernel keeps of it is x. */
struct process_export {
    struct account *account; /* whose kpager holds it */
    struct aspace *as;       /* its space, which it still counts in (nproc) */
    u64 gen;                 /* the current export's generation */
    u32 out_next;            /* 1 + the next of the account's exported numbers, or 0 */
    u32 reply_lost;          /* the return capability of the call it waits in went meanwhile */
};
struct process_number {
    struct process *p;
    u64 version;
    u64 reply;
    struct process_export x;
    u32 free_next; /* while free: 1 + the next free entry of its page, or 0 */
    u32 reply_hi;  /* the reply version's high bits: the RETURN capability's second word */
};
_Static_assert(sizeof(struct process_number) == 64, "64 numbers to a page");
/* All 2^20 of them, at a fixed kernel address (KEEP_NUMBER_REGION): each
 * page of 64 is a frame of the account whose processes use those numbers,
 * or, where no account has one, a shared zero page that names nothing. */
#define process_numbers ((struct process_number *)NUMBER_REGION)
extern struct process process_out;
/* The account's list of its exported processes. */
void export_link(struct account *a, u64 num);
void export_unlink(struct account *a, u64 num);
static inline bool process_is_out(const struct process *p) { return p == &process_out; }

/* The live process with this (15-bit) number and version, or NULL. */
static ALWAYS_INLINE struct process *process_by_number(u64 num, u64 version)
{
    struct process_number *n = &process_numbers[num % KEEP_PROCESS_NUMBERS];
    return n->p && n->version == version ? n->p : NULL;
}
/* The RETURN capability a call by caller gives its callee (valid until
 * the reply, or the caller's end, uses it up). */
static inline struct cap return_cap(const struct process *caller)
{
    const struct process_number *n = &process_numbers[caller->num];
    return (struct cap){n->reply, n->reply_hi};
}
static ALWAYS_INLINE void return_word_used(u64 num)
{
    struct process_number *n = &process_numbers[num];
    reply_version_next(&n->reply, &n->reply_hi);
}
static ALWAYS_INLINE void return_cap_used(const struct process *caller) { return_word_used(caller->num); }
/* The caller a RETURN capability answers, if it still waits for it. */
static inline struct process *return_target(struct cap c)
{
    struct process_number *n = &process_numbers[cap_pnum(c)];
    struct process *p = n->p;
    if (!p || (n->reply ^ c.w0) >> CAP_PVERSION_SHIFT || n->reply_hi != c.w1) /* another version */
        return NULL;
    return p->wait_kind == WAIT_REPLY || p->wait_kind == WAIT_FAULT_REPLY || p->wait_kind == WAIT_OUT ? p : NULL;
}
static ALWAYS_INLINE struct process *process_from_cap(struct cap c)
{
    return process_by_number(cap_pnum(c), cap_pversion(c));
}

void process_set_name(struct process *p, const char *name);
/* Send a fault message to p's handler; false when it has no live one. */
bool process_reflect(struct process *p, u64 label, const u64 words[4]);
/* c is going (deleted, overwritten, its cappage or space gone): if it is the
 * live return capability of a waiting caller, the call ends with NO_REPLY
 * (a fault message's: the process stops as FAULTED). */
void return_cap_lost(struct cap c);
/* p waits for a reply that can never come: NO_REPLY (a fault reply's: FAULTED). */
void process_reply_lost(struct process *p);
void cappage_lost(u64 pa);
/* as has no process left: the same for every return capability in the
 * cappages that only as maps (at one address or several). */
void aspace_return_caps_lost(struct aspace *as);
/* An exception in user mode: to the fault handler, or stop and report. */
void process_fault(struct process *p, u64 vector, u64 rip, u64 addr, u64 err);
void process_make_runnable(struct process *p);
/* Take p off the CPU to wait (`kind`); someone else completes its
 * invocation by writing its registers. */
void process_wait(struct process *p, enum wait_kind kind);
/* Block the caller in its current invocation, which restarts when it wakes. */
void process_block(struct process *p, enum wait_kind kind);
/* Make runnable every process blocked in `kind` on `target` (NULL for the
 * console); each restarts its invocation. */
void process_wake(enum wait_kind kind, struct process *target);
/* Take a process out of whatever it waits for (STOP, DESTROY). */
void process_detach(struct process *p);
u64 process_check(u64 *checked); /* CHECK_INVARIANTS */
/* Process numbers in use by exported processes (process_check counts them). */
extern u64 process_numbers_out;
/* Insert p into the list of every process, which is sorted by pid. */
void process_list_insert(struct process *p);
void process_list_remove(struct process *p);

const char *exception_name(u64 vector);

#endif
