/* A library-style CPU probe: cpuid (gcc's <cpuid.h>, inline assembly as
 * zstd writes it, and libdeflate's, in .ifnc conditionals), rdtsc, rdtscp
 * and xgetbv (as bytes, as libsodium and libdeflate write it, and by
 * name), code paths chosen by the features
 * found, and the registers, flags and red zone around each instruction.
 * The output does not depend on the features (every path computes the same
 * values), so the sandboxed output must equal the native one.  With the
 * argument `leaves` it prints the raw answers instead (compared with the
 * runtime's fixed set by run.py).  */
#include <cpuid.h>
#include <stdio.h>
#include <string.h>
#include <x86intrin.h>

/* cpuid_regs.s: 0 = cpuid, 1 = rdtsc, 2 = rdtscp, 3 = xgetbv */
unsigned long preserves(int which, unsigned leaf, unsigned long subleaf);

static void cpuid_zstd(unsigned leaf, unsigned sub, unsigned r[4]) {
    __asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* libdeflate's lib/x86/cpu_features.c */
static void cpuid_deflate(unsigned leaf, unsigned sub, unsigned r[4]) {
    __asm__(".ifnc %%ebx, %1; mov  %%ebx, %1; .endif\n"
            "cpuid                                  \n"
            ".ifnc %%ebx, %1; xchg %%ebx, %1; .endif\n"
            : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* libsodium's sodium/runtime.c and libdeflate's read_xcr */
static unsigned long xgetbv_bytes(unsigned idx) {
    unsigned a, d;
    __asm__ __volatile__(".byte 0x0f, 0x01, 0xd0" : "=a"(a), "=d"(d) : "c"(idx));
    return (unsigned long)d << 32 | a;
}

static unsigned long xgetbv_name(unsigned idx) {
    unsigned a, d;
    __asm__ __volatile__("xgetbv" : "=a"(a), "=d"(d) : "c"(idx));
    return (unsigned long)d << 32 | a;
}

static int has_popcnt, has_sse42, has_bmi2;

__attribute__((target("popcnt"))) static unsigned long pop_hw(const unsigned long *v, int n) {
    unsigned long s = 0;
    for (int i = 0; i < n; i++)
        s += __builtin_popcountl(v[i]);
    return s;
}

static unsigned long pop_sw(const unsigned long *v, int n) {
    unsigned long s = 0;
    for (int i = 0; i < n; i++)
        for (unsigned long x = v[i]; x; x &= x - 1)
            s++;
    return s;
}

__attribute__((target("sse4.2"))) static unsigned crc_hw(const unsigned char *p, int n) {
    unsigned c = ~0u;
    for (int i = 0; i < n; i++)
        c = _mm_crc32_u8(c, p[i]);
    return ~c;
}

static unsigned crc_sw(const unsigned char *p, int n) {
    unsigned c = ~0u;
    for (int i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = c >> 1 ^ (0x82f63b78 & -(c & 1));
    }
    return ~c;
}

__attribute__((target("bmi2"))) static unsigned long pext_hw(unsigned long x, unsigned long m) {
    return _pext_u64(x, m);
}

static unsigned long pext_sw(unsigned long x, unsigned long m) {
    unsigned long r = 0, bit = 1;
    for (; m; m &= m - 1, bit <<= 1)
        if (x & m & -m)
            r |= bit;
    return r;
}

int main(int argc, char **argv) {
    unsigned r[4], a, b, c, d;
    if (argc > 1 && !strcmp(argv[1], "leaves")) {
        static const unsigned leaves[][2] = {{0, 0}, {1, 0}, {2, 0}, {7, 0}, {7, 1}, {0xd, 0}, {0x80000000, 0},
                                             {0x80000001, 0}, {0x80000002, 0}, {0x40000000, 0}};
        for (unsigned i = 0; i < sizeof leaves / sizeof leaves[0]; i++) {
            cpuid_zstd(leaves[i][0], leaves[i][1], r);
            printf("%08x.%u: %08x %08x %08x %08x\n", leaves[i][0], leaves[i][1], r[0], r[1], r[2], r[3]);
        }
        cpuid_deflate(1, 0, r);
        printf("libdeflate's cpuid 1: %08x %08x %08x %08x\n", r[0], r[1], r[2], r[3]);
        printf("xgetbv 0: %lx %lx, 1: %lx\n", xgetbv_bytes(0), xgetbv_name(0), xgetbv_bytes(1));
        unsigned long t = __rdtsc(), t2;
        unsigned aux = 7;
        t2 = __rdtscp(&aux);
        printf("rdtsc low bits %lx %lx aux %u\n", t & 0xff, t2 & 0xff, aux);
        return 0;
    }
    unsigned max = __get_cpuid_max(0, 0);
    if (__get_cpuid(1, &a, &b, &c, &d)) {
        has_popcnt = !!(c & bit_POPCNT);
        has_sse42 = !!(c & bit_SSE4_2);
    }
    if (max >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        has_bmi2 = !!(b & bit_BMI2);
    }
    unsigned long v[64];
    unsigned char bytes[512];
    unsigned long x = 0x9e3779b97f4a7c15;
    for (int i = 0; i < 64; i++)
        v[i] = x = x * 6364136223846793005 + 1442695040888963407;
    for (int i = 0; i < 512; i++)
        bytes[i] = (unsigned char)(v[i % 64] >> (i % 8 * 8));
    printf("popcount %lu\n", has_popcnt ? pop_hw(v, 64) : pop_sw(v, 64));
    printf("crc32c %08x\n", has_sse42 ? crc_hw(bytes, 512) : crc_sw(bytes, 512));
    printf("pext %016lx\n", has_bmi2 ? pext_hw(v[3], v[4]) : pext_sw(v[3], v[4]));
    printf("paths agree %d %d %d\n", pop_hw(v, 64) == pop_sw(v, 64) || !has_popcnt,
           crc_hw(bytes, 512) == crc_sw(bytes, 512) || !has_sse42, pext_hw(v[3], v[4]) == pext_sw(v[3], v[4]) || !has_bmi2);
    static const unsigned probe[] = {0, 1, 5, 7, 0xd, 0x80000000, 0x80000001, 0x80000008};
    for (unsigned i = 0; i < sizeof probe / sizeof probe[0]; i++)
        printf("cpuid %08x preserves: %lx\n", probe[i], preserves(0, probe[i], 0));
    printf("rdtsc preserves: %lx\n", preserves(1, 0, 0));
    printf("rdtscp preserves: %lx\n", preserves(2, 0, 0));
    /* Libraries run xgetbv only where cpuid reports OSXSAVE, which the
     * domain's answers never do; this runs it anyway, in the domain and
     * natively (which needs a host with OSXSAVE, as every one with AVX). */
    printf("xgetbv preserves: %lx\n", preserves(3, 0, 0));
    printf("xgetbv forms agree %d\n", xgetbv_bytes(0) == xgetbv_name(0));
    __cpuid(1, a, b, c, d);
    cpuid_deflate(1, 0, r);
    printf("both cpuid forms agree %d\n", r[2] == c && r[3] == d);
    unsigned long t0 = __rdtsc(), ok = 1;
    for (int i = 0; i < 1000; i++) {
        unsigned long t1 = __rdtsc();
        ok &= t1 >= t0;
        t0 = t1;
    }
    printf("rdtsc monotonic %lu\n", ok);
    return 0;
}
