/* wh.net.idle_wakeups (not a conformance test): opens sockets on the
 * workhorse's network interface (a TCP listener and a bound UDP socket on
 * every address: nothing comes to them) and, after a settling second,
 * sleeps SECONDS (default 10) while they stay idle, then reads the
 * workhorse's count of its loop's wake-ups that no system call caused
 * (/proc/keepwakes: time-outs its TCP/IP stack asked for, the network
 * server's notifications, its other time-outs, the console ticker's calls).
 * The figure is the first two per second, rounded up; prints
 *   bench: wh.net.idle_wakeups median=.. min=.. max=.. unit=wakeups/s runs=1
 * and the counts.  tools/workhorse_bench.py runs it for `make bench` under
 * -icount, whose clock makes the interval the same in every run. */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

typedef unsigned long long u64;

struct wakes {
    u64 net, notified, other, ticker;
};

static int read_wakes(struct wakes *w)
{
    FILE *f = fopen("/proc/keepwakes", "r");
    if (!f)
        return -1;
    int n = fscanf(f, "net_timeouts %llu notified %llu timeouts %llu ticker %llu", &w->net, &w->notified, &w->other,
                   &w->ticker);
    fclose(f);
    return n == 4 ? 0 : -1;
}

static int sock(int type, int port)
{
    int s = socket(AF_INET, type, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) < 0 || (type == SOCK_STREAM && listen(s, 4) < 0)) {
        perror("idlewake: socket");
        exit(1);
    }
    return s;
}

int main(int argc, char **argv)
{
    int secs = argc > 1 ? atoi(argv[1]) : 10;
    if (secs < 1)
        secs = 1;
    sock(SOCK_STREAM, 7790);
    sock(SOCK_DGRAM, 7791);
    struct timespec settle = {1, 0}, ts = {secs, 0};
    nanosleep(&settle, NULL);
    struct wakes a, b;
    if (read_wakes(&a) < 0) {
        printf("bench: wh.net.idle_wakeups not measured: no /proc/keepwakes\n");
        return 1;
    }
    nanosleep(&ts, NULL);
    if (read_wakes(&b) < 0)
        return 1;
    u64 net = b.net - a.net, notified = b.notified - a.notified;
    u64 per_s = (net + notified + secs - 1) / secs;
    printf("idlewake: in %d s with two idle sockets: %llu time-outs of the TCP/IP stack, %llu notifications, "
           "%llu other time-outs, %llu ticker calls\n",
           secs, net, notified, b.other - a.other, b.ticker - a.ticker);
    printf("bench: wh.net.idle_wakeups median=%llu min=%llu max=%llu unit=wakeups/s runs=1\n", per_s, per_s, per_s);
    return 0;
}
