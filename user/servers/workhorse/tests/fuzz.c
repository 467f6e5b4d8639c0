/* Robustness (Keep only): children make thousands of system calls with
 * random numbers and arguments (pointers into their own memory, into the
 * kernel half, unaligned, huge; small numbers, -1), and are killed after a
 * while whatever they did.  The server must answer all of it and go on: the
 * parent prints how the children ended, and the test then runs more
 * programs.  Calls that end or replace the process, make processes or
 * signal others are left out (they would only end the run early). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t state;

static uint64_t rnd(void)
{
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static char buf[8192];

static uint64_t arg(void)
{
    switch (rnd() % 10) {
    case 0: return 0;
    case 1: return rnd() % 16;
    case 2: return (uint64_t)-1;
    case 3: return (uint64_t)buf + rnd() % sizeof buf;
    case 4: return 0xffff800000000000ull + (rnd() & 0xffffff);
    case 5: return rnd();
    case 6: return (uint64_t)&state + 1;
    case 7: return 4096;
    case 8: return rnd() % 4096;
    default: return (uint64_t)buf;
    }
}

static int excluded(long nr)
{
    switch (nr) {
    case SYS_exit: case SYS_exit_group: case SYS_fork: case SYS_vfork: case SYS_clone:
    case SYS_clone3: case SYS_execve: case SYS_execveat: case SYS_kill: case SYS_tkill:
    case SYS_tgkill: case SYS_rt_sigreturn: case SYS_munmap: case SYS_mprotect:
    case SYS_brk: case SYS_mremap: case SYS_arch_prctl: case SYS_setsid: case SYS_setpgid:
    case SYS_rt_sigaction: case SYS_rt_sigprocmask: case SYS_mmap:
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int children = argc > 1 ? atoi(argv[1]) : 8;
    int calls = argc > 2 ? atoi(argv[2]) : 2000;
    int ended = 0, killed = 0;
    for (int k = 0; k < children; k++) {
        pid_t c = fork();
        if (c == 0) {
            state = 0x9e3779b97f4a7c15ull * (k + 1);
            /* No descriptor of the terminal: a stray TCSETS or write must not
             * reach it. */
            close(0);
            close(1);
            close(2);
            for (int i = 0; i < calls; i++) {
                long nr = rnd() % 460;
                if (excluded(nr))
                    continue;
                syscall(nr, arg(), arg(), arg(), arg(), arg(), arg());
            }
            _exit(0);
        }
        struct timespec t = {0, 300 * 1000 * 1000};
        nanosleep(&t, NULL);
        kill(c, SIGKILL);
        int st;
        waitpid(c, &st, 0);
        if (WIFEXITED(st))
            ended++;
        else
            killed++;
    }
    printf("fuzz: %d children finished or were stopped (%d exited, %d killed)\n", ended + killed, ended, killed);
    return 0;
}
