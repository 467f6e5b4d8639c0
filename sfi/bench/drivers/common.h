/* Shared by the benchmark drivers: read a whole file. */
#include <stdio.h>
#include <stdlib.h>
static unsigned char *read_file(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(2); }
    size_t cap = 1 << 20, len = 0;
    unsigned char *b = malloc(cap);
    for (;;) {
        if (len == cap) b = realloc(b, cap *= 2);
        size_t r = fread(b + len, 1, cap - len, f);
        if (!r) break;
        len += r;
    }
    fclose(f);
    *n = len;
    return b;
}
static unsigned fnv(const unsigned char *p, size_t n) { unsigned h = 2166136261u; while (n--) h = (h ^ *p++) * 16777619u; return h; }
