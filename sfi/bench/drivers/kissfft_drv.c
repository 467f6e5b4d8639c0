/* KISS FFT: complex and real transforms of several sizes, forward and inverse. */
#include "common.h"
#include <math.h>
#include "kiss_fft.h"
#include "kiss_fftr.h"
int main(int argc, char **argv) {
    long work = argc > 1 ? atol(argv[1]) : 4000000; /* points transformed per size */
    int sizes[] = {1024, 4096, 3000, 65536};
    double check = 0;
    for (int s = 0; s < 4; s++) {
        int n = sizes[s];
        kiss_fft_cfg f = kiss_fft_alloc(n, 0, 0, 0), inv = kiss_fft_alloc(n, 1, 0, 0);
        kiss_fft_cpx *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
        for (int i = 0; i < n; i++) { x[i].r = sinf(i * 0.01f) + (i % 7) * 0.1f; x[i].i = cosf(i * 0.003f); }
        int reps = (int)(work / n);
        for (int r = 0; r < reps; r++) { kiss_fft(f, x, y); kiss_fft(inv, y, x); for (int i = 0; i < n; i++) { x[i].r /= n; x[i].i /= n; } }
        for (int i = 0; i < n; i += 97) check += x[i].r * 3 + y[i].i;
        kiss_fftr_cfg rf = kiss_fftr_alloc(n & ~1, 0, 0, 0);
        float *rx = malloc(n * sizeof *rx); kiss_fft_cpx *ry = malloc((n / 2 + 1) * sizeof *ry);
        for (int i = 0; i < n; i++) rx[i] = x[i].r;
        for (int r = 0; r < reps; r++) kiss_fftr(rf, rx, ry);
        for (int i = 0; i < n / 2; i += 31) check += ry[i].r;
        free(f); free(inv); free(rf); free(x); free(y); free(rx); free(ry);
        printf("n=%d reps=%d check=%.6e\n", n, reps, check);
    }
    return 0;
}
