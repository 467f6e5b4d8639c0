/* Limits (run on Keep only: the host's differ): forking until fork fails
 * gives EAGAIN, allocating until malloc fails gives NULL, and both leave
 * the program (and the server) running. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    static pid_t kids[4096];
    int n = 0;
    for (;;) {
        pid_t c = fork();
        if (c == 0) {
            pause();
            _exit(0);
        }
        if (c < 0)
            break;
        kids[n++] = c;
        if (n == 4096)
            break;
    }
    printf("fork refused after %d children: %s\n", n, n < 4096 ? strerror(errno) : "never");
    for (int i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (int i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    long mib = 0;
    for (;;) {
        char *p = malloc(1 << 20);
        if (!p)
            break;
        memset(p, 1, 1 << 20);
        if (++mib == 4096)
            break;
    }
    printf("malloc failed after %s MiB\n", mib >= 100 && mib < 4096 ? "more than 100" : "an unexpected number of");
    return 0;
}
