/* One end of a TCP transfer with a program on the host, for the network
 * test (tools/test_net.py; not a conformance program: its other end is
 * the host's).  The bytes are a stream both sides can make (byte i is
 * (i * 131 + (i >> 8) * 7 + seed) & 0xff), summed with 64-bit FNV-1a.
 *
 *   tcppeer serve PORT          accepts one connection on 0.0.0.0:PORT,
 *                               reads until end of file, answers
 *                               "BYTES CHECKSUM\n" and prints the same
 *   tcppeer connect IP PORT N SEED
 *                               sends N bytes, shuts its side, reads the
 *                               peer's "BYTES CHECKSUM" line and prints
 *                               both; exit status 0 when they agree */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static uint64_t fnv(uint64_t h, const unsigned char *b, long n)
{
    for (long i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

#define FNV_START 0xcbf29ce484222325ULL

static int serve(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 1) < 0) {
        printf("tcppeer: bind/listen: %s\n", strerror(errno));
        return 1;
    }
    printf("tcppeer: listening on port %d\n", port);
    fflush(stdout);
    struct sockaddr_in peer;
    socklen_t len = sizeof peer;
    int c = accept(s, (struct sockaddr *)&peer, &len);
    if (c < 0) {
        printf("tcppeer: accept: %s\n", strerror(errno));
        return 1;
    }
    unsigned char b[16384];
    uint64_t h = FNV_START;
    long total = 0;
    int n;
    while ((n = read(c, b, sizeof b)) > 0) {
        h = fnv(h, b, n);
        total += n;
    }
    char line[64];
    n = snprintf(line, sizeof line, "%ld %016llx\n", total, (unsigned long long)h);
    write(c, line, n);
    close(c);
    printf("tcppeer: from %s: %s", inet_ntoa(peer.sin_addr), line);
    return n < 0;
}

static int connect_to(const char *ip, int port, long count, int seed)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_aton(ip, &a.sin_addr);
    if (connect(c, (struct sockaddr *)&a, sizeof a) < 0) {
        printf("tcppeer: connect: %s\n", strerror(errno));
        return 1;
    }
    unsigned char b[16384];
    uint64_t h = FNV_START;
    long sent = 0;
    while (sent < count) {
        long n = count - sent < (long)sizeof b ? count - sent : (long)sizeof b;
        for (long i = 0; i < n; i++) {
            long k = sent + i;
            b[i] = (unsigned char)((k * 131 + (k >> 8) * 7 + seed) & 0xff);
        }
        h = fnv(h, b, n);
        for (long done = 0; done < n;) {
            int w = write(c, b + done, n - done);
            if (w <= 0) {
                printf("tcppeer: write: %s\n", strerror(errno));
                return 1;
            }
            done += w;
        }
        sent += n;
    }
    shutdown(c, SHUT_WR);
    char line[64] = {0};
    int got = 0, n;
    while (got < (int)sizeof line - 1 && (n = read(c, line + got, sizeof line - 1 - got)) > 0)
        got += n;
    char mine[64];
    snprintf(mine, sizeof mine, "%ld %016llx\n", sent, (unsigned long long)h);
    printf("tcppeer: sent %sthe peer: %s", mine, line);
    return strcmp(mine, line) != 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && strcmp(argv[1], "serve") == 0)
        return serve(atoi(argv[2]));
    if (argc == 6 && strcmp(argv[1], "connect") == 0)
        return connect_to(argv[2], atoi(argv[3]), atol(argv[4]), atoi(argv[5]));
    fprintf(stderr, "usage: tcppeer serve PORT | tcppeer connect IP PORT BYTES SEED\n");
    return 2;
}
