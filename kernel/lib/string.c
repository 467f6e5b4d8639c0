/* Memory and string helpers.  memset and memcpy use the string
 * instructions, eight bytes at a time and then the odd bytes (what clears a
 * 4 KiB frame or copies an IPC string: 512 stores rather than 4096); the
 * other loops are written so that gcc may not
 * turn them into calls to themselves (-fno-builtin / -ffreestanding). */
#include "lib.h"

void *memset(void *d, int c, size_t n)
{
    void *p = d;
    size_t q = n / 8, b = n % 8;
    u64 v = (u8)c * 0x0101010101010101ULL;
    __asm__ volatile("rep stosq\n\tmov %3, %%rcx\n\trep stosb" : "+D"(p), "+c"(q) : "a"(v), "r"(b) : "memory");
    return d;
}

void *memcpy(void *d, const void *s, size_t n)
{
    void *dp = d;
    size_t q = n / 8, b = n % 8;
    __asm__ volatile("rep movsq\n\tmov %3, %%rcx\n\trep movsb" : "+D"(dp), "+S"(s), "+c"(q) : "r"(b) : "memory");
    return d;
}

void *memmove(void *d, const void *s, size_t n)
{
    u8 *dp = d;
    const u8 *sp = s;
    if (dp <= sp || dp >= sp + n) /* a forward copy reads every byte before overwriting it */
        return memcpy(d, s, n);
    while (n--)
        dp[n] = sp[n];
    return d;
}

int memcmp(const void *a, const void *b, size_t n)
{
    const u8 *x = a, *y = b;
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

size_t strlen(const char *s)
{
    size_t n = 0;
    while (s[n])
        n++;
    return n;
}

size_t strnlen(const char *s, size_t max)
{
    size_t n = 0;
    while (n < max && s[n])
        n++;
    return n;
}

int strncmp(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a[i] != b[i])
            return (u8)a[i] < (u8)b[i] ? -1 : 1;
        if (!a[i])
            return 0;
    }
    return 0;
}

/* Find needle in the first hay_len bytes of hay (which need not be terminated). */
const char *strstr_n(const char *hay, size_t hay_len, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0)
        return hay;
    for (size_t i = 0; i + n <= hay_len; i++)
        if (memcmp(hay + i, needle, n) == 0)
            return hay + i;
    return NULL;
}
