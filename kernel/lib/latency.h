/* The latency build (make LATENCY=1, `make kernel-latency`; docs/realtime.md,
 * "Kernel latency"): the longest time each kind of kernel entry keeps
 * interrupts off, from the entry to the return to user mode.  The kernel
 * never takes an interrupt while it runs, so that time is the whole entry:
 * a system call (by its object type and method when it invokes one), an
 * interrupt or exception from user mode, or an interrupt in the idle loop.
 * The default build has none of it: the macros are empty. */
#pragma once
#include "types.h"

/* The kinds of entry that are not a method's. */
enum { LAT_SYSCALL, LAT_TRAP, LAT_IDLE_IRQ, LAT_METHODS };
/* A method's kind: LAT_METHODS + type * LAT_MAX_METHOD + method. */
#define LAT_MAX_TYPE 32
#define LAT_MAX_METHOD 32

#ifdef KEEP_LATENCY
void lat_enter(unsigned kind);
void lat_method(u64 type, u64 method);
void lat_exit(void);
void lat_dump(void);
#define LAT_ENTER(k) lat_enter(k)
#define LAT_METHOD(t, m) lat_method(t, m)
#define LAT_EXIT() lat_exit()
#define LAT_DUMP() lat_dump()
#else
#define LAT_ENTER(k) ((void)0)
#define LAT_METHOD(t, m) ((void)0)
#define LAT_EXIT() ((void)0)
#define LAT_DUMP() ((void)0)
#endif
