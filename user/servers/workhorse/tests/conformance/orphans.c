// Orphans and their zombies: a process that ends leaves no process behind
// that nobody can wait for.  Each pattern runs more rounds than the
// workhorse has process slots (128), so a zombie left per round makes a
// later fork fail: a child that ends with an ended child not waited for
// (from exit_group, from a thread's exit_group, from the last thread's
// exit after the leader's exit), a live orphan that ends after its parent,
// a CLONE_PARENT child of a child, and a child killed with its group while
// its own ended child waits.
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 140

// Forks a child that ends at once and waits until it has ended, leaving
// it unreaped (WNOWAIT).  Returns 0, or -1 if the fork failed.
static int ended_child(void) {
    pid_t g = fork();
    if (g < 0)
        return -1;
    if (g == 0)
        _exit(0);
    siginfo_t si;
    if (waitid(P_PID, g, &si, WEXITED | WNOWAIT) != 0)
        return -1;
    return 0;
}

static void *thread_exit_group(void *arg) {
    (void)arg;
    _exit(ended_child() ? 3 : 0);
}

static void *thread_last_exit(void *arg) {
    (void)arg;
    int r = ended_child();
    syscall(SYS_exit, r ? 3 : 0);
    return NULL;
}

// The child of one round: its exit status is 0 if its own part worked.
static void child(int pattern, int fd) {
    pthread_t t;
    switch (pattern) {
    case 0: // its ended child not waited for
        _exit(ended_child() ? 3 : 0);
    case 1: // the same, from a thread
        if (pthread_create(&t, NULL, thread_exit_group, NULL))
            _exit(6);
        pause();
        _exit(4);
    case 2: // the leader exits, the last thread's exit ends the process
        if (pthread_create(&t, NULL, thread_last_exit, NULL))
            _exit(6);
        syscall(SYS_exit, 0);
        _exit(4);
    case 3: { // a live child that ends once this one has ended
        pid_t g = fork();
        if (g < 0)
            _exit(3);
        if (g == 0) {
            char c;
            while (read(fd, &c, 1) > 0)
                ;
            _exit(0);
        }
        _exit(0);
    }
    case 4: { // a CLONE_PARENT child: the caller's sibling
        long x = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
        if (x < 0)
            _exit(3);
        if (x == 0)
            _exit(0);
        _exit(0);
    }
    case 5: // killed with its group, its ended child not waited for
        if (ended_child())
            _exit(3);
        kill(0, SIGKILL);
        _exit(4);
    }
    _exit(5);
}

static const char *names[] = {
    "ended child left by exit_group",
    "ended child left by a thread's exit_group",
    "ended child left by the last thread's exit",
    "live orphan ending later",
    "CLONE_PARENT child",
    "ended child left by a kill of the group",
};

int main(void) {
    for (int pattern = 0; pattern < 6; pattern++) {
        int failed = 0, bad = 0;
        for (int i = 0; i < ROUNDS && !failed; i++) {
            int p[2], done[2];
            if (pipe(p) || pipe(done)) {
                printf("pipe: %s\n", strerror(errno));
                return 1;
            }
            pid_t c = fork();
            if (c < 0) {
                printf("%s: fork failed in round %d: %s\n", names[pattern], i, strerror(errno));
                failed = 1;
                close(p[0]), close(p[1]), close(done[0]), close(done[1]);
                break;
            }
            if (c == 0) {
                if (pattern == 5)
                    setpgid(0, 0);
                close(p[1]);
                close(done[0]);
                child(pattern, p[0]);
            }
            close(p[0]);
            close(done[1]);
            int st;
            if (waitpid(c, &st, 0) != c) {
                printf("%s: waitpid: %s\n", names[pattern], strerror(errno));
                return 1;
            }
            int want = pattern == 5 ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL : WIFEXITED(st) && WEXITSTATUS(st) == 0;
            if (!want)
                bad++;
            if (pattern == 4) {
                // The CLONE_PARENT child is this process's to wait for.
                pid_t x = waitpid(-1, &st, 0);
                if (x <= 0 || !WIFEXITED(st))
                    bad++;
            }
            // The live orphan ends when the write end closes; its end
            // closes `done`.
            close(p[1]);
            char b;
            while (read(done[0], &b, 1) > 0)
                ;
            close(done[0]);
        }
        printf("%s: %d rounds, %s, %d children with another status\n", names[pattern], ROUNDS,
               failed ? "a fork failed" : "every fork succeeded", bad);
    }
    // Nothing is left to wait for.
    printf("wait after all: %s\n", waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD ? "ECHILD" : "a child remains");
    return 0;
}
