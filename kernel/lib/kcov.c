/* The coverage build's edge bitmap (make KCOV=1; docs/coverage.md, "The
 * guided fuzzer").  gcc's -fsanitize-coverage=trace-pc calls
 * __sanitizer_cov_trace_pc at every basic block of the kernel's other C
 * files; it sets the bit of the edge from the previous block to this one,
 * as AFL does (a hash of each block's call site, the previous one shifted
 * so that A->B and B->A differ), and counts the bits it sets.
 * KERNEL.COVERAGE reads and clears it, and sets its scope: the whole
 * kernel, or only the system calls of one process (kcov_proc), as Linux's
 * per-task kcov.  entry.S sets kcov_sys on every system call's entry (and
 * restarts the edge chain there, so that a call's edges do not depend on
 * what ran before it) and clears it on every entry from user mode by an
 * interrupt or exception, before any C code runs; the hook then records
 * while kcov_sys is set and kcov_proc is the current process: the
 * system call until the kernel leaves it or runs another process, not the
 * timer's ticks, the faults and calls of other processes or the idle loop
 * (current is NULL there).  This file is never instrumented; in the
 * default build it is empty. */
#ifdef KCOV
#include "arch.h"
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"
#include "process.h"

#define KCOV_BITS (1u << 16)

static u64 map[KCOV_BITS / 64];
static u64 edges;
u64 kcov_prev;             /* entry.S zeroes it at each system call */
u8 kcov_sys;               /* entry.S: 1 in a system call, 0 in a trap from user mode */
static struct process *kcov_proc; /* NULL: the whole kernel */

void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
    if (kcov_proc && !(kcov_sys && cpu0.current == kcov_proc))
        return;
    u64 cur = ((u64)__builtin_return_address(0) * 0x9e3779b97f4a7c15ull) >> 48;
    u64 e = cur ^ kcov_prev;
    kcov_prev = cur >> 1;
    if (!(map[e / 64] & (1ull << (e % 64)))) {
        map[e / 64] |= 1ull << (e % 64);
        edges++;
    }
}

u64 kcov_copy(struct process *caller, u64 ptr, u64 len, u64 clear, u64 scope, u64 *res)
{
    struct aspace *as = caller->as;
    u64 n = len < sizeof map ? len : sizeof map;
    if (clear > 1 || scope > 1)
        return KEEP_ERR_INVALID_ARG;
    if (!user_range_ok(as, ptr, n, true))
        return KEEP_ERR_FAULT;
    copy_to_user(as, ptr, map, n);
    res[0] = edges;
    res[1] = sizeof map;
    if (clear) {
        memset(map, 0, sizeof map);
        edges = kcov_prev = 0;
    }
    kcov_proc = scope ? caller : NULL;
    return KEEP_ERR_OK;
}

/* A destroyed process's control block may become another's. */
void kcov_forget(struct process *p)
{
    if (kcov_proc == p)
        kcov_proc = NULL;
}
#endif
