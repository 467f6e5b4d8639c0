/* Brotli: compress the corpus at qualities 1, 5, 7 and 9 (window 22) and
   decompress each, checking the round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <brotli/encode.h>
#include <brotli/decode.h>
#include "common.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: brotli LIMIT corpus\n"); return 2; }
    size_t n, limit = strtoul(argv[1], 0, 0);
    unsigned char *in = read_file(argv[2], &n);
    if (limit && n > limit) n = limit;
    size_t cap = BrotliEncoderMaxCompressedSize(n);
    unsigned char *comp = malloc(cap), *back = malloc(n);
    static const int q[] = {1, 5, 7, 9};
    for (int i = 0; i < 4; i++) {
        size_t clen = cap, dlen = n;
        if (!BrotliEncoderCompress(q[i], 22, BROTLI_MODE_TEXT, n, in, &clen, comp)) return 1;
        if (BrotliDecoderDecompress(clen, comp, &dlen, back) != BROTLI_DECODER_RESULT_SUCCESS || dlen != n || memcmp(back, in, n)) {
            printf("round trip failed\n");
            return 1;
        }
        printf("brotli q%d: %lu -> %lu bytes, hash %08x\n", q[i], (unsigned long)n, (unsigned long)clen, fnv(comp, clen));
    }
    return 0;
}
