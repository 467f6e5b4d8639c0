/* Keep SFI mini libc: just enough C library for the test programs and the
   benchmark programs.  The same source is compiled natively (gcc) and for
   fault domains (sfi-cc), so native and sandboxed runs execute the same code;
   only the host layer (sfi_host_*) differs. */
#include <sfi_host.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <time.h>
#include <unistd.h>
#include <sys/time.h>
#include <fcntl.h>
#include <locale.h>

int errno;

/* ---------------------------------------------------------------- strings */
/* The loops below must not be turned back into calls to themselves. */
#pragma GCC optimize("no-tree-loop-distribute-patterns")

void *memcpy(void *restrict d, const void *restrict s, size_t n) {
    unsigned char *dp = d; const unsigned char *sp = s;
    while (n >= 8) { uint64_t x; __builtin_memcpy(&x, sp, 8); __builtin_memcpy(dp, &x, 8); dp += 8; sp += 8; n -= 8; }
    while (n--) *dp++ = *sp++;
    return d;
}
void *memmove(void *d, const void *s, size_t n) {
    unsigned char *dp = d; const unsigned char *sp = s;
    if (dp == sp || n == 0) return d;
    if (dp < sp || dp >= sp + n) return memcpy(d, s, n);
    while (n >= 8) { n -= 8; uint64_t x; __builtin_memcpy(&x, sp + n, 8); __builtin_memcpy(dp + n, &x, 8); }
    while (n--) dp[n] = sp[n];
    return d;
}
void *memset(void *d, int c, size_t n) {
    unsigned char *dp = d;
    uint64_t v = 0x0101010101010101ull * (unsigned char)c;
    while (n >= 8) { __builtin_memcpy(dp, &v, 8); dp += 8; n -= 8; }
    while (n--) *dp++ = (unsigned char)c;
    return d;
}
int memcmp(const void *a, const void *b, size_t n) {
    const unsigned char *x = a, *y = b;
    for (; n; n--, x++, y++) if (*x != *y) return *x - *y;
    return 0;
}
void *memchr(const void *s, int c, size_t n) {
    const unsigned char *p = s;
    for (; n; n--, p++) if (*p == (unsigned char)c) return (void *)p;
    return 0;
}
size_t strlen(const char *s) { const char *p = s; while (*p) p++; return p - s; }
size_t strnlen(const char *s, size_t n) { size_t i = 0; while (i < n && s[i]) i++; return i; }
int strcmp(const char *a, const char *b) {
    while (*a && *a == *b) { a++; b++; }
    return (unsigned char)*a - (unsigned char)*b;
}
int strncmp(const char *a, const char *b, size_t n) {
    for (; n; n--, a++, b++) { if (*a != *b) return (unsigned char)*a - (unsigned char)*b; if (!*a) break; }
    return 0;
}
int strcoll(const char *a, const char *b) { return strcmp(a, b); }
int strcasecmp(const char *a, const char *b) {
    while (*a && tolower(*a) == tolower(*b)) { a++; b++; }
    return tolower((unsigned char)*a) - tolower((unsigned char)*b);
}
int strncasecmp(const char *a, const char *b, size_t n) {
    for (; n; n--, a++, b++) { int d = tolower((unsigned char)*a) - tolower((unsigned char)*b); if (d || !*a) return d; }
    return 0;
}
char *strcpy(char *restrict d, const char *restrict s) { char *r = d; while ((*d++ = *s++)); return r; }
char *strncpy(char *restrict d, const char *restrict s, size_t n) {
    size_t i = 0;
    for (; i < n && s[i]; i++) d[i] = s[i];
    for (; i < n; i++) d[i] = 0;
    return d;
}
char *strcat(char *restrict d, const char *restrict s) { strcpy(d + strlen(d), s); return d; }
char *strncat(char *restrict d, const char *restrict s, size_t n) {
    char *e = d + strlen(d);
    while (n-- && *s) *e++ = *s++;
    *e = 0;
    return d;
}
char *strchr(const char *s, int c) {
    for (;; s++) { if (*s == (char)c) return (char *)s; if (!*s) return 0; }
}
char *strrchr(const char *s, int c) {
    const char *r = 0;
    for (;; s++) { if (*s == (char)c) r = s; if (!*s) return (char *)r; }
}
char *strstr(const char *h, const char *n) {
    size_t l = strlen(n);
    for (; *h; h++) if (!strncmp(h, n, l)) return (char *)h;
    return l ? 0 : (char *)h;
}
size_t strspn(const char *s, const char *a) { size_t i = 0; while (s[i] && strchr(a, s[i])) i++; return i; }
size_t strcspn(const char *s, const char *r) { size_t i = 0; while (s[i] && !strchr(r, s[i])) i++; return i; }
char *strpbrk(const char *s, const char *a) { s += strcspn(s, a); return *s ? (char *)s : 0; }
char *strdup(const char *s) { size_t n = strlen(s) + 1; char *d = malloc(n); return d ? memcpy(d, s, n) : 0; }
char *strtok(char *restrict s, const char *restrict d) {
    static char *save;
    if (!s) s = save;
    if (!s) return 0;
    s += strspn(s, d);
    if (!*s) { save = 0; return 0; }
    char *e = s + strcspn(s, d);
    if (*e) { *e = 0; save = e + 1; } else save = 0;
    return s;
}
char *strerror(int e) { return e == ENOENT ? "No such file or directory" : e == ENOMEM ? "Out of memory" : "Error"; }

/* ---------------------------------------------------------------- malloc */
/* Size classes: multiples of 16 up to 1 KiB, then powers of two.  The 16-byte
   header keeps the class so free() and realloc() need no search. */
#define NCLASS 96
static void *free_list[NCLASS];
static unsigned char *heap_cur, *heap_end;

static int size_class(size_t n, size_t *rounded) {
    if (n <= 1024) { size_t r = (n + 15) & ~(size_t)15; if (!r) r = 16; *rounded = r; return r / 16 - 1; }
    int b = 64 - __builtin_clzl(n - 1);
    *rounded = (size_t)1 << b;
    return 64 + b - 11;
}
void *malloc(size_t n) {
    size_t r;
    if (n > ((size_t)1 << 40)) { errno = ENOMEM; return 0; }
    int c = size_class(n, &r);
    if (free_list[c]) { void *p = free_list[c]; free_list[c] = *(void **)p; return p; }
    if (!heap_cur) { heap_cur = (unsigned char *)sfi_host_heap(0); heap_end = (unsigned char *)sfi_host_heap(1); }
    if ((size_t)(heap_end - heap_cur) < r + 16) { errno = ENOMEM; return 0; }
    unsigned char *p = heap_cur;
    heap_cur += r + 16;
    *(size_t *)p = c;
    return p + 16;
}
void free(void *p) {
    if (!p) return;
    size_t c = *(size_t *)((unsigned char *)p - 16);
    *(void **)p = free_list[c];
    free_list[c] = p;
}
static size_t class_size(size_t c) { return c < 64 ? (c + 1) * 16 : (size_t)1 << (c - 64 + 11); }
void *calloc(size_t n, size_t m) {
    if (m && n > SIZE_MAX / m) return 0;
    void *p = malloc(n * m);
    return p ? memset(p, 0, n * m) : 0;
}
void *realloc(void *p, size_t n) {
    if (!p) return malloc(n);
    size_t have = class_size(*(size_t *)((unsigned char *)p - 16));
    if (n <= have) return p;
    void *q = malloc(n);
    if (q) { memcpy(q, p, have); free(p); }
    return q;
}

/* ---------------------------------------------------------------- stdio */
struct sfi_file { int fd, mode, err, eof, unget; unsigned char *buf; size_t len, pos; };
static unsigned char out_buf[2][BUFSIZ];
static FILE files[3] = {{0, 'r', 0, 0, -1, 0, 0, 0}, {1, 'w', 0, 0, -1, out_buf[0], 0, 0}, {2, 'w', 0, 0, -1, out_buf[1], 0, 0}};
FILE *stdin = &files[0], *stdout = &files[1], *stderr = &files[2];

static int flush_out(FILE *f) {
    size_t off = 0;
    while (off < f->len) {
        long w = sfi_host_write(f->fd, f->buf + off, f->len - off);
        if (w <= 0) { f->err = 1; f->len = 0; return EOF; }
        off += w;
    }
    f->len = 0;
    return 0;
}
int fflush(FILE *f) {
    if (!f) { flush_out(stdout); flush_out(stderr); return 0; }
    return f->mode == 'w' ? flush_out(f) : 0;
}
static int fill_in(FILE *f) {
    if (!f->buf) { f->buf = malloc(BUFSIZ); if (!f->buf) return EOF; }
    long r = sfi_host_read(f->fd, f->buf, BUFSIZ);
    if (r <= 0) { if (r < 0) f->err = 1; else f->eof = 1; return EOF; }
    f->len = r; f->pos = 0;
    return 0;
}
size_t fwrite(const void *restrict p, size_t s, size_t n, FILE *restrict f) {
    size_t total = s * n;
    const unsigned char *c = p;
    if (f->mode != 'w') { f->err = 1; return 0; }
    if (total >= BUFSIZ) {
        if (flush_out(f)) return 0;
        size_t off = 0;
        while (off < total) { long w = sfi_host_write(f->fd, c + off, total - off); if (w <= 0) { f->err = 1; return off / (s ? s : 1); } off += w; }
        return n;
    }
    if (f->len + total > BUFSIZ && flush_out(f)) return 0;
    memcpy(f->buf + f->len, c, total);
    f->len += total;
    if (f == stderr) flush_out(f);
    return n;
}
int fputc(int c, FILE *f) { unsigned char b = c; return fwrite(&b, 1, 1, f) == 1 ? b : EOF; }
int putc(int c, FILE *f) { return fputc(c, f); }
int putchar(int c) { return fputc(c, stdout); }
int fputs(const char *restrict s, FILE *restrict f) { size_t n = strlen(s); return fwrite(s, 1, n, f) == n ? 0 : EOF; }
int puts(const char *s) { return fputs(s, stdout) == EOF || putchar('\n') == EOF ? EOF : 0; }
int fgetc(FILE *f) {
    if (f->unget >= 0) { int c = f->unget; f->unget = -1; return c; }
    if (f->pos >= f->len && fill_in(f)) return EOF;
    return f->buf[f->pos++];
}
int getc(FILE *f) { return fgetc(f); }
int getchar(void) { return fgetc(stdin); }
int ungetc(int c, FILE *f) { if (c == EOF) return EOF; f->unget = (unsigned char)c; f->eof = 0; return c; }
size_t fread(void *restrict p, size_t s, size_t n, FILE *restrict f) {
    size_t total = s * n, got = 0;
    unsigned char *d = p;
    if (!total) return 0;
    if (f->unget >= 0) { d[got++] = f->unget; f->unget = -1; }
    while (got < total) {
        if (f->pos < f->len) {
            size_t k = f->len - f->pos; if (k > total - got) k = total - got;
            memcpy(d + got, f->buf + f->pos, k); f->pos += k; got += k;
        } else if (total - got >= BUFSIZ) {
            long r = sfi_host_read(f->fd, d + got, total - got);
            if (r <= 0) { if (r < 0) f->err = 1; else f->eof = 1; break; }
            got += r;
        } else if (fill_in(f)) break;
    }
    return got / s;
}
char *fgets(char *restrict s, int n, FILE *restrict f) {
    int i = 0;
    while (i < n - 1) { int c = fgetc(f); if (c == EOF) break; s[i++] = c; if (c == '\n') break; }
    if (!i) return 0;
    s[i] = 0;
    return s;
}
FILE *fopen(const char *restrict path, const char *restrict mode) {
    if (mode[0] != 'r') { errno = EACCES; return 0; }
    long fd = sfi_host_open(path, 0);
    if (fd < 0) { errno = -fd; return 0; }
    FILE *f = calloc(1, sizeof *f);
    if (!f) return 0;
    f->fd = fd; f->mode = 'r'; f->unget = -1;
    return f;
}
FILE *freopen(const char *restrict p, const char *restrict m, FILE *restrict f) { (void)p; (void)m; (void)f; return 0; }
int fclose(FILE *f) {
    fflush(f);
    if (f->fd > 2) sfi_host_close(f->fd);
    if (f >= files && f < files + 3) return 0;
    free(f->buf); free(f);
    return 0;
}
int feof(FILE *f) { return f->eof; }
int ferror(FILE *f) { return f->err; }
void clearerr(FILE *f) { f->eof = f->err = 0; }
int fseek(FILE *f, long o, int w) {
    if (f->mode == 'w') flush_out(f);
    if (w == SEEK_CUR && f->mode == 'r') o -= (long)(f->len - f->pos) + (f->unget >= 0);
    f->len = f->pos = 0; f->unget = -1; f->eof = 0;
    return sfi_host_lseek(f->fd, o, w) < 0 ? -1 : 0;
}
long ftell(FILE *f) {
    long p = sfi_host_lseek(f->fd, 0, SEEK_CUR);
    if (p < 0) return -1;
    return f->mode == 'r' ? p - (long)(f->len - f->pos) - (f->unget >= 0) : p + (long)f->len;
}
void rewind(FILE *f) { fseek(f, 0, SEEK_SET); f->err = 0; }
int setvbuf(FILE *restrict f, char *restrict b, int m, size_t s) { (void)f; (void)b; (void)m; (void)s; return 0; }
int remove(const char *p) { (void)p; return -1; }
int unlink(const char *p) { (void)p; errno = EACCES; return -1; }
pid_t getpid(void) { return 1; }
int rename(const char *a, const char *b) { (void)a; (void)b; return -1; }
FILE *tmpfile(void) { return 0; }
char *tmpnam(char *s) { (void)s; return 0; }
void perror(const char *s) { if (s && *s) fprintf(stderr, "%s: ", s); fprintf(stderr, "%s\n", strerror(errno)); }

ssize_t read(int fd, void *b, size_t n) { long r = sfi_host_read(fd, b, n); if (r < 0) { errno = -r; return -1; } return r; }
ssize_t write(int fd, const void *b, size_t n) { long r = sfi_host_write(fd, b, n); if (r < 0) { errno = -r; return -1; } return r; }
int close(int fd) { return sfi_host_close(fd); }
off_t lseek(int fd, off_t o, int w) { return sfi_host_lseek(fd, o, w); }
int open(const char *p, int f, ...) { if (f & 3) { errno = EACCES; return -1; } long r = sfi_host_open(p, 0); if (r < 0) { errno = -r; return -1; } return r; }
int isatty(int fd) { (void)fd; return 0; }

/* ---------------------------------------------------------------- printf */
struct out { char *buf; size_t cap, len; FILE *f; };
static void out_ch(struct out *o, char c) {
    if (o->f) { fputc(c, o->f); o->len++; return; }
    if (o->len + 1 < o->cap) o->buf[o->len] = c;
    o->len++;
}
static void out_pad(struct out *o, char c, int n) { while (n-- > 0) out_ch(o, c); }

/* Formats |v| in %e / %f style with prec digits (deterministic, not always
   correctly rounded in the last place). */
static int fmt_double(char *s, double v, int prec, char kind, int alt) {
    char *p = s;
    if (isnan(v)) return strcpy(s, "nan"), 3;
    if (isinf(v)) return strcpy(s, "inf"), 3;
    if (prec > 40) prec = 40;
    int g = kind == 'g' || kind == 'G';
    if (g && prec == 0) prec = 1;
    int e10 = 0;
    if (v != 0) {
        e10 = (int)floor(log10(v));
        double t = v / pow(10, e10);
        if (t >= 10) e10++;
        else if (t < 1) e10--;
    }
    int use_e = kind == 'e' || kind == 'E' || (g && (e10 < -4 || e10 >= prec));
    int digits = use_e ? prec + 1 : (g ? prec - e10 - 1 : prec) + (e10 >= 0 ? e10 + 1 : 1);
    int frac = use_e ? prec : (g ? prec - 1 - e10 : prec);
    if (g && use_e) { frac = prec - 1; digits = prec; }
    if (frac < 0) frac = 0;
    /* scale to an integer with `frac` fractional digits and round */
    double sc = use_e ? v / pow(10, e10) * pow(10, frac) : v * pow(10, frac);
    char tmp[80]; int k = 0;
    if (digits > 60 || sc >= 1.8e19) {   /* beyond 64-bit digits: exponent form */
        if (use_e) { frac = 17; sc = v / pow(10, e10) * 1e17; } else return fmt_double(s, v, prec > 17 ? 17 : prec, 'e', alt);
    }
    unsigned long n = (unsigned long)(sc + 0.5);
    do { tmp[k++] = '0' + (int)(n % 10); n /= 10; } while (n);
    if (use_e && k > frac + 1) { e10++; k--; memmove(tmp, tmp + 1, k); } /* 9.99 rounded to 10.0 */
    while (k <= frac) tmp[k++] = '0';
    for (int i = k - 1; i >= frac; i--) *p++ = tmp[i];
    char *dot = p;
    if (frac) { *p++ = '.'; for (int i = frac - 1; i >= 0; i--) *p++ = tmp[i]; }
    if (g && !alt && frac) { while (p[-1] == '0') p--; if (p[-1] == '.') p--; }
    (void)dot;
    if (use_e) {
        *p++ = kind == 'E' || kind == 'G' ? 'E' : 'e';
        *p++ = e10 < 0 ? '-' : '+';
        int a = e10 < 0 ? -e10 : e10;
        if (a >= 100) *p++ = '0' + a / 100;
        *p++ = '0' + a / 10 % 10; *p++ = '0' + a % 10;
    }
    *p = 0;
    return p - s;
}

static int do_format(struct out *o, const char *fmt, va_list ap) {
    for (; *fmt; fmt++) {
        if (*fmt != '%') { out_ch(o, *fmt); continue; }
        int left = 0, zero = 0, plus = 0, space = 0, alt = 0, width = 0, prec = -1, lng = 0;
        for (;; fmt++) {
            if (fmt[1] == '-') left = 1; else if (fmt[1] == '0') zero = 1; else if (fmt[1] == '+') plus = 1;
            else if (fmt[1] == ' ') space = 1; else if (fmt[1] == '#') alt = 1; else break;
        }
        fmt++;
        if (*fmt == '*') { width = va_arg(ap, int); if (width < 0) { left = 1; width = -width; } fmt++; }
        else while (isdigit(*fmt)) width = width * 10 + *fmt++ - '0';
        if (*fmt == '.') {
            fmt++; prec = 0;
            if (*fmt == '*') { prec = va_arg(ap, int); fmt++; }
            else while (isdigit(*fmt)) prec = prec * 10 + *fmt++ - '0';
        }
        for (;; fmt++) {
            if (*fmt == 'l' || *fmt == 'z' || *fmt == 'j' || *fmt == 't' || *fmt == 'q') lng = 1;
            else if (*fmt == 'L') lng = 2;
            else if (*fmt != 'h') break;
        }
        char buf[96], *s = buf; int n = 0; char sign = 0;
        switch (*fmt) {
        case 'd': case 'i': {
            long v = lng ? va_arg(ap, long) : va_arg(ap, int);
            unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;
            sign = v < 0 ? '-' : plus ? '+' : space ? ' ' : 0;
            char t[24]; int k = 0;
            do { t[k++] = '0' + u % 10; u /= 10; } while (u);
            while (k < prec) t[k++] = '0';
            while (k) buf[n++] = t[--k];
            break;
        }
        case 'u': case 'x': case 'X': case 'o': case 'p': {
            unsigned long u = *fmt == 'p' ? (unsigned long)va_arg(ap, void *) : lng ? va_arg(ap, unsigned long) : va_arg(ap, unsigned);
            int base = *fmt == 'o' ? 8 : *fmt == 'u' ? 10 : 16;
            const char *dig = *fmt == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
            char t[24]; int k = 0;
            do { t[k++] = dig[u % base]; u /= base; } while (u);
            while (k < prec) t[k++] = '0';
            if ((alt && base == 16) || *fmt == 'p') { buf[n++] = '0'; buf[n++] = 'x'; }
            while (k) buf[n++] = t[--k];
            break;
        }
        case 'c': buf[n++] = (char)va_arg(ap, int); break;
        case 's': s = va_arg(ap, char *); if (!s) s = "(null)"; n = prec >= 0 ? (int)strnlen(s, prec) : (int)strlen(s); break;
        case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': {
            double v = va_arg(ap, double);  /* long double arguments are not supported */
            sign = signbit(v) ? '-' : plus ? '+' : space ? ' ' : 0;
            n = fmt_double(buf, fabs(v), prec < 0 ? 6 : prec, *fmt == 'a' ? 'g' : *fmt, alt);
            break;
        }
        case 'n': *va_arg(ap, int *) = (int)o->len; continue;
        case '%': buf[n++] = '%'; break;
        default: out_ch(o, '%'); out_ch(o, *fmt); continue;
        }
        int total = n + (sign != 0);
        if (!left && !(zero && *fmt != 's' && *fmt != 'c')) out_pad(o, ' ', width - total);
        if (sign) out_ch(o, sign);
        if (!left && zero && *fmt != 's' && *fmt != 'c') out_pad(o, '0', width - total);
        for (int i = 0; i < n; i++) out_ch(o, s[i]);
        if (left) out_pad(o, ' ', width - total);
    }
    return (int)o->len;
}
int vsnprintf(char *restrict s, size_t n, const char *restrict fmt, va_list a) {
    struct out o = {s, n, 0, 0};
    do_format(&o, fmt, a);
    if (n) s[o.len < n ? o.len : n - 1] = 0;
    return (int)o.len;
}
int vsprintf(char *restrict s, const char *restrict fmt, va_list a) { return vsnprintf(s, SIZE_MAX / 2, fmt, a); }
int vfprintf(FILE *restrict f, const char *restrict fmt, va_list a) { struct out o = {0, 0, 0, f}; return do_format(&o, fmt, a); }
int vprintf(const char *restrict fmt, va_list a) { return vfprintf(stdout, fmt, a); }
int printf(const char *restrict fmt, ...) { va_list a; va_start(a, fmt); int r = vfprintf(stdout, fmt, a); va_end(a); return r; }
int fprintf(FILE *restrict f, const char *restrict fmt, ...) { va_list a; va_start(a, fmt); int r = vfprintf(f, fmt, a); va_end(a); return r; }
int sprintf(char *restrict s, const char *restrict fmt, ...) { va_list a; va_start(a, fmt); int r = vsprintf(s, fmt, a); va_end(a); return r; }
int snprintf(char *restrict s, size_t n, const char *restrict fmt, ...) { va_list a; va_start(a, fmt); int r = vsnprintf(s, n, fmt, a); va_end(a); return r; }
int sscanf(const char *restrict s, const char *restrict fmt, ...) {
    /* Only %d, %ld, %u, %x, %s and literals: what the programs here need. */
    va_list a; va_start(a, fmt);
    int count = 0;
    for (; *fmt; fmt++) {
        if (isspace(*fmt)) { while (isspace(*s)) s++; continue; }
        if (*fmt != '%') { if (*s != *fmt) break; s++; continue; }
        fmt++;
        int lng = 0, width = 0;
        while (*fmt >= '0' && *fmt <= '9') width = width * 10 + *fmt++ - '0';
        while (*fmt == 'l') { lng = 1; fmt++; }
        char *e;
        while (isspace(*s)) s++;
        if (*fmt == 'd' || *fmt == 'u' || *fmt == 'x') {
            long v = strtol(s, &e, *fmt == 'x' ? 16 : 10);
            if (e == s) break;
            if (lng) *va_arg(a, long *) = v; else *va_arg(a, int *) = (int)v;
            s = e; count++;
        } else if (*fmt == 's') {
            char *d = va_arg(a, char *);
            if (!*s) break;
            int k = 0;
            while (*s && !isspace(*s) && (!width || k < width)) { *d++ = *s++; k++; }
            *d = 0; count++;
        } else break;
    }
    va_end(a);
    return count;
}

/* ---------------------------------------------------------------- stdlib */
static void (*exit_fns[32])(void);
static int n_exit_fns;
int atexit(void (*f)(void)) { if (n_exit_fns == 32) return -1; exit_fns[n_exit_fns++] = f; return 0; }
_Noreturn void exit(int c) {
    while (n_exit_fns) exit_fns[--n_exit_fns]();
    fflush(0);
    sfi_host_exit(c);
}
_Noreturn void _Exit(int c) { sfi_host_exit(c); }
_Noreturn void abort(void) { fflush(0); sfi_host_exit(134); }
void __sfi_assert_fail(const char *e, const char *f, int l) { fprintf(stderr, "%s:%d: assertion failed: %s\n", f, l, e); abort(); }

unsigned long long strtoull(const char *restrict s, char **restrict end, int base) {
    const char *p = s; int neg = 0;
    while (isspace(*p)) p++;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    if ((base == 0 || base == 16) && p[0] == '0' && (p[1] | 32) == 'x' && isxdigit(p[2])) { p += 2; base = 16; }
    else if (base == 0) base = *p == '0' ? 8 : 10;
    unsigned long long v = 0; const char *start = p;
    for (;; p++) {
        int d = isdigit(*p) ? *p - '0' : isalpha(*p) ? (*p | 32) - 'a' + 10 : 99;
        if (d >= base) break;
        v = v * base + d;
    }
    if (end) *end = (char *)(p == start ? s : p);
    return neg ? -v : v;
}
long long strtoll(const char *restrict s, char **restrict e, int b) { return (long long)strtoull(s, e, b); }
unsigned long strtoul(const char *restrict s, char **restrict e, int b) { return strtoull(s, e, b); }
long strtol(const char *restrict s, char **restrict e, int b) { return (long)strtoull(s, e, b); }
int atoi(const char *s) { return (int)strtol(s, 0, 10); }
long atol(const char *s) { return strtol(s, 0, 10); }
double strtod(const char *restrict s, char **restrict end) {
    const char *p = s; int neg = 0;
    while (isspace(*p)) p++;
    if (*p == '-' || *p == '+') neg = *p++ == '-';
    if (!strncasecmp(p, "inf", 3)) { if (end) *end = (char *)p + 3; return neg ? -INFINITY : INFINITY; }
    if (!strncasecmp(p, "nan", 3)) { if (end) *end = (char *)p + 3; return NAN; }
    if (p[0] == '0' && (p[1] | 32) == 'x') {
        char *e; double v = (double)strtoull(p, &e, 16);
        if (end) *end = e;
        return neg ? -v : v;
    }
    double v = 0; int digits = 0, e10 = 0;
    for (; isdigit(*p); p++, digits++) v = v * 10 + (*p - '0');
    if (*p == '.') for (p++; isdigit(*p); p++, digits++) { v = v * 10 + (*p - '0'); e10--; }
    if (!digits) { if (end) *end = (char *)s; return 0; }
    if ((*p | 32) == 'e' && (isdigit(p[1]) || ((p[1] == '-' || p[1] == '+') && isdigit(p[2])))) {
        char *e; e10 += (int)strtol(p + 1, &e, 10); p = e;
    }
    if (end) *end = (char *)p;
    v = e10 < 0 ? v / pow(10, -e10) : v * pow(10, e10);
    return neg ? -(double)v : (double)v;
}
float strtof(const char *restrict s, char **restrict e) { return (float)strtod(s, e); }
double atof(const char *s) { return strtod(s, 0); }
static void swap_bytes(char *a, char *b, size_t w) { while (w--) { char t = *a; *a++ = *b; *b++ = t; } }
void qsort(void *base, size_t n, size_t w, int (*cmp)(const void *, const void *)) {
    /* shell sort: small, no recursion, deterministic */
    char *b = base;
    for (size_t gap = n / 2; gap; gap = gap == 2 ? 1 : gap * 5 / 11)
        for (size_t i = gap; i < n; i++)
            for (size_t j = i; j >= gap && cmp(b + (j - gap) * w, b + j * w) > 0; j -= gap)
                swap_bytes(b + (j - gap) * w, b + j * w, w);
}
void *bsearch(const void *k, const void *base, size_t n, size_t w, int (*cmp)(const void *, const void *)) {
    const char *b = base;
    while (n) { const char *m = b + (n / 2) * w; int c = cmp(k, m); if (!c) return (void *)m; if (c > 0) { b = m + w; n -= n / 2 + 1; } else n /= 2; }
    return 0;
}
int abs(int x) { return x < 0 ? -x : x; }
long labs(long x) { return x < 0 ? -x : x; }
long long llabs(long long x) { return x < 0 ? -x : x; }
static unsigned long rand_state = 1;
int rand(void) { rand_state = rand_state * 6364136223846793005ul + 1442695040888963407ul; return (int)(rand_state >> 33); }
void srand(unsigned s) { rand_state = s; }
char *getenv(const char *n) { (void)n; return 0; }
int system(const char *c) { (void)c; return -1; }
time_t time(time_t *t) { time_t v = (time_t)(sfi_host_clock() / 1000000000ul); if (t) *t = v; return v; }
clock_t clock(void) { return (clock_t)(sfi_host_clock() / 1000); }
int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    (void)tz; unsigned long ns = sfi_host_clock(); tv->tv_sec = (long)(ns / 1000000000ul); tv->tv_usec = (long)(ns / 1000 % 1000000); return 0;
}
double difftime(time_t a, time_t b) { return (double)(a - b); }
/* Civil dates from days since 1970-01-01 and back (proleptic Gregorian, UTC). */
static struct tm tm_buf;
struct tm *gmtime(const time_t *t) {
    long s = *t, days = s / 86400, rem = s % 86400;
    if (rem < 0) { rem += 86400; days--; }
    tm_buf.tm_hour = (int)(rem / 3600); tm_buf.tm_min = (int)(rem / 60 % 60); tm_buf.tm_sec = (int)(rem % 60);
    tm_buf.tm_wday = (int)(((days % 7) + 11) % 7);  /* 1970-01-01 was a Thursday */
    long z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097, doe = z - era * 146097;
    long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365, doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    long mp = (5 * doy + 2) / 153, d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9, y = yoe + era * 400 + (m <= 2);
    tm_buf.tm_year = (int)(y - 1900); tm_buf.tm_mon = (int)(m - 1); tm_buf.tm_mday = (int)d;
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    static const short cum[12] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    tm_buf.tm_yday = cum[m - 1] + (int)d - 1 + (leap && m > 2);
    tm_buf.tm_isdst = 0;
    return &tm_buf;
}
struct tm *localtime(const time_t *t) { return gmtime(t); }
time_t mktime(struct tm *tm) {
    long y = tm->tm_year + 1900L, m = tm->tm_mon;
    y += m / 12; m %= 12; if (m < 0) { m += 12; y--; }
    m += 1;
    y -= m <= 2;
    long era = (y >= 0 ? y : y - 399) / 400, yoe = y - era * 400;
    long doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + tm->tm_mday - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    time_t t = (era * 146097 + doe - 719468) * 86400 + tm->tm_hour * 3600L + tm->tm_min * 60L + tm->tm_sec;
    *tm = *gmtime(&t);
    return t;
}
static char dot[] = ".";
static struct lconv lc = {dot};
struct lconv *localeconv(void) { return &lc; }
char *setlocale(int c, const char *l) { (void)c; (void)l; return "C"; }

/* ---------------------------------------------------------------- math */
double fabs(double x) { return __builtin_fabs(x); }
float fabsf(float x) { return __builtin_fabsf(x); }
double sqrt(double x) { double r; __asm__("sqrtsd %1, %0" : "=x"(r) : "x"(x)); return r; }
float sqrtf(float x) { float r; __asm__("sqrtss %1, %0" : "=x"(r) : "x"(x)); return r; }
double trunc(double x) { return fabs(x) < 4503599627370496.0 ? (double)(long)x : x; }
double floor(double x) { double t = trunc(x); return t > x ? t - 1 : t; }
float floorf(float x) { return (float)floor(x); }
double ceil(double x) { double t = trunc(x); return t < x ? t + 1 : t; }
double round(double x) { return x < 0 ? -floor(-x + 0.5) : floor(x + 0.5); }
double modf(double x, double *i) { *i = trunc(x); return x - *i; }
double fmod(double x, double y) {
    if (y == 0 || isinf(x) || isnan(x) || isnan(y)) return NAN;
    double a = fabs(x), b = fabs(y);
    while (a >= b) { double t = b; while (t * 2 <= a) t *= 2; a -= t; }
    return x < 0 ? -(double)a : (double)a;
}
double frexp(double x, int *e) {
    if (x == 0 || isnan(x) || isinf(x)) { *e = 0; return x; }
    union { double d; uint64_t u; } v = {x};
    int ex = (v.u >> 52) & 0x7ff;
    if (!ex) { v.d *= 18014398509481984.0; ex = ((v.u >> 52) & 0x7ff) - 54; }
    *e = ex - 1022;
    v.u = (v.u & ~(0x7ffull << 52)) | (1022ull << 52);
    return v.d;
}
double ldexp(double x, int e) {
    while (e > 1000) { x *= 0x1p1000; e -= 1000; }
    while (e < -1000) { x *= 0x1p-1000; e += 1000; }
    union { double d; uint64_t u; } v = {1.0};
    v.u = (uint64_t)(e + 1023) << 52;
    return x * v.d;
}
double exp(double x) {
    if (isnan(x)) return x;
    if (x > 709.8) return INFINITY;
    if (x < -745) return 0;
    int k = (int)floor(x / 0.69314718055994530942 + 0.5);
    double r = x - k * 0.69314718055994530942, s = 1, t = 1;
    for (int i = 1; i < 30; i++) { t *= r / i; s += t; }
    return ldexp((double)s, k);
}
double log(double x) {
    if (x < 0 || isnan(x)) return NAN;
    if (x == 0) return -INFINITY;
    if (isinf(x)) return x;
    int e; double m = frexp(x, &e);
    if (m < 0.70710678118654752) { m *= 2; e--; }
    double z = (m - 1) / (m + 1), z2 = z * z, s = 0, t = z;
    for (int i = 1; i < 60; i += 2) { s += t / i; t *= z2; }
    return 2 * s + e * 0.69314718055994530942;
}
double log2(double x) { return log(x) / 0.69314718055994530942; }
double log10(double x) { return log(x) / 2.30258509299404568402; }
double pow(double x, double y) {
    if (y == 0) return 1;
    if (isnan(x) || isnan(y)) return NAN;
    if (y == trunc(y) && fabs(y) < 1e18) {
        long n = (long)y; double r = 1, b = x; unsigned long u = n < 0 ? -(unsigned long)n : (unsigned long)n;
        while (u) { if (u & 1) r *= b; b *= b; u >>= 1; }
        return n < 0 ? 1 / r : r;
    }
    if (x < 0) return NAN;
    if (x == 0) return y > 0 ? 0 : INFINITY;
    return exp(y * log(x));
}
static double sin_poly(double x) {   /* |x| <= pi/4 */
    double x2 = x * x, t = x, s = x;
    for (int i = 1; i < 14; i++) { t *= -x2 / ((2 * i) * (2 * i + 1)); s += t; }
    return s;
}
static double cos_poly(double x) {
    double x2 = x * x, t = 1, s = 1;
    for (int i = 1; i < 14; i++) { t *= -x2 / ((2 * i - 1) * (2 * i)); s += t; }
    return s;
}
double sin(double x) {
    if (isnan(x) || isinf(x)) return NAN;
    double q = floor(x / 1.57079632679489661923 + 0.5);
    double r = (x - q * 1.5707963267948966) - q * 6.123233995736766e-17;
    long k = (long)q & 3;
    return k == 0 ? sin_poly(r) : k == 1 ? cos_poly(r) : k == 2 ? -sin_poly(r) : -cos_poly(r);
}
double cos(double x) { return sin(x + 1.57079632679489661923); }
double tan(double x) { return sin(x) / cos(x); }
double atan(double x) {
    if (isnan(x)) return x;
    int inv = fabs(x) > 1; double z = inv ? 1 / x : x;
    /* reduce: atan(z) = 2 atan(z / (1 + sqrt(1 + z^2))) twice */
    double r = z / (1 + sqrt(1 + z * z)); r = r / (1 + sqrt(1 + r * r));
    double r2 = r * r, t = r, s = 0;
    for (int i = 1; i < 40; i += 2) { s += t / i; t *= -r2; }
    s *= 4;
    if (inv) s = (x > 0 ? 1.57079632679489661923 : -1.57079632679489661923) - s;
    return s;
}
double atan2(double y, double x) {
    if (x > 0) return atan(y / x);
    if (x < 0) return atan(y / x) + (y >= 0 ? M_PI : -M_PI);
    return y > 0 ? M_PI / 2 : y < 0 ? -M_PI / 2 : 0;
}
double asin(double x) { return atan2(x, sqrt(1 - x * x)); }
double acos(double x) { return atan2(sqrt(1 - x * x), x); }
float sinf(float x) { return (float)sin(x); }
float cosf(float x) { return (float)cos(x); }
void sincos(double x, double *s, double *c) { *s = sin(x); *c = cos(x); }
void sincosf(float x, float *s, float *c) { *s = (float)sin(x); *c = (float)cos(x); }
