/* expat: parse each XML file given (expat's own large test documents) with
   namespace processing and element, attribute and character-data handlers;
   print per-file counts and a hash of every name and text byte seen. */
#include "common.h"
#include <string.h>
#include "expat.h"

struct tally { unsigned long elements, attributes, text_bytes, max_depth, depth; unsigned hash; };

static unsigned mix(unsigned h, const char *s, size_t n) { while (n--) h = (h ^ (unsigned char)*s++) * 16777619u; return h; }

static void XMLCALL start(void *u, const XML_Char *name, const XML_Char **atts) {
    struct tally *t = u;
    t->elements++;
    if (++t->depth > t->max_depth) t->max_depth = t->depth;
    t->hash = mix(t->hash, name, strlen(name));
    for (; *atts; atts += 2) {
        t->attributes++;
        t->hash = mix(mix(t->hash, atts[0], strlen(atts[0])), atts[1], strlen(atts[1]));
    }
}
static void XMLCALL end(void *u, const XML_Char *name) { struct tally *t = u; (void)name; t->depth--; }
static void XMLCALL text(void *u, const XML_Char *s, int n) { struct tally *t = u; t->text_bytes += n; t->hash = mix(t->hash, s, n); }

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        size_t n; unsigned char *doc = read_file(argv[i], &n);
        struct tally t = {0, 0, 0, 0, 0, 2166136261u};
        XML_Parser p = XML_ParserCreateNS(NULL, '|');
        XML_SetHashSalt(p, 0x5eed);
        XML_SetUserData(p, &t);
        XML_SetElementHandler(p, start, end);
        XML_SetCharacterDataHandler(p, text);
        /* Feed in 64 KiB pieces, as a streaming reader would. */
        int ok = 1;
        for (size_t off = 0; ok && off < n; off += 65536) {
            size_t len = n - off < 65536 ? n - off : 65536;
            ok = XML_Parse(p, (const char *)doc + off, (int)len, off + len == n) == XML_STATUS_OK;
        }
        const char *base = strrchr(argv[i], '/');
        printf("%s: %zu bytes, %s, %lu elements, %lu attributes, %lu text bytes, depth %lu, hash %08x\n", base ? base + 1 : argv[i], n,
               ok ? "well-formed" : XML_ErrorString(XML_GetErrorCode(p)), t.elements, t.attributes, t.text_bytes, t.max_depth, t.hash);
        XML_ParserFree(p);
        free(doc);
    }
    return 0;
}
