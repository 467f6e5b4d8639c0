/* Functions compiled for BMI2 and AVX2 (gcc's target attribute): gcc emits
   VEX-encoded instructions (shlx, shrx, sarx, rorx, mulx, pdep, pext, bzhi,
   andn, vpaddd...), which the layout must never lengthen with {rex}.  The
   output must equal the native build's.  (run.py runs it only where /proc/cpuinfo lists bmi2, avx2 and fma.) */
#include <stdio.h>
#include <stdint.h>
#include <immintrin.h>

__attribute__((target("bmi,bmi2"), noinline)) static uint64_t mix(uint64_t *a, int n, unsigned s) {
    uint64_t h = 0;
    for (int i = 0; i < n; i++) {
        uint64_t x = a[i];
        x = (x << (s & 63)) ^ (x >> ((s + i) & 63)) ^ ((int64_t)x >> (i & 63));
        x ^= _pdep_u64(x, 0x5555555555555555ull) ^ _pext_u64(x, 0xf0f0f0f00f0f0f0full);
        x ^= _bzhi_u64(x, i & 63) ^ (~x & h);
        unsigned long long hi, lo = _mulx_u64(x, 0x9e3779b97f4a7c15ull, &hi);
        h = ((h << 7) | (h >> 57)) ^ lo ^ hi;
        a[i] = x;          /* a store through a VEX-encoded computation */
    }
    return h;
}

__attribute__((target("bmi,bmi2"), noinline)) static uint32_t shifts32(uint32_t *v, int n) {
    uint32_t r = 0;
    for (int i = 0; i < n; i++) {
        v[i] = (v[i] << (i & 31)) | (v[i] >> ((i * 7) & 31)) | ((int32_t)v[i] >> (i & 7));
        r += (v[i] & (v[i] - 1)) ^ (v[i] & -v[i]) ^ _pext_u32(v[i], 0x00ff00ffu);
    }
    return r;
}

__attribute__((target("avx2"), noinline)) static void vadd(int32_t *dst, const int32_t *a, const int32_t *b, int n) {
    for (int i = 0; i < n; i++)
        dst[i] = (a[i] * 3 + b[i]) ^ (a[i] >> 3);
}

__attribute__((target("avx2,fma"), noinline)) static double dot(const double *a, const double *b, int n) {
    double s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static uint64_t words[1000];
static uint32_t w32[1000];
static int32_t x[1024], y[1024], z[1024];
static double da[512], db[512];

int main(void) {
    uint64_t seed = 88172645463325252ull;
    for (int i = 0; i < 1000; i++) {
        seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
        words[i] = seed;
        w32[i] = (uint32_t)(seed >> 17);
    }
    for (int i = 0; i < 1024; i++) { x[i] = i * 2654435761u; y[i] = i ^ 0x5a5a; }
    for (int i = 0; i < 512; i++) { da[i] = i * 0.25; db[i] = 1.0 / (i + 1); }
    uint64_t h = 0;
    for (int r = 0; r < 20; r++) {
        h ^= mix(words, 1000, r * 5);
        h += shifts32(w32, 1000);
        vadd(z, x, y, 1024);
        vadd(x, z, y, 1000);
    }
    uint32_t zs = 0;
    for (int i = 0; i < 1024; i++) zs = zs * 31 + z[i];
    printf("mix %016llx z %08x dot %.6f\n", (unsigned long long)h, zs, dot(da, db, 512));
    return 0;
}
