/* A small printf: enough for kernel messages, bounded, no floating point. */
#include "lib.h"

struct out {
    char *buf;
    size_t size;
    size_t len; /* characters produced, even past size */
};

static void put(struct out *o, char c)
{
    if (o->len + 1 < o->size)
        o->buf[o->len] = c;
    o->len++;
}

static void put_num(struct out *o, u64 v, unsigned base, bool neg, bool upper, int width, bool zero,
                    bool left)
{
    const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = digits[v % base];
        v /= base;
    } while (v);
    int total = n + (neg ? 1 : 0);
    if (!left && !zero)
        for (; width > total; width--)
            put(o, ' ');
    if (neg)
        put(o, '-');
    if (!left && zero)
        for (; width > total; width--)
            put(o, '0');
    while (n)
        put(o, tmp[--n]);
    if (left)
        for (; width > total; width--)
            put(o, ' ');
}

int kvsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
    struct out o = {buf, size, 0};
    for (; *fmt; fmt++) {
        if (*fmt != '%') {
            put(&o, *fmt);
            continue;
        }
        fmt++;
        bool zero = false, left = false;
        for (;; fmt++) {
            if (*fmt == '0')
                zero = true;
            else if (*fmt == '-')
                left = true;
            else
                break;
        }
        int width = 0, prec = -1;
        while (*fmt >= '0' && *fmt <= '9')
            width = width * 10 + (*fmt++ - '0');
        if (*fmt == '.') {
            prec = 0;
            for (fmt++; *fmt >= '0' && *fmt <= '9'; fmt++)
                prec = prec * 10 + (*fmt - '0');
        }
        int longs = 0;
        while (*fmt == 'l' || *fmt == 'z') {
            longs++;
            fmt++;
        }
        switch (*fmt) {
        case 'd':
        case 'i': {
            i64 v = longs ? va_arg(ap, i64) : va_arg(ap, int);
            u64 mag = v < 0 ? (u64)0 - (u64)v : (u64)v;
            put_num(&o, mag, 10, v < 0, false, width, zero, left);
            break;
        }
        case 'u':
            put_num(&o, longs ? va_arg(ap, u64) : va_arg(ap, unsigned), 10, false, false, width, zero,
                    left);
            break;
        case 'x':
        case 'X':
            put_num(&o, longs ? va_arg(ap, u64) : va_arg(ap, unsigned), 16, false, *fmt == 'X', width,
                    zero, left);
            break;
        case 'p':
            put(&o, '0');
            put(&o, 'x');
            put_num(&o, (u64)(uptr)va_arg(ap, void *), 16, false, false, 16, true, false);
            break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!s)
                s = "(null)";
            int n = (int)(prec >= 0 ? strnlen(s, (size_t)prec) : strlen(s));
            if (!left)
                for (; width > n; width--)
                    put(&o, ' ');
            for (int i = 0; i < n; i++)
                put(&o, s[i]);
            if (left)
                for (; width > n; width--)
                    put(&o, ' ');
            break;
        }
        case 'c':
            put(&o, (char)va_arg(ap, int));
            break;
        case '%':
            put(&o, '%');
            break;
        case '\0':
            fmt--; /* a lone '%' at the end: stop */
            break;
        default:
            put(&o, '%');
            put(&o, *fmt);
            break;
        }
    }
    if (size)
        o.buf[o.len < size ? o.len : size - 1] = '\0';
    return (int)o.len;
}

int ksnprintf(char *buf, size_t size, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = kvsnprintf(buf, size, fmt, ap);
    va_end(ap);
    return n;
}

void kprintf(const char *fmt, ...)
{
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    int n = kvsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof buf)
        n = (int)sizeof buf - 1;
    for (int i = 0; i < n; i++) {
        if (buf[i] == '\n')
            console_putc('\r');
        console_putc(buf[i]);
    }
}
