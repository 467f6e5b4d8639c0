/* MuJS: run a JavaScript workload (workload.js) with a print() built in. */
#include <stdio.h>
#include <stdlib.h>
#include <mujs.h>
#include "common.h"

static void print(js_State *J) {
    int n = js_gettop(J);
    for (int i = 1; i < n; i++) {
        if (i > 1) putchar(' ');
        fputs(js_tostring(J, i), stdout);
    }
    putchar('\n');
    js_pushundefined(J);
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: mujs script.js\n"); return 2; }
    size_t n;
    char *src = (char *)read_file(argv[1], &n);
    src = realloc(src, n + 1);
    src[n] = 0;
    js_State *J = js_newstate(NULL, NULL, JS_STRICT);
    js_newcfunction(J, print, "print", 0);
    js_setglobal(J, "print");
    int r = js_dostring(J, src);
    js_freestate(J);
    return r ? 1 : 0;
}
