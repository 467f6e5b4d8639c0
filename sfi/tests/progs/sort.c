/* Sorting: qsort with a comparison callback (indirect calls), a merge sort, VLAs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static unsigned long seed = 88172645463325252ul;
static unsigned long next(void) { seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17; return seed; }
static int cmp_u32(const void *a, const void *b) { unsigned x = *(const unsigned *)a, y = *(const unsigned *)b; return x < y ? -1 : x > y; }
static void merge_sort(unsigned *a, unsigned *tmp, int n) {
    if (n < 2) return;
    int h = n / 2;
    merge_sort(a, tmp, h); merge_sort(a + h, tmp, n - h);
    int i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = a[i] <= a[j] ? a[i++] : a[j++];
    while (i < h) tmp[k++] = a[i++];
    while (j < n) tmp[k++] = a[j++];
    memcpy(a, tmp, n * sizeof *a);
}
static unsigned long checksum(const unsigned *a, int n) { unsigned long h = 1469598103934665603ul; for (int i = 0; i < n; i++) h = (h ^ a[i]) * 1099511628211ul; return h; }
int main(void) {
    for (int round = 0; round < 4; round++) {
        int n = 20000 + round * 7919;
        unsigned *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *t = malloc(n * sizeof *t);
        for (int i = 0; i < n; i++) a[i] = b[i] = (unsigned)next() % (1000 + round * 100000);
        qsort(a, n, sizeof *a, cmp_u32);
        merge_sort(b, t, n);
        int vla_n = 100 + round;
        unsigned vla[vla_n];
        for (int i = 0; i < vla_n; i++) vla[i] = a[i * (n / vla_n)];
        printf("round %d: n=%d same=%d min=%u max=%u median=%u sum=%lx vla=%lx\n", round, n, memcmp(a, b, n * sizeof *a) == 0,
               a[0], a[n - 1], a[n / 2], checksum(a, n), checksum(vla, vla_n));
        free(a); free(b); free(t);
    }
    return 0;
}
