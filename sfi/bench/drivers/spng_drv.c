/* libspng: decode the package's test images (PngSuite: every colour type,
   bit depth, interlacing, and the corrupt ones, which must fail) to RGBA8,
   and encode each decoded image again as an RGBA8 PNG, N rounds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spng.h>
#include "common.h"

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: spng ROUNDS files...\n"); return 2; }
    int rounds = atoi(argv[1]), nf = argc - 2;
    unsigned char **png = malloc(nf * sizeof *png);
    size_t *len = malloc(nf * sizeof *len);
    for (int i = 0; i < nf; i++) png[i] = read_file(argv[i + 2], &len[i]);
    unsigned long ok = 0, bad = 0, pixels = 0, encoded = 0;
    unsigned h = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nf; i++) {
            spng_ctx *ctx = spng_ctx_new(0);
            spng_set_crc_action(ctx, SPNG_CRC_USE, SPNG_CRC_USE);
            spng_set_png_buffer(ctx, png[i], len[i]);
            size_t size;
            struct spng_ihdr ihdr;
            unsigned char *img = NULL;
            int e = spng_get_ihdr(ctx, &ihdr);
            if (!e) e = spng_decoded_image_size(ctx, SPNG_FMT_RGBA8, &size);
            if (!e) {
                img = malloc(size);
                e = spng_decode_image(ctx, img, size, SPNG_FMT_RGBA8, SPNG_DECODE_TRNS);
            }
            spng_ctx_free(ctx);
            if (e) {
                bad++;
                h = h * 31 + e;
                free(img);
                continue;
            }
            ok++;
            pixels += size / 4;
            h ^= fnv(img, size);
            spng_ctx *enc = spng_ctx_new(SPNG_CTX_ENCODER);
            spng_set_option(enc, SPNG_ENCODE_TO_BUFFER, 1);
            struct spng_ihdr out = {ihdr.width, ihdr.height, 8, SPNG_COLOR_TYPE_TRUECOLOR_ALPHA, 0, 0, 0};
            spng_set_ihdr(enc, &out);
            e = spng_encode_image(enc, img, size, SPNG_FMT_PNG, SPNG_ENCODE_FINALIZE);
            size_t plen = 0;
            int err = 0;
            unsigned char *p = e ? NULL : spng_get_png_buffer(enc, &plen, &err);
            if (p) { encoded += plen; h += fnv(p, plen); free(p); } else h = h * 7 + e + err;
            spng_ctx_free(enc);
            free(img);
        }
    printf("spng: %lu decoded, %lu refused, %lu pixels, %lu bytes encoded, hash %08x\n", ok, bad, pixels, encoded, h);
    return 0;
}
