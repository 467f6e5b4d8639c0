#define _GNU_SOURCE
/* /proc and /dev, and the calls that tell about the system: /proc/self
 * (exe, also run through a relative link, maps, fd/ and its links, stat, status, cmdline, task/), another
 * process's /proc/PID and its going, /proc/cpuinfo, meminfo, uptime; the
 * directory /proc; /dev/null, /dev/zero, /dev/full, /dev/urandom and
 * /dev/random; getrandom, sysinfo, prlimit64, getrlimit/setrlimit and CPU
 * affinity.
 * Only what is the same on every Linux is printed (no pids, sizes, paths
 * of the scratch directory). */
#include <dirent.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>

static void show(const char *what, long r)
{
    printf("%s: %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

static int slurp(const char *path, char *buf, int size)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    int n = 0, r;
    while (n < size - 1 && (r = read(fd, buf + n, size - 1 - n)) > 0)
        n += r;
    buf[n] = 0;
    close(fd);
    return n;
}

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int all_zero(const unsigned char *b, int n)
{
    for (int i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    static char buf[65536];
    char link[512];
    if (argc == 3 && strcmp(argv[1], "--exe") == 0) {
        /* started through a relative symbolic link: exe is the file's
         * absolute path (glibc's static start asserts it is absolute) */
        ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
        link[n > 0 ? n : 0] = 0;
        printf("through a relative link, /proc/self/exe is the file's absolute path: %d\n",
               strcmp(link, argv[2]) == 0);
        return 0;
    }
    if (argc < 2 || chdir(argv[1]) < 0)
        return 2;

    /* /proc/self */
    ssize_t n = readlink("/proc/self/exe", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("/proc/self/exe names this program: %d\n", strcmp(base(link), "procfs") == 0);
    unlink("exe-link");
    symlink(link, "exe-link");
    fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
        execl("./exe-link", "exe-link", "--exe", link, (char *)NULL);
        _exit(127);
    }
    int status;
    waitpid(child, &status, 0);
    unlink("exe-link");
    n = readlink("/proc/self", link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("/proc/self is a link to the pid: %d\n", atoi(link) == getpid());
    slurp("/proc/self/maps", buf, sizeof buf);
    int lines = 0, good = 0, stack = 0;
    for (char *l = strtok(buf, "\n"); l; l = strtok(NULL, "\n")) {
        unsigned long a, b;
        char perms[8];
        lines++;
        if (sscanf(l, "%lx-%lx %4s", &a, &b, perms) == 3 && a < b && strlen(perms) == 4)
            good++;
        stack |= strstr(l, "[stack]") != NULL;
    }
    printf("maps: every line 'start-end perms': %d; a [stack] line: %d\n", lines > 2 && good == lines, stack);

    int file = open("procfs.txt", O_CREAT | O_RDWR | O_TRUNC, 0644);
    int p[2];
    pipe(p);
    DIR *d = opendir("/proc/self/fd");
    int fds[64], nfds = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.' && nfds < 64)
            fds[nfds++] = atoi(e->d_name);
    closedir(d);
    qsort(fds, nfds, sizeof *fds, cmp_int);
    printf("/proc/self/fd lists:");
    for (int i = 0; i < nfds; i++)
        printf(" %d", fds[i]);
    printf("\n");
    snprintf(buf, sizeof buf, "/proc/self/fd/%d", file);
    n = readlink(buf, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("fd link of a file names it: %d\n", strcmp(base(link), "procfs.txt") == 0 && link[0] == '/');
    snprintf(buf, sizeof buf, "/proc/self/fd/%d", p[0]);
    n = readlink(buf, link, sizeof link - 1);
    link[n > 0 ? n : 0] = 0;
    printf("fd link of a pipe: %d\n", strncmp(link, "pipe:[", 6) == 0);
    struct stat st;
    printf("lstat of an fd link: a symbolic link %d\n", lstat(buf, &st) == 0 && S_ISLNK(st.st_mode));
    printf("stat through it: a pipe %d\n", stat(buf, &st) == 0 && S_ISFIFO(st.st_mode));
    write(p[1], "via proc", 8);
    int again = open(buf, O_RDONLY);
    memset(link, 0, sizeof link);
    show("read the pipe through /proc/self/fd/N", read(again, link, sizeof link));
    printf("got '%s'\n", link);
    close(again);
    show("/proc/self/fd/999", open("/proc/self/fd/999", O_RDONLY));

    slurp("/proc/self/stat", buf, sizeof buf);
    int spid = 0, sppid = 0;
    char comm[64] = "", state = '?';
    sscanf(buf, "%d %63s %c %d", &spid, comm, &state, &sppid);
    printf("stat: pid %d, (comm) %s, ppid %d, state %c\n", spid == getpid(), comm, sppid == getppid(), state);
    slurp("/proc/self/status", buf, sizeof buf);
    char want[64];
    snprintf(want, sizeof want, "\nPid:\t%d\n", getpid());
    printf("status: Name %d, Pid %d, PPid line %d\n", strncmp(buf, "Name:\tprocfs\n", 13) == 0,
           strstr(buf, want) != NULL, strstr(buf, "\nPPid:\t") != NULL);
    n = slurp("/proc/self/cmdline", buf, sizeof buf);
    int args = 0;
    for (int i = 0; i < n; i++)
        args += buf[i] == 0;
    printf("cmdline: %d arguments, the last is argv[1]: %d\n", args,
           n > 0 && strcmp(buf + n - 1 - strlen(argv[1]), argv[1]) == 0);
    slurp("/proc/self/comm", buf, sizeof buf);
    printf("comm: %s", buf);
    d = opendir("/proc/self/task");
    int tasks = 0, me = 0;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            tasks++;
            me |= atoi(e->d_name) == getpid();
        }
    closedir(d);
    printf("task/: %d thread, itself: %d\n", tasks, me);

    /* another process */
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        for (;;)
            pause();
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/stat", c);
    state = '?';
    for (int i = 0; i < 200 && state != 'S'; i++) {
        usleep(10000);
        slurp(path, buf, sizeof buf);
        sscanf(buf, "%*d %*s %c", &state);
    }
    printf("a child in pause: state %c\n", state);
    snprintf(path, sizeof path, "/proc/%d", c);
    d = opendir("/proc");
    int listed = 0, self_listed = 0;
    while (d && (e = readdir(d))) {
        listed |= atoi(e->d_name) == c;
        self_listed |= strcmp(e->d_name, "self") == 0;
    }
    closedir(d);
    printf("/proc lists the child: %d, and self: %d\n", listed, self_listed);
    printf("/proc/PID is a directory: %d\n", stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    show("/proc/PID after it was reaped", stat(path, &st));
    show("/proc/nosuch", open("/proc/nosuch", O_RDONLY));

    /* system files */
    slurp("/proc/cpuinfo", buf, sizeof buf);
    printf("cpuinfo has a processor line: %d\n", strncmp(buf, "processor\t: 0", 13) == 0);
    slurp("/proc/meminfo", buf, sizeof buf);
    long total = 0, free_ = 0;
    sscanf(buf, "MemTotal: %ld kB\nMemFree: %ld kB", &total, &free_);
    printf("meminfo: MemTotal then MemFree, 0 < free <= total: %d\n", total > 0 && free_ > 0 && free_ <= total);
    slurp("/proc/uptime", buf, sizeof buf);
    double up = -1, idle = -1;
    printf("uptime: two numbers: %d\n", sscanf(buf, "%lf %lf", &up, &idle) == 2 && up >= 0);
    printf("/proc/self/fd is a directory: %d\n", stat("/proc/self/fd", &st) == 0 && S_ISDIR(st.st_mode));

    /* /dev */
    unsigned char b1[32], b2[32];
    /* CPU affinity: CPU 0 is in every thread's mask and may be asked for */
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    show("sched_getaffinity", sched_getaffinity(0, sizeof cpus, &cpus));
    printf("CPU 0 in the mask: %d\n", CPU_ISSET(0, &cpus));
    CPU_ZERO(&cpus);
    CPU_SET(0, &cpus);
    show("sched_setaffinity to CPU 0", sched_setaffinity(0, sizeof cpus, &cpus));
    show("sched_getaffinity of the parent", sched_getaffinity(getppid(), sizeof cpus, &cpus));
    CPU_ZERO(&cpus);
    show("sched_setaffinity to no CPU", sched_setaffinity(0, sizeof cpus, &cpus));
    int z = open("/dev/zero", O_RDWR);
    memset(b1, 1, sizeof b1);
    show("read /dev/zero", read(z, b1, sizeof b1));
    printf("zeros: %d\n", all_zero(b1, sizeof b1));
    show("write /dev/zero", write(z, "x", 1));
    fstat(z, &st);
    printf("/dev/zero is a character device 1,5: %d\n", S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 5));
    close(z);
    int f = open("/dev/full", O_RDWR);
    show("write /dev/full", write(f, "x", 1));
    show("read /dev/full", read(f, b1, 8));
    close(f);
    int u = open("/dev/urandom", O_RDONLY);
    read(u, b1, sizeof b1);
    read(u, b2, sizeof b2);
    printf("/dev/urandom: not zeros %d, two reads differ %d\n", !all_zero(b1, sizeof b1), memcmp(b1, b2, sizeof b1) != 0);
    fstat(u, &st);
    printf("/dev/urandom is a character device 1,9: %d\n", S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 9));
    close(u);
    u = open("/dev/random", O_RDONLY);
    show("read /dev/random", read(u, b1, 16));
    close(u);
    int nul = open("/dev/null", O_RDONLY);
    show("read /dev/null", read(nul, b1, 16));
    close(nul);
    show("stat /dev/zero", stat("/dev/zero", &st));

    /* system calls */
    show("getrandom 32", getrandom(b1, 32, 0));
    show("getrandom GRND_NONBLOCK", getrandom(b1, 16, GRND_NONBLOCK));
    show("getrandom bad flags", getrandom(b1, 16, 0x100));
    struct sysinfo si;
    show("sysinfo", sysinfo(&si));
    printf("sysinfo: 0 < free <= total %d, mem_unit %u, procs > 0 %d\n",
           si.freeram > 0 && si.freeram <= si.totalram, si.mem_unit, si.procs > 0);
    struct rlimit rl, old;
    show("prlimit64 get NOFILE", prlimit(0, RLIMIT_NOFILE, NULL, &old));
    printf("  soft > 0 and <= hard: %d\n", old.rlim_cur > 0 && old.rlim_cur <= old.rlim_max);
    rl = (struct rlimit){64, old.rlim_max};
    show("setrlimit NOFILE 64", setrlimit(RLIMIT_NOFILE, &rl));
    getrlimit(RLIMIT_NOFILE, &rl);
    printf("  now %ld\n", (long)rl.rlim_cur);
    rl = (struct rlimit){100, 50};
    show("a soft limit above the hard one", setrlimit(RLIMIT_NOFILE, &rl));
    show("prlimit64 of a missing pid", prlimit(999999, RLIMIT_NOFILE, NULL, &old));
    show("prlimit64 resource 99", prlimit(0, 99, NULL, &old));
    getrlimit(RLIMIT_STACK, &rl);
    printf("RLIMIT_STACK soft 8 MiB: %d\n", rl.rlim_cur == 8 << 20);
    close(file);
    unlink("procfs.txt");
    return 0;
}
