/* cJSON: parse cJSON's own test documents, print them back formatted and
   minified, re-parse the printed text and compare; repeated ROUNDS times.
   Prints per-document sizes and a hash of all printed text. */
#include "common.h"
#include <string.h>
#include "cJSON.h"

int main(int argc, char **argv) {
    int rounds = atoi(argv[1]);
    unsigned hash = 2166136261u;
    for (int i = 2; i < argc; i++) {
        size_t n; unsigned char *raw = read_file(argv[i], &n);
        char *doc = malloc(n + 1); memcpy(doc, raw, n); doc[n] = 0; free(raw);
        size_t printed = 0; int same = 1, items = 0; long bad = -1;
        for (int r = 0; r < rounds; r++) {
            cJSON *j = cJSON_Parse(doc);
            if (!j) { bad = (long)(cJSON_GetErrorPtr() - doc); break; }
            char *pretty = cJSON_Print(j), *flat = cJSON_PrintUnformatted(j);
            cJSON *back = cJSON_Parse(flat);
            same &= back && cJSON_Compare(j, back, 1);
            items = cJSON_GetArraySize(j);
            printed = strlen(pretty) + strlen(flat);
            if (r == 0) hash = fnv((unsigned char *)pretty, strlen(pretty)) ^ (hash * 31) ^ fnv((unsigned char *)flat, strlen(flat));
            cJSON_free(pretty); cJSON_free(flat);
            cJSON_Delete(back); cJSON_Delete(j);
        }
        const char *base = strrchr(argv[i], '/');
        if (bad >= 0) printf("%s: %zu bytes, not JSON (error at offset %ld)\n", base ? base + 1 : argv[i], n, bad);
        else printf("%s: %zu bytes, %d top-level items, printed %zu bytes, round trip %s\n", base ? base + 1 : argv[i], n, items, printed, same ? "equal" : "DIFFERENT");
        free(doc);
    }
    printf("hash %08x\n", hash);
    return 0;
}
