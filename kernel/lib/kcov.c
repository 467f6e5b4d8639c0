/* The coverage build's edge bitmap (make KCOV=1; docs/coverage.md, "The
 * guided fuzzer").  gcc's -fsanitize-coverage=trace-pc calls
 * __sanitizer_cov_trace_pc at every basic block of the kernel's other C
 * files; it sets the bit of the edge from the previous block to this one,
 * as AFL does (a hash of each block's call site, the previous one shifted
 * so that A->B and B->A differ), and counts the bits it sets.
 * KERNEL.COVERAGE reads and clears it.  This file is never instrumented;
 * in the default build it is empty. */
#ifdef KCOV
#include "invoke.h"
#include "keep/abi.h"
#include "lib.h"

#define KCOV_BITS (1u << 16)

static u64 map[KCOV_BITS / 64];
static u64 prev, edges;

void __sanitizer_cov_trace_pc(void);
void __sanitizer_cov_trace_pc(void)
{
    u64 cur = ((u64)__builtin_return_address(0) * 0x9e3779b97f4a7c15ull) >> 48;
    u64 e = cur ^ prev;
    prev = cur >> 1;
    if (!(map[e / 64] & (1ull << (e % 64)))) {
        map[e / 64] |= 1ull << (e % 64);
        edges++;
    }
}

u64 kcov_copy(struct aspace *as, u64 ptr, u64 len, u64 clear, u64 *res)
{
    u64 n = len < sizeof map ? len : sizeof map;
    if (clear > 1)
        return KEEP_ERR_INVALID_ARG;
    if (!user_range_ok(as, ptr, n, true))
        return KEEP_ERR_FAULT;
    copy_to_user(as, ptr, map, n);
    res[0] = edges;
    res[1] = sizeof map;
    if (clear) {
        memset(map, 0, sizeof map);
        edges = prev = 0;
    }
    return KEEP_ERR_OK;
}
#endif
