/* PCRE2 (the interpreter, no JIT): a set of patterns matched against every
   line of the corpus; counts matches and hashes the matched offsets. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pcre2.h>
#include "common.h"

static const char *patterns[] = {
    "\\b(?:int|char|void|unsigned|static)\\s+\\**\\w+\\s*\\(",  /* C function heads */
    "[A-Za-z_][A-Za-z0-9_]*\\s*=\\s*[0-9]+",
    "(?i)copyright|license|warranty",
    "0x[0-9a-fA-F]+",
    "\"(?:[^\"\\\\]|\\\\.)*\"",                          /* string literals */
    "/\\*.*?\\*/",
    "\\b(\\w+)\\s+\\1\\b",                                   /* doubled words */
    "^\\s*#\\s*(?:define|include|if|ifdef|endif)\\b",
    "(?:\\d{1,3}\\.){3}\\d{1,3}",
    "[aeiou]{3,}|[^aeiou\\W\\d_]{5,}",
};

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: pcre2 ROUNDS corpus\n"); return 2; }
    int rounds = atoi(argv[1]);
    size_t n;
    unsigned char *text = read_file(argv[2], &n);
    int np = sizeof patterns / sizeof *patterns;
    pcre2_code *re[16];
    for (int i = 0; i < np; i++) {
        int err;
        PCRE2_SIZE eo;
        re[i] = pcre2_compile((PCRE2_SPTR)patterns[i], PCRE2_ZERO_TERMINATED, PCRE2_MULTILINE, &err, &eo, NULL);
        if (!re[i]) { printf("pattern %d: error %d at %lu\n", i, err, (unsigned long)eo); return 1; }
    }
    pcre2_match_data *md = pcre2_match_data_create(16, NULL);
    unsigned long count[16] = {0};
    unsigned h = 0;
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < np; i++) {
            PCRE2_SIZE start = 0;
            while (start < n) {
                int rc = pcre2_match(re[i], text, n, start, 0, md, NULL);
                if (rc < 0) break;
                PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
                count[i]++;
                h = h * 31 + (unsigned)ov[0] + (unsigned)ov[1] * 7;
                start = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
            }
        }
    for (int i = 0; i < np; i++) printf("pattern %d: %lu matches\n", i, count[i]);
    printf("pcre2: hash %08x\n", h);
    return 0;
}
