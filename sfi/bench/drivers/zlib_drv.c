/* zlib: deflate the corpus at levels 1, 6 and 9 and inflate it back. */
#include "common.h"
#include <string.h>
#include "zlib.h"
int main(int argc, char **argv) {
    size_t n; unsigned char *in = read_file(argv[1], &n);
    uLongf cap = compressBound(n); unsigned char *z = malloc(cap), *back = malloc(n);
    int levels[] = {1, 6, 9};
    for (int i = 0; i < 3; i++) {
        uLongf zn = cap, bn = n;
        if (compress2(z, &zn, in, n, levels[i]) != Z_OK) return 1;
        if (uncompress(back, &bn, z, zn) != Z_OK) return 1;
        printf("level %d: %zu -> %lu, crc %08lx, round trip %s\n", levels[i], n, zn, crc32(0, z, zn), bn == n && !memcmp(in, back, n) ? "ok" : "BAD");
    }
    return 0;
}
