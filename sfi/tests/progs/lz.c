/* LZ77-style compression round trip with a hash chain, over generated text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
static size_t compress(const uint8_t *in, size_t n, uint8_t *out) {
    static int32_t head[1 << 14];
    int32_t *prev = malloc(n * sizeof *prev);
    memset(head, -1, sizeof head);
    size_t i = 0, o = 0;
    while (i < n) {
        size_t best = 0, dist = 0;
        if (i + 3 <= n) {
            unsigned h = (in[i] * 506832829u ^ in[i+1] * 2654435761u ^ in[i+2]) >> 18;
            int32_t c = head[h]; int tries = 32;
            while (c >= 0 && i - c < 65535 && tries--) {
                size_t l = 0; while (i + l < n && l < 255 && in[c + l] == in[i + l]) l++;
                if (l > best) { best = l; dist = i - c; }
                c = prev[c];
            }
            prev[i] = head[h]; head[h] = (int32_t)i;
        }
        if (best >= 4) { out[o++] = 1; out[o++] = (uint8_t)best; out[o++] = (uint8_t)dist; out[o++] = (uint8_t)(dist >> 8); i += best; }
        else { out[o++] = 0; out[o++] = in[i++]; }
    }
    free(prev);
    return o;
}
static size_t decompress(const uint8_t *in, size_t n, uint8_t *out) {
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (in[i] == 0) { out[o++] = in[i+1]; i += 2; }
        else { size_t l = in[i+1], d = in[i+2] | in[i+3] << 8; for (size_t k = 0; k < l; k++, o++) out[o] = out[o - d]; i += 4; }
    }
    return o;
}
int main(void) {
    const char *words[] = {"fault", "domain", "sandbox", "store", "jump", "bundle", "verifier", "register", "segment", "guard"};
    size_t n = 400000;
    uint8_t *text = malloc(n), *z = malloc(2 * n + 16), *back = malloc(n);
    unsigned s = 12345; size_t k = 0;
    while (k < n) { s = s * 1103515245 + 12345; const char *w = words[(s >> 16) % 10]; size_t l = strlen(w); if (k + l + 1 > n) break; memcpy(text + k, w, l); k += l; text[k++] = (s >> 8) & 1 ? ' ' : '\n'; }
    n = k;
    size_t zn = compress(text, n, z);
    size_t bn = decompress(z, zn, back);
    uint32_t h = 2166136261u; for (size_t i = 0; i < zn; i++) h = (h ^ z[i]) * 16777619u;
    printf("in %zu compressed %zu back %zu equal %d hash %08x\n", n, zn, bn, bn == n && !memcmp(text, back, n), h);
    return 0;
}
