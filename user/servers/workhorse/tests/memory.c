/* Memory: brk through malloc, anonymous mmap, munmap, mprotect, a large
 * allocation touched page by page, and thread-local storage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static __thread long tls_value = 7;

int main(void)
{
    char *small = malloc(100);
    strcpy(small, "malloc works");
    printf("%s\n", small);
    void *b0 = sbrk(0);
    void *b1 = sbrk(65536);
    printf("sbrk grows: %d\n", (char *)sbrk(0) - (char *)b0 == 65536 && b1 == b0);
    memset(b1, 0x5a, 65536);
    printf("brk memory holds: %d\n", ((unsigned char *)b1)[65535] == 0x5a);
    size_t big = 8 << 20;
    unsigned char *m = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap: %s\n", m == MAP_FAILED ? "failed" : "ok");
    long sum = 0;
    for (size_t i = 0; i < big; i += 4096)
        sum += m[i];
    printf("fresh pages are zero: %d\n", sum == 0);
    for (size_t i = 0; i < big; i += 4096)
        m[i] = 1;
    sum = 0;
    for (size_t i = 0; i < big; i += 4096)
        sum += m[i];
    printf("pages written: %ld\n", sum);
    printf("mprotect read-only: %d\n", mprotect(m, 4096, PROT_READ));
    printf("still readable: %d\n", m[0]);
    printf("munmap: %d\n", munmap(m, big));
    printf("munmap unaligned: %d\n", munmap(m + 1, 4096));
    char *many[64];
    for (int i = 0; i < 64; i++) {
        many[i] = malloc(200000);
        memset(many[i], i, 200000);
    }
    int good = 1;
    for (int i = 0; i < 64; i++)
        good &= many[i][199999] == i;
    printf("64 large mallocs: %d\n", good);
    for (int i = 0; i < 64; i++)
        free(many[i]);
    tls_value *= 6;
    printf("tls: %ld\n", tls_value);
    return 0;
}
