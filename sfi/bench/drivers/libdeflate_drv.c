/* libdeflate: DEFLATE at levels 1, 6, 9 and 12 (level 12 on the first
 * 512 KiB), each decompressed and compared; the zlib and gzip wrappers at
 * level 6; CRC-32 and Adler-32 of the corpus.  The first compressor or
 * checksum probes the CPU (lib/x86/cpu_features.c: cpuid, and xgetbv
 * written as bytes) and picks its SSE2, PCLMUL, AVX2 or BMI2 code. */
#include "common.h"
#include <string.h>
#include "libdeflate.h"
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    size_t cap = libdeflate_zlib_compress_bound(NULL, n) + 64;
    unsigned char *z = malloc(cap), *back = malloc(n);
    static const int levels[] = {1, 6, 9, 12};
    for (int i = 0; i < 4; i++) {
        size_t len = levels[i] == 12 && n > (512 << 10) ? 512 << 10 : n, bn = 0;
        struct libdeflate_compressor *c = libdeflate_alloc_compressor(levels[i]);
        size_t zn = libdeflate_deflate_compress(c, in, len, z, cap);
        enum libdeflate_result r = libdeflate_deflate_decompress(d, z, zn, back, len, &bn);
        printf("deflate level %d: %zu -> %zu hash %08x %s\n", levels[i], len, zn, fnv(z, zn),
               zn && r == LIBDEFLATE_SUCCESS && bn == len && !memcmp(in, back, len) ? "ok" : "BAD");
        if (levels[i] == 6) {
            size_t wn = libdeflate_zlib_compress(c, in, n, z, cap);
            r = libdeflate_zlib_decompress(d, z, wn, back, n, &bn);
            printf("zlib level 6: %zu -> %zu hash %08x %s\n", n, wn, fnv(z, wn),
                   wn && r == LIBDEFLATE_SUCCESS && bn == n && !memcmp(in, back, n) ? "ok" : "BAD");
            wn = libdeflate_gzip_compress(c, in, n, z, cap);
            r = libdeflate_gzip_decompress(d, z, wn, back, n, &bn);
            printf("gzip level 6: %zu -> %zu hash %08x %s\n", n, wn, fnv(z, wn),
                   wn && r == LIBDEFLATE_SUCCESS && bn == n && !memcmp(in, back, n) ? "ok" : "BAD");
        }
        libdeflate_free_compressor(c);
    }
    /* Odd lengths and offsets reach the vector loops' heads and tails. */
    unsigned crc = 0, adler = 1;
    for (size_t off = 0; off < 64; off += 7)
        crc = libdeflate_crc32(crc, in + off, n - off * 3), adler = libdeflate_adler32(adler, in + off, n - off * 5);
    printf("crc32 %08x adler32 %08x\n", crc, adler);
    libdeflate_free_decompressor(d);
    return 0;
}
