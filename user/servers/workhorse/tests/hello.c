/* Arguments, environment, stdio and the exit status. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static __thread int tls_counter = 41;

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* as on a terminal, also on the host */
    printf("hello from a static Linux program, argc=%d\n", argc);
    for (int i = 1; i < argc; i++)
        printf("argv[%d]=%s\n", i, argv[i]);
    printf("HOME=%s\n", getenv("HOME") ? "set" : "unset");
    tls_counter++;
    printf("tls=%d\n", tls_counter);
    fprintf(stderr, "to stderr\n");
    fflush(stdout);
    const char msg[] = "raw write\n";
    write(1, msg, strlen(msg));
    return 3;
}
