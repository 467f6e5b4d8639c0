/* Processes: fork, wait4 statuses, pipes between processes, execve, vfork,
 * kill and SIGPIPE. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, int st)
{
    if (WIFEXITED(st))
        printf("%s: exited %d\n", what, WEXITSTATUS(st));
    else if (WIFSIGNALED(st))
        printf("%s: signal %d\n", what, WTERMSIG(st));
}

int main(void)
{
    fflush(stdout);
    pid_t c = fork();
    if (c == 0)
        _exit(7);
    int st;
    printf("wait4 pid matches: %d\n", waitpid(c, &st, 0) == c);
    show("child", st);
    int r = waitpid(-1, &st, 0);
    printf("no more children: %d %s\n", r, strerror(errno));

    int fds[2];
    pipe(fds);
    c = fork();
    if (c == 0) {
        close(fds[0]);
        for (int i = 0; i < 1000; i++)
            dprintf(fds[1], "line %d\n", i);
        _exit(0);
    }
    close(fds[1]);
    char buf[4096];
    long total = 0, n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        total += n;
    close(fds[0]);
    waitpid(c, &st, 0);
    printf("bytes through the pipe: %ld\n", total);

    fflush(stdout);
    c = fork();
    if (c == 0) {
        char *argv[] = {"echo", "exec'd echo", NULL};
        execv("/bin/echo", argv);
        _exit(99);
    }
    waitpid(c, &st, 0);
    show("echo", st);

    fflush(stdout);
    c = vfork();
    if (c == 0)
        _exit(5);
    waitpid(c, &st, 0);
    show("vfork child", st);

    c = fork();
    if (c == 0) {
        pause();
        _exit(0);
    }
    kill(c, SIGTERM);
    waitpid(c, &st, 0);
    show("killed", st);

    /* The child writes only once the parent has closed the read end too
     * (told through a second pipe), so no reader is left: SIGPIPE, on
     * every run. */
    int go[2];
    pipe(fds);
    pipe(go);
    c = fork();
    if (c == 0) {
        char ch;
        close(fds[0]);
        close(go[1]);
        read(go[0], &ch, 1);
        write(fds[1], "x", 1);
        _exit(0);
    }
    close(fds[0]);
    close(go[0]);
    write(go[1], "g", 1);
    close(go[1]);
    waitpid(c, &st, 0);
    close(fds[1]);
    show("writer to a closed pipe", st);
    close(fds[1]);
    printf("getppid differs: %d\n", getppid() != getpid());
    /* setpgid's refusals: a group that does not exist in the session, a
     * session leader (a child after setsid) moving itself, and a child of
     * another session moved by its parent. */
    int sp[2];
    pipe(sp);
    pid_t sc = fork();
    if (sc == 0) {
        close(sp[0]);
        setsid();
        int e1 = setpgid(0, 0) == -1 ? errno : 0;
        int e2 = setpgid(0, getppid()) == -1 ? errno : 0;
        char m[2] = {(char)e1, (char)e2};
        write(sp[1], m, 2);
        pause();
        _exit(0);
    }
    close(sp[1]);
    char sm[2] = {0, 0};
    read(sp[0], sm, 2);
    printf("setpgid of a session leader: %s; into another session's group: %s\n", strerror(sm[0]), strerror(sm[1]));
    printf("setpgid of a child in another session: %s\n", setpgid(sc, sc) == -1 ? strerror(errno) : "ok");
    kill(sc, SIGKILL);
    waitpid(sc, NULL, 0);
    pid_t gc = fork();
    if (gc == 0) {
        pause();
        _exit(0);
    }
    printf("setpgid to a group that does not exist: %s\n", setpgid(gc, 999999) == -1 ? strerror(errno) : "ok");
    printf("setpgid to the child's own group: %s\n", setpgid(gc, gc) == -1 ? strerror(errno) : "ok");
    kill(gc, SIGKILL);
    waitpid(gc, NULL, 0);
    return 0;
}
