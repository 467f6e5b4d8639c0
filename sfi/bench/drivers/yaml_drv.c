/* libyaml: parse the package's example documents (and its regression
   inputs) into events, emit them back to a buffer with the emitter, and load
   them as document trees, N times.  Prints counts and hashes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "common.h"

static unsigned char outbuf[1 << 20];

static int sink(void *data, unsigned char *buf, size_t n) {
    size_t *len = data;
    if (*len + n > sizeof outbuf) return 0;
    memcpy(outbuf + *len, buf, n);
    *len += n;
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: yaml N files...\n"); return 2; }
    int rounds = atoi(argv[1]);
    unsigned long events = 0, nodes = 0, bytes = 0, errors = 0;
    unsigned h = 0;
    for (int f = 2; f < argc; f++) {
        size_t n;
        unsigned char *doc = read_file(argv[f], &n);
        for (int r = 0; r < rounds; r++) {
            yaml_parser_t p;
            yaml_emitter_t e;
            size_t olen = 0;
            yaml_parser_initialize(&p);
            yaml_parser_set_input_string(&p, doc, n);
            yaml_emitter_initialize(&e);
            yaml_emitter_set_output(&e, sink, &olen);
            yaml_emitter_set_unicode(&e, 1);
            int done = 0, ok = 1;
            while (!done) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&p, &ev)) { ok = 0; break; }
                events++;
                h = h * 31 + ev.type;
                if (ev.type == YAML_SCALAR_EVENT) h = h ^ fnv(ev.data.scalar.value, ev.data.scalar.length);
                done = ev.type == YAML_STREAM_END_EVENT;
                if (ok && !yaml_emitter_emit(&e, &ev)) ok = 0;  /* the emitter takes the event */
                else if (!ok) yaml_event_delete(&ev);
            }
            if (!ok) errors++;
            bytes += olen;
            h ^= fnv(outbuf, olen);
            yaml_emitter_delete(&e);
            yaml_parser_delete(&p);
            /* the loader: documents as node trees */
            yaml_parser_initialize(&p);
            yaml_parser_set_input_string(&p, doc, n);
            for (;;) {
                yaml_document_t d;
                if (!yaml_parser_load(&p, &d)) { errors++; break; }
                yaml_node_t *root = yaml_document_get_root_node(&d);
                if (!root) { yaml_document_delete(&d); break; }
                for (yaml_node_t *nd = d.nodes.start; nd < d.nodes.top; nd++) {
                    nodes++;
                    if (nd->type == YAML_SCALAR_NODE) h += fnv(nd->data.scalar.value, nd->data.scalar.length);
                }
                yaml_document_delete(&d);
            }
            yaml_parser_delete(&p);
        }
        free(doc);
    }
    printf("yaml: %lu events, %lu nodes, %lu bytes emitted, %lu errors, hash %08x\n", events, nodes, bytes, errors, h);
    return 0;
}
