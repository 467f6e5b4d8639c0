/* bzip2: compress the corpus with 900k blocks and decompress it. */
#include "common.h"
#include <string.h>
#include "bzlib.h"
void bz_internal_error(int e) { fprintf(stderr, "bzip2 internal error %d\n", e); exit(3); }
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    unsigned cap = n + n / 100 + 600, zn = cap, bn = n;
    char *z = malloc(cap), *back = malloc(n);
    if (BZ2_bzBuffToBuffCompress(z, &zn, (char *)in, n, 9, 0, 0) != BZ_OK) return 1;
    if (BZ2_bzBuffToBuffDecompress(back, &bn, z, zn, 0, 0) != BZ_OK) return 1;
    printf("%zu -> %u, hash %08x, round trip %s\n", n, zn, fnv((unsigned char *)z, zn), bn == n && !memcmp(in, back, n) ? "ok" : "BAD");
    return 0;
}
