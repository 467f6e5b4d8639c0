/* Module for the runtime tests (sfi-selftest): small entry points that
   return, call the host, fault, loop, or try to reach outside. */
long host_double(long x);
long host_nested(long x);
long host_exit(long code);
long host_x87(long x);

long nothing(void) { return 0; }
long add(long a, long b) { return a + b; }
long sum6(long a, long b, long c, long d, long e, long f) { return a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f; }
long call_host(long x) { return host_double(x) + 1; }
long call_nested(long x) { return host_nested(x) * 10; }
long do_exit(long code) { host_exit(code); return -1; }
long store_at(long addr, long v) { *(volatile long *)addr = v; return 0; }
long load_at(long addr) { return *(volatile long *)addr; }
long store_null(void) { return store_at(8, 1); }
/* The address is laundered so that the store is a sandboxed one (a direct
   RIP-relative store into code is already refused by the verifier). */
long store_code(void) { long p = (long)&nothing; __asm__("" : "+r"(p)); return store_at(p, 0x90); }
long divide(long a, long b) { return a / b; }
long trap(void) { __builtin_trap(); }
long loop_forever(void) { for (volatile long i = 0;; i++) {} }
long loop_calling_host(void) { long s = 0; for (;;) s += host_double(s); }
static long depth(long n) { volatile char pad[256]; pad[0] = (char)n; return n ? depth(n - 1) + pad[0] : 0; }
long recurse(long n) { return depth(n); }
long jump_to(long addr) { return ((long (*)(void))addr)(); }
/* Leave three values on the x87 stack: the runtime must empty it on the way out. */
long x87_dirty(void) { __asm__ volatile("fld1\n\tfld1\n\tfld1"); return 3; }
long x87_dirty_host(long x) { __asm__ volatile("fld1\n\tfld1"); return host_x87(x); }
long x87_dirty_fault(void) { __asm__ volatile("fld1"); return store_null(); }
static long counter;
long bump(void) { return ++counter; }
