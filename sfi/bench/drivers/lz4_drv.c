/* lz4: fast and high-compression modes, each with decompression, repeated. */
#include "common.h"
#include <string.h>
#include "lz4.h"
#include "lz4hc.h"
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    int cap = LZ4_compressBound(n); char *z = malloc(cap), *back = malloc(n);
    for (int round = 0; round < 8; round++) {
        int zn = LZ4_compress_default((char *)in, z, n, cap);
        int bn = LZ4_decompress_safe(z, back, zn, n);
        if (round == 0) printf("fast: %zu -> %d hash %08x %s\n", n, zn, fnv((unsigned char *)z, zn), bn == (int)n && !memcmp(in, back, n) ? "ok" : "BAD");
    }
    int zn = LZ4_compress_HC((char *)in, z, n, cap, 9);
    int bn = LZ4_decompress_safe(z, back, zn, n);
    printf("hc9: %zu -> %d hash %08x %s\n", n, zn, fnv((unsigned char *)z, zn), bn == (int)n && !memcmp(in, back, n) ? "ok" : "BAD");
    return 0;
}
