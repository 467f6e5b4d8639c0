/* Kernel library: formatted output, string and memory helpers, panic. */
#ifndef KEEP_LIB_H
#define KEEP_LIB_H

#include "types.h"
#include <stdarg.h>

void *memset(void *d, int c, size_t n);
void *memcpy(void *d, const void *s, size_t n);
/* The little-endian u64 at p (no alignment needed). */
static inline u64 le64(const u8 *p)
{
    u64 v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
void *memmove(void *d, const void *s, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
size_t strnlen(const char *s, size_t max);
int strncmp(const char *a, const char *b, size_t n);
const char *strstr_n(const char *hay, size_t hay_len, const char *needle);

/* printf subset: %d %i %u %x %X %p %s %c %%, flags '0' '-', width, .precision (for %s), 'l'/'ll'/'z'. */
int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int ksnprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void kprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Where kprintf output goes (the serial console in the kernel, stdout on the host). */
void console_putc(char c);

NORETURN void panic(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define ASSERT(c)                                                                  \
    do {                                                                           \
        if (!(c))                                                                  \
            panic("assertion failed: %s at %s:%d", #c, __FILE__, __LINE__);        \
    } while (0)

#endif
