#ifndef _STDLIB_H
#define _STDLIB_H
#include <stddef.h>
#define EXIT_SUCCESS 0
#define EXIT_FAILURE 1
#define RAND_MAX 2147483647
void *malloc(size_t n);
void *calloc(size_t n, size_t m);
void *realloc(void *p, size_t n);
void free(void *p);
_Noreturn void exit(int c);
_Noreturn void _Exit(int c);
_Noreturn void abort(void);
int atexit(void (*f)(void));
int atoi(const char *s);
long atol(const char *s);
double atof(const char *s);
long strtol(const char *restrict s, char **restrict e, int b);
unsigned long strtoul(const char *restrict s, char **restrict e, int b);
long long strtoll(const char *restrict s, char **restrict e, int b);
unsigned long long strtoull(const char *restrict s, char **restrict e, int b);
double strtod(const char *restrict s, char **restrict e);
float strtof(const char *restrict s, char **restrict e);
void qsort(void *b, size_t n, size_t w, int (*c)(const void *, const void *));
void *bsearch(const void *k, const void *b, size_t n, size_t w, int (*c)(const void *, const void *));
int abs(int x);
long labs(long x);
long long llabs(long long x);
int rand(void);
void srand(unsigned s);
char *getenv(const char *n);
int system(const char *c);
typedef struct { int quot, rem; } div_t;
typedef struct { long quot, rem; } ldiv_t;
#endif
