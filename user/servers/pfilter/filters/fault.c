/* Packet filter that faults on purpose: byte 0 of the packet selects how.
 * 1: store through a null pointer (a page fault in the domain's null
 * guard); 2: ud2 (#UD); 3: int3 (#GP under Keep, whose #BP gate is
 * kernel-only); 5: leaves three values on the x87 stack and accepts; 6:
 * leaves one and stores through a null pointer; 7: calls the address in
 * bytes 8..16 (masked into the domain, as every indirect call is); else it
 * accepts.  (5 and 6 check that the runtime empties the x87 stack on the
 * way out; 7 that the rest of the last code page traps.) */
typedef unsigned long u64;
typedef unsigned char u8;

u64 filter(const u8 *p, u64 len)
{
    if (len == 0)
        return 1;
    switch (p[0]) {
    case 1: {
        volatile u64 *null = (volatile u64 *)(u64)p[1]; /* p[1] = 0 */
        *null = 1;
        return 0;
    }
    case 2:
        __builtin_trap();
    case 3:
        __asm__ volatile("int3");
        return 0;
    case 5:
        __asm__ volatile("fld1\n\tfld1\n\tfld1");
        return 1;
    case 6: {
        __asm__ volatile("fld1");
        volatile u64 *null = (volatile u64 *)(u64)p[1];
        *null = 1;
        return 0;
    }
    case 7: {
        u64 (*f)(void) = (u64 (*)(void))(*(const u64 *)(p + 8));
        return f();
    }
    default:
        return 1;
    }
}
