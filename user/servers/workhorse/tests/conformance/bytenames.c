// File names that are not UTF-8 (any byte but NUL and '/'): made with
// open, mkdir, symlink and rename, found by stat and by readdir (sorted,
// printed in hex), kept apart from each other and from the valid UTF-8
// that looks like them, as a directory's name in getcwd and /proc/self/cwd,
// a descriptor's in /proc/self/fd, a symbolic link's target, the 255-byte
// limit counted in bytes; run as a program by execve, and unlinked.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void hex(const char *what, const char *s, size_t n) {
    printf("%s:", what);
    for (size_t i = 0; i < n; i++)
        printf(" %02x", (unsigned char)s[i]);
    printf("\n");
}

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The names in `.`, sorted, in hex.
static void list(const char *what) {
    DIR *d = opendir(".");
    char *names[64];
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) && n < 64)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            names[n++] = strdup(e->d_name);
    if (d)
        closedir(d);
    qsort(names, n, sizeof names[0], cmp);
    printf("%s: %d names\n", what, n);
    for (int i = 0; i < n; i++) {
        hex("  ", names[i], strlen(names[i]));
        free(names[i]);
    }
}

static void writes(const char *name, const char *text) {
    int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) {
        printf("create %02x...: %s\n", (unsigned char)name[0], strerror(errno));
        return;
    }
    write(fd, text, strlen(text));
    close(fd);
}

static void reads(const char *what, const char *name) {
    char buf[64] = {0};
    int fd = open(name, O_RDONLY);
    if (fd < 0) {
        printf("%s: %s\n", what, strerror(errno));
        return;
    }
    ssize_t r = read(fd, buf, sizeof buf - 1);
    close(fd);
    printf("%s: %.*s\n", what, (int)(r < 0 ? 0 : r), buf);
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--child") == 0) {
        // Run by execve under a name that is not UTF-8.
        char exe[256];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe);
        const char *base = memrchr(exe, '/', n > 0 ? n : 0);
        base = base ? base + 1 : exe;
        hex("child's /proc/self/exe ends", base, n - (base - exe));
        return 3;
    }
    const char *top = argc > 1 ? argv[1] : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/bytenames", top);
    mkdir(dir, 0755);
    if (chdir(dir)) {
        printf("chdir: %s\n", strerror(errno));
        return 1;
    }
    const char ff[] = "a\xff" "b";
    const char fe[] = "a\xfe" "b";
    // U+F7FF as valid UTF-8, then a lone byte of it, a lone lead byte.
    const char pua[] = "a\xef\x9f\xbf" "b";
    const char lone[] = "a\xef" "b";
    const char lead[] = "\xc3(";
    writes(ff, "ff");
    writes(fe, "fe");
    writes(pua, "pua");
    writes(lone, "lone");
    writes(lead, "lead");
    writes(ff, "again");
    reads("read a\\xffb", ff);
    reads("read a\\xfeb", fe);
    reads("read a<U+F7FF>b", pua);
    reads("read a\\xefb", lone);
    reads("read \\xc3(", lead);
    struct stat st;
    say("stat a\\xffb size", stat(ff, &st) == 0 ? (long)st.st_size : -1);
    say("stat a\\xfdb", stat("a\xfd" "b", &st));
    list("after five files");

    say("rename a\\xffb to \\xff\\xff", rename(ff, "\xff\xff"));
    reads("read \\xff\\xff", "\xff\xff");
    reads("read a\\xffb", ff);
    // A descriptor's name (before the link: a file of two names is shown
    // by one of them).
    char buf[256];
    ssize_t n;
    int fd = open("\xff\xff", O_RDONLY);
    char fdlink[64];
    snprintf(fdlink, sizeof fdlink, "/proc/self/fd/%d", fd);
    n = readlink(fdlink, buf, sizeof buf);
    if (n > 0) {
        const char *base = memrchr(buf, '/', n);
        base = base ? base + 1 : buf;
        hex("/proc/self/fd's name ends", base, n - (base - buf));
    } else
        say("readlink /proc/self/fd", -1);
    close(fd);

    say("link", link("\xff\xff", "\x80link"));
    say("symlink", symlink("a\xfe" "b", "\x81sym"));
    n = readlink("\x81sym", buf, sizeof buf);
    if (n >= 0)
        hex("readlink", buf, n);
    else
        say("readlink", -1);
    reads("through the link", "\x81sym");

    // A directory's name in getcwd and /proc/self/cwd.
    say("mkdir \\xfe\\xfd", mkdir("\xfe\xfd", 0755));
    say("chdir", chdir("\xfe\xfd"));
    if (getcwd(buf, sizeof buf)) {
        const char *base = strrchr(buf, '/') + 1;
        hex("getcwd ends", base, strlen(base));
    }
    n = readlink("/proc/self/cwd", buf, sizeof buf);
    if (n > 0) {
        const char *base = memrchr(buf, '/', n) + 1;
        hex("/proc/self/cwd ends", base, n - (base - buf));
    }
    say("chdir ..", chdir(".."));

    // The limit is 255 bytes, however many of them are not UTF-8.
    char longname[300];
    memset(longname, 0xff, 255);
    longname[255] = 0;
    fd = open(longname, O_WRONLY | O_CREAT, 0644);
    say("255 bytes of 0xff", fd < 0 ? -1 : 0);
    close(fd);
    longname[255] = (char)0xff;
    longname[256] = 0;
    say("256 bytes of 0xff", open(longname, O_WRONLY | O_CREAT, 0644));
    longname[255] = 0;
    say("unlink the 255", unlink(longname));

    // A program under such a name.
    char self[512];
    n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        int in = open(self, O_RDONLY);
        int out = open("\xf0prog", O_WRONLY | O_CREAT | O_TRUNC, 0755);
        ssize_t r;
        while ((r = read(in, buf, sizeof buf)) > 0)
            write(out, buf, r);
        close(in);
        close(out);
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            char *args[] = {"\xf0prog", "--child", NULL};
            execv("./\xf0prog", args);
            printf("execv: %s\n", strerror(errno));
            _exit(1);
        }
        int status;
        waitpid(c, &status, 0);
        say("child's exit", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
        unlink("\xf0prog");
    }
    list("before unlinking");

    say("unlink \\xff\\xff", unlink("\xff\xff"));
    say("unlink a\\xfeb", unlink(fe));
    say("unlink a<U+F7FF>b", unlink(pua));
    say("unlink a\\xefb", unlink(lone));
    say("unlink \\xc3(", unlink(lead));
    say("unlink link", unlink("\x80link"));
    say("unlink sym", unlink("\x81sym"));
    say("rmdir \\xfe\\xfd", rmdir("\xfe\xfd"));
    say("unlink again", unlink(fe));
    list("at the end");
    chdir("/");
    say("rmdir", rmdir(dir));
    return 0;
}
