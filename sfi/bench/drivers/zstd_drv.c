/* zstd: compression at levels 1, 3, 9 and 19 (first 256 KiB), each
 * decompressed and compared; the compression context probes the CPU with
 * cpuid (lib/common/cpu.h) when it is created. */
#include "common.h"
#include <string.h>
#include "zstd.h"
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    size_t cap = ZSTD_compressBound(n); unsigned char *z = malloc(cap), *back = malloc(n);
    static const int levels[] = {1, 3, 9, 19};
    for (int i = 0; i < 4; i++) {
        size_t len = levels[i] == 19 && n > (256 << 10) ? 256 << 10 : n;
        size_t zn = ZSTD_compress(z, cap, in, len, levels[i]);
        if (ZSTD_isError(zn)) { printf("level %d: %s\n", levels[i], ZSTD_getErrorName(zn)); return 1; }
        size_t bn = ZSTD_decompress(back, len, z, zn);
        printf("level %d: %zu -> %zu hash %08x %s\n", levels[i], len, zn, fnv(z, zn),
               !ZSTD_isError(bn) && bn == len && !memcmp(in, back, len) ? "ok" : "BAD");
    }
    return 0;
}
