#ifndef _MATH_H
#define _MATH_H
#define HUGE_VAL __builtin_huge_val()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)
#define M_PI 3.14159265358979323846
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_ZERO 2
#define FP_SUBNORMAL 3
#define FP_NORMAL 4
#define fpclassify(x) __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x)
double fabs(double x); double sqrt(double x); double floor(double x); double ceil(double x);
double fmod(double x, double y); double pow(double x, double y); double exp(double x);
double log(double x); double log2(double x); double log10(double x); double sin(double x);
double cos(double x); double tan(double x); double atan(double x); double atan2(double y, double x);
double asin(double x); double acos(double x); double frexp(double x, int *e); double ldexp(double x, int e);
double modf(double x, double *i); double trunc(double x); double round(double x);
float fabsf(float x); float sinf(float x); float cosf(float x); void sincos(double x, double *s, double *c); void sincosf(float x, float *s, float *c); float sqrtf(float x); float floorf(float x);
#endif
