/* Time and identity: clocks move forward, nanosleep sleeps, uname says
 * Linux on x86_64, the ids are those of root. */
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

int main(void)
{
    struct timespec a, b, d = {0, 20 * 1000 * 1000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    printf("nanosleep: %d\n", nanosleep(&d, NULL));
    clock_gettime(CLOCK_MONOTONIC, &b);
    long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
    printf("slept at least 20 ms: %d\n", ms >= 20);
    struct utsname u;
    uname(&u);
    printf("sysname %s machine %s\n", u.sysname, u.machine);
    printf("uid %d euid %d gid %d\n", getuid(), geteuid(), getgid());
    printf("pid positive: %d\n", getpid() > 0);
    char host[65];
    printf("gethostname: %d\n", gethostname(host, sizeof host));
    return 0;
}
