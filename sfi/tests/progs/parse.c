/* A recursive-descent parser and evaluator for a small expression language
   with variables in a hash table, string handling and realloc'd buffers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
struct var { char *name; long value; struct var *next; };
static struct var *table[64];
static const char *p;
static unsigned hash(const char *s) { unsigned h = 5381; while (*s) h = h * 33 ^ (unsigned char)*s++; return h & 63; }
static struct var *lookup(const char *n, int create) {
    for (struct var *v = table[hash(n)]; v; v = v->next) if (!strcmp(v->name, n)) return v;
    if (!create) return 0;
    struct var *v = malloc(sizeof *v); v->name = strdup(n); v->value = 0; v->next = table[hash(n)]; table[hash(n)] = v;
    return v;
}
static void skip(void) { while (isspace(*p)) p++; }
static long expr(void);
static long primary(void) {
    skip();
    if (*p == '(') { p++; long v = expr(); skip(); p++; return v; }
    if (*p == '-') { p++; return -primary(); }
    if (isdigit(*p)) return strtol(p, (char **)&p, 0);
    char name[32]; int n = 0;
    while (isalnum(*p) && n < 31) name[n++] = *p++;
    name[n] = 0;
    struct var *v = lookup(name, 0);
    return v ? v->value : 0;
}
static long term(void) { long v = primary(); for (;;) { skip(); if (*p == '*') { p++; v *= primary(); } else if (*p == '/') { p++; long d = primary(); v = d ? v / d : 0; } else if (*p == '%') { p++; long d = primary(); v = d ? v % d : 0; } else return v; } }
static long expr(void) { long v = term(); for (;;) { skip(); if (*p == '+') { p++; v += term(); } else if (*p == '-') { p++; v -= term(); } else return v; } }
int main(void) {
    char *src = 0; size_t len = 0, cap = 0;
    for (int i = 0; i < 3000; i++) {
        char line[128];
        int n = snprintf(line, sizeof line, "v%d = (v%d * %d + %d) %% 100003 - (v%d / 3)\n", i % 97, (i * 7) % 97, i % 13 + 1, i, (i * 3) % 97);
        if (len + n + 1 > cap) { cap = cap ? cap * 2 : 256; src = realloc(src, cap); }
        memcpy(src + len, line, n + 1); len += n;
    }
    long total = 0; int lines = 0;
    for (int pass = 0; pass < 5; pass++) {
        char *copy = strdup(src);
        for (char *ln = strtok(copy, "\n"); ln; ln = strtok(0, "\n")) {
            char *eq = strchr(ln, '=');
            *eq = 0;
            char name[32]; sscanf(ln, "%31s", name);
            p = eq + 1;
            long v = expr();
            lookup(name, 1)->value = v; total += v; lines++;
        }
        free(copy);
    }
    printf("lines %d total %ld v0 %ld v96 %ld\n", lines, total, lookup("v0", 0)->value, lookup("v96", 0)->value);
    char words[] = "the quick brown fox jumps over the lazy dog";
    int counts[26] = {0};
    for (char *w = words; *w; w++) if (isalpha(*w)) counts[tolower(*w) - 'a']++;
    for (int i = 0; i < 26; i++) printf("%c%d", 'a' + i, counts[i]);
    printf("\n%s|%-8s|%8.3f|%+d|%x|%o\n", strstr(words, "fox"), "left", 3.14159, 42, 255, 8);
    return 0;
}
