// Scheduling queries and nice values, and waitid: sched_get_priority_max
// and _min, sched_getscheduler/setscheduler/getparam/setparam with the
// normal policies (the real-time ones differ by privilege and are left
// out), getpriority/setpriority (only raised: lowering needs privilege),
// inherited by fork; waitid for exited and killed children, WNOHANG,
// WNOWAIT, process groups, and the errors of each.
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *err(long r) {
    static char b[32];
    if (r >= 0) {
        snprintf(b, sizeof b, "%ld", r);
        return b;
    }
    switch (errno) {
    case EINVAL: return "EINVAL";
    case ESRCH: return "ESRCH";
    case ECHILD: return "ECHILD";
    case EBADF: return "EBADF";
    case EPERM: return "EPERM";
    case EFAULT: return "EFAULT";
    default: return strerror(errno);
    }
}

static void show(const char *what, siginfo_t *si, pid_t child) {
    const char *code = si->si_code == CLD_EXITED ? "CLD_EXITED" : si->si_code == CLD_KILLED ? "CLD_KILLED" : "other";
    printf("%s: signo %d code %s status %d pid %s\n", what, si->si_signo, si->si_signo ? code : "0", si->si_status,
           si->si_pid == child ? "the child's" : si->si_pid == 0 ? "0" : "another");
}

int main(void) {
    for (int pol = 0; pol <= 6; pol++)
        printf("policy %d: max %s", pol, err(sched_get_priority_max(pol))), printf(" min %s\n", err(sched_get_priority_min(pol)));
    printf("setscheduler DEADLINE: %s\n", err(sched_setscheduler(0, 6, &(struct sched_param){0})));
    printf("getscheduler: %s\n", err(sched_getscheduler(0)));
    struct sched_param sp = {0};
    printf("getparam: %s priority %d\n", err(sched_getparam(0, &sp)), sp.sched_priority);
    printf("getparam of NULL: %s\n", err(syscall(SYS_sched_getparam, 0, NULL)));
    printf("getscheduler of -1: %s\n", err(sched_getscheduler(-1)));
    sp.sched_priority = 0;
    printf("setscheduler BATCH: %s\n", err(sched_setscheduler(0, SCHED_BATCH, &sp)));
    printf("getscheduler: %s\n", err(sched_getscheduler(0)));
    printf("setparam 0: %s\n", err(sched_setparam(0, &sp)));
    sp.sched_priority = 5;
    printf("setparam 5 under BATCH: %s\n", err(sched_setparam(0, &sp)));
    printf("setscheduler OTHER with priority 5: %s\n", err(sched_setscheduler(0, SCHED_OTHER, &sp)));
    printf("setscheduler FIFO with priority 0: %s\n", err(sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){0})));
    printf("setscheduler of policy 9: %s\n", err(sched_setscheduler(0, 9, &(struct sched_param){0})));
    printf("setscheduler of NULL: %s\n", err(syscall(SYS_sched_setscheduler, 0, SCHED_OTHER, NULL)));
    sp.sched_priority = 0;
    printf("setscheduler OTHER: %s\n", err(sched_setscheduler(0, SCHED_OTHER, &sp)));
    printf("getscheduler: %s\n", err(sched_getscheduler(0)));

    // Nice values: set, clamped, inherited.
    int base = getpriority(PRIO_PROCESS, 0);
    errno = 0;
    printf("setpriority +3: %s\n", err(setpriority(PRIO_PROCESS, 0, base + 3)));
    printf("getpriority: base %+d\n", getpriority(PRIO_PROCESS, 0) - base);
    printf("raw getpriority: 20 - nice is %s\n",
           syscall(SYS_getpriority, PRIO_PROCESS, 0) == 20 - (base + 3) ? "so" : "not so");
    printf("setpriority of which 7: %s\n", err(setpriority(7, 0, 1)));
    errno = 0;
    int pr = getpriority(7, 0);
    printf("getpriority of which 7: %d %s\n", pr, errno == EINVAL ? "EINVAL" : "no error");
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        printf("child getpriority: base %+d\n", getpriority(PRIO_PROCESS, 0) - base);
        fflush(stdout);
        _exit(7);
    }
    siginfo_t si;
    memset(&si, 0x55, sizeof si);
    printf("waitid P_PID WEXITED: %s\n", err(waitid(P_PID, c, &si, WEXITED)));
    show("  exited", &si, c);
    printf("waitid again: %s\n", err(waitid(P_PID, c, &si, WEXITED)));
    printf("setpriority 50 (clamped): %s\n", err(setpriority(PRIO_PROCESS, 0, 50)));
    printf("getpriority: %d\n", getpriority(PRIO_PROCESS, 0));
    printf("setpriority of a reaped child: %s\n", err(setpriority(PRIO_PROCESS, c, 10)));

    // A child killed, waited for with WNOWAIT first.
    int p[2];
    pipe(p);
    fflush(stdout);
    c = fork();
    if (c == 0) {
        char b;
        close(p[1]);
        read(p[0], &b, 1);
        _exit(0);
    }
    close(p[0]);
    memset(&si, 0x55, sizeof si);
    printf("waitid WNOHANG of a running child: %s\n", err(waitid(P_ALL, 0, &si, WEXITED | WNOHANG)));
    show("  nothing yet", &si, c);
    kill(c, SIGKILL);
    printf("waitid WNOWAIT: %s\n", err(waitid(P_PGID, 0, &si, WEXITED | WNOWAIT)));
    show("  killed", &si, c);
    memset(&si, 0x55, sizeof si);
    printf("waitid after WNOWAIT: %s\n", err(waitid(P_PID, c, &si, WEXITED)));
    show("  killed", &si, c);
    close(p[1]);
    printf("waitid with no children: %s\n", err(waitid(P_ALL, 0, &si, WEXITED)));
    printf("waitid of options 0: %s\n", err(waitid(P_ALL, 0, &si, 0)));
    printf("waitid of bad options: %s\n", err(waitid(P_ALL, 0, &si, WEXITED | 0x10000)));
    printf("waitid of P_PID 0: %s\n", err(waitid(P_PID, 0, &si, WEXITED)));
    printf("waitid of idtype 9: %s\n", err(waitid(9, 0, &si, WEXITED)));
    printf("waitid of P_PGID -1: %s\n", err(waitid(P_PGID, -1, &si, WEXITED)));
    return 0;
}
