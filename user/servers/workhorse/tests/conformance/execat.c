// execveat: the open file itself (AT_EMPTY_PATH, and glibc's fexecve), a
// path relative to a directory descriptor, to AT_FDCWD, an absolute path
// (the descriptor ignored), a script by descriptor and by directory (the
// interpreter given its path), a symbolic link with and without
// AT_SYMLINK_NOFOLLOW, and the errors.  Each execveat runs in a child,
// which reports from its new program (or its error) before the parent
// goes on.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static char *env[] = {"EXECAT=1", NULL};

static int sys_execveat(int dirfd, const char *path, char **argv, char **envp, int flags) {
    return syscall(SYS_execveat, dirfd, path, argv, envp, flags);
}

// Runs f(arg) in a child and waits for it; says how it ended.
static void in_child(const char *what, int (*f)(const void *), const void *arg) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        int r = f(arg);
        printf("%s: -1 %s\n", what, r < 0 ? strerror(errno) : "(returned)");
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        printf("%s: child ended with status %#x\n", what, st);
}

struct at {
    int fd;
    const char *path;
    int flags;
    const char *stage;
};

static int do_execveat(const void *p) {
    const struct at *a = p;
    char *argv[] = {"execat", "stage", (char *)a->stage, NULL};
    return sys_execveat(a->fd, a->path, argv, env, a->flags);
}

static int do_fexecve(const void *p) {
    char *argv[] = {"execat", "stage", "fexecve", NULL};
    return fexecve(*(const int *)p, argv, env);
}

static void run(const char *what, int fd, const char *path, int flags) {
    struct at a = {fd, path, flags, what};
    in_child(what, do_execveat, &a);
}

static const char *base(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static int copy(const char *from, const char *to, mode_t mode) {
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode);
    if (in < 0 || out < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, n) != n)
            return -1;
    close(in);
    close(out);
    return n < 0 ? -1 : 0;
}

int main(int argc, char **argv) {
    if (argc >= 3 && strcmp(argv[1], "stage") == 0) {
        printf("%s: running, argc %d, EXECAT=%s\n", argv[2], argc, getenv("EXECAT") ? getenv("EXECAT") : "(none)");
        return 0;
    }
    if (argc >= 3 && strcmp(argv[1], "interp") == 0) {
        // As a script's interpreter: argv = interp, "interp", script, args.
        // By descriptor it is /dev/fd/N; by directory Linux gives
        // /dev/fd/N/script and Keep the whole path: the name is the same.
        const char *script = argc > 2 ? argv[2] : "";
        int byfd = strncmp(script, "/dev/fd/", 8) == 0 && !strchr(script + 8, '/');
        printf("interpreter: script %s%s, then", byfd ? "/dev/fd/N" : "named ", byfd ? "" : base(script));
        for (int i = 3; i < argc; i++)
            printf(" %s", argv[i]);
        printf("\n");
        int fd = open(script, O_RDONLY);
        char line[64] = {0};
        printf("interpreter: the script %s\n", fd >= 0 && read(fd, line, sizeof line - 1) > 2 && line[0] == '#' ? "opens" : "does not open");
        return 0;
    }
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    char d[512], prog[600], script[600], link[600], plain[600];
    snprintf(d, sizeof d, "%s/execat.d", dir);
    snprintf(prog, sizeof prog, "%s/prog", d);
    snprintf(script, sizeof script, "%s/script", d);
    snprintf(link, sizeof link, "%s/link", d);
    snprintf(plain, sizeof plain, "%s/plain", d);
    mkdir(d, 0755);
    unlink(prog);
    unlink(script);
    unlink(link);
    unlink(plain);
    if (copy("/proc/self/exe", prog, 0755) || copy("/proc/self/exe", plain, 0644)) {
        printf("cannot copy the program: %s\n", strerror(errno));
        return 1;
    }
    FILE *f = fopen(script, "w");
    fprintf(f, "#!%s interp\nnot run\n", prog);
    fclose(f);
    chmod(script, 0755);
    symlink("prog", link);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    int self = open("/proc/self/exe", O_RDONLY);
    int pfd = open(prog, O_RDONLY);

    run("AT_EMPTY_PATH of our own program", self, "", AT_EMPTY_PATH);
    run("AT_EMPTY_PATH of a copy", pfd, "", AT_EMPTY_PATH);
    in_child("fexecve", do_fexecve, &pfd);
    run("relative to a directory descriptor", dfd, "prog", 0);
    run("an absolute path, descriptor 999", 999, prog, 0);
    run("a symbolic link", dfd, "link", 0);
    run("a symbolic link, AT_SYMLINK_NOFOLLOW", dfd, "link", AT_SYMLINK_NOFOLLOW);
    run("a script relative to a directory descriptor", dfd, "script", 0);
    int sfd = open(script, O_RDONLY);
    run("a script by its descriptor", sfd, "", AT_EMPTY_PATH);
    if (chdir(d) == 0)
        run("relative to AT_FDCWD", AT_FDCWD, "prog", 0);

    // Errors.
    int pipefd[2];
    if (pipe(pipefd))
        return 1;
    run("flags 4", dfd, "prog", 4);
    run("an empty path without AT_EMPTY_PATH", pfd, "", 0);
    run("AT_EMPTY_PATH of a directory", dfd, "", AT_EMPTY_PATH);
    run("AT_EMPTY_PATH of a pipe", pipefd[0], "", AT_EMPTY_PATH);
    run("AT_EMPTY_PATH of descriptor 999", 999, "", AT_EMPTY_PATH);
    run("relative to a file's descriptor", pfd, "prog", 0);
    run("relative to descriptor 999", 999, "prog", 0);
    run("a missing file", dfd, "missing", 0);
    run("a file without execute permission", dfd, "plain", 0);
    run("a directory", dfd, ".", 0);
    run("a bad path pointer", dfd, (const char *)8, 0);
    return 0;
}
