#ifndef _STDIO_H
#define _STDIO_H
#include <stddef.h>
#include <stdarg.h>
#define EOF (-1)
#define BUFSIZ 8192
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
#define L_tmpnam 32
#define _IOFBF 0
#define _IOLBF 1
#define _IONBF 2
typedef struct sfi_file FILE;
typedef long fpos_t;
extern FILE *stdin, *stdout, *stderr;
FILE *fopen(const char *restrict p, const char *restrict m);
FILE *freopen(const char *restrict p, const char *restrict m, FILE *restrict f);
int fclose(FILE *f);
size_t fread(void *restrict p, size_t s, size_t n, FILE *restrict f);
size_t fwrite(const void *restrict p, size_t s, size_t n, FILE *restrict f);
int fgetc(FILE *f);
int getc(FILE *f);
int getchar(void);
int ungetc(int c, FILE *f);
char *fgets(char *restrict s, int n, FILE *restrict f);
int fputc(int c, FILE *f);
int putc(int c, FILE *f);
int putchar(int c);
int fputs(const char *restrict s, FILE *restrict f);
int puts(const char *s);
int fflush(FILE *f);
int feof(FILE *f);
int ferror(FILE *f);
void clearerr(FILE *f);
int fseek(FILE *f, long o, int w);
long ftell(FILE *f);
void rewind(FILE *f);
int setvbuf(FILE *restrict f, char *restrict b, int m, size_t s);
int printf(const char *restrict fmt, ...);
int fprintf(FILE *restrict f, const char *restrict fmt, ...);
int sprintf(char *restrict s, const char *restrict fmt, ...);
int snprintf(char *restrict s, size_t n, const char *restrict fmt, ...);
int vprintf(const char *restrict fmt, va_list a);
int vfprintf(FILE *restrict f, const char *restrict fmt, va_list a);
int vsprintf(char *restrict s, const char *restrict fmt, va_list a);
int vsnprintf(char *restrict s, size_t n, const char *restrict fmt, va_list a);
int sscanf(const char *restrict s, const char *restrict fmt, ...);
void perror(const char *s);
int remove(const char *p);
int rename(const char *a, const char *b);
FILE *tmpfile(void);
char *tmpnam(char *s);
#endif
