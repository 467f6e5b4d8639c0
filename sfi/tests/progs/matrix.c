/* Floating point: matrix product, LU decomposition, and libm functions. */
#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#define N 160
static double a[N][N], b[N][N], c[N][N];
int main(void) {
    for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) { a[i][j] = sin(i * 0.37 + j * 0.11) + (i == j) * N; b[i][j] = cos(i * 0.05 - j * 0.3); }
    for (int i = 0; i < N; i++) for (int k = 0; k < N; k++) { double x = a[i][k]; for (int j = 0; j < N; j++) c[i][j] += x * b[k][j]; }
    double tr = 0; for (int i = 0; i < N; i++) tr += c[i][i];
    printf("trace %.9e\n", tr);
    /* LU without pivoting (diagonally dominant) and determinant via logs */
    double logdet = 0;
    for (int k = 0; k < N; k++) {
        for (int i = k + 1; i < N; i++) { double f = a[i][k] / a[k][k]; for (int j = k; j < N; j++) a[i][j] -= f * a[k][j]; }
        logdet += log(fabs(a[k][k]));
    }
    printf("logdet %.9f\n", logdet);
    double s = 0; for (int i = 1; i < 2000; i++) s += pow(i, -1.5) + atan(i * 0.001) + sqrt(i) * exp(-i * 0.01);
    printf("series %.9f floor %g ceil %g fmod %g\n", s, floor(-2.5), ceil(2.1), fmod(10.5, 3));
    return 0;
}
