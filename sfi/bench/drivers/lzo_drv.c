/* LZO (minilzo, LZO1X-1): compress and decompress the corpus in blocks,
   several rounds; checks the round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "minilzo.h"
#include "common.h"



int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: lzo ROUNDS corpus\n"); return 2; }
    int rounds = atoi(argv[1]);
    size_t n;
    unsigned char *in = read_file(argv[2], &n);
    if (lzo_init() != LZO_E_OK) return 1;
    void *wrk = malloc(LZO1X_1_MEM_COMPRESS);
    size_t blk = 256 << 10;
    unsigned char *comp = malloc(blk + blk / 16 + 64 + 3), *back = malloc(blk);
    unsigned long total = 0;
    unsigned h = 0;
    for (int r = 0; r < rounds; r++)
        for (size_t off = 0; off < n; off += blk) {
            size_t len = n - off < blk ? n - off : blk;
            lzo_uint clen = 0, dlen = blk;
            if (lzo1x_1_compress(in + off, len, comp, &clen, wrk) != LZO_E_OK) return 1;
            if (lzo1x_decompress_safe(comp, clen, back, &dlen, NULL) != LZO_E_OK || dlen != len || memcmp(back, in + off, len)) {
                printf("round trip failed\n");
                return 1;
            }
            total += clen;
            h = h * 33 + fnv(comp, clen);
        }
    printf("lzo: %lu bytes in, %lu compressed, hash %08x\n", (unsigned long)n * rounds, total, h);
    return 0;
}
