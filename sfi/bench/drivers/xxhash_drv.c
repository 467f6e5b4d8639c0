/* xxHash: XXH32, XXH64, XXH3 64 and 128 over the corpus, many times. */
#include "common.h"
#define XXH_INLINE_ALL
#include "xxhash.h"
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    unsigned long a = 0, b = 0, c = 0, d = 0;
    for (int r = 0; r < 40; r++) {
        a += XXH32(in, n, r); b += XXH64(in, n, r); c += XXH3_64bits_withSeed(in, n, r);
        XXH128_hash_t h = XXH3_128bits_withSeed(in + r, n - r, r); d += h.low64 ^ h.high64;
    }
    /* many short inputs too */
    for (size_t off = 0; off + 64 < n; off += 7) d += XXH3_64bits(in + off, (off % 61) + 3);
    printf("%lx %lx %lx %lx\n", a, b, c, d);
    return 0;
}
