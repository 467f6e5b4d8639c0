// Extended attributes of files and directories in the scratch directory:
// setxattr, getxattr, listxattr (names sorted), removexattr and their
// l* and f* forms; XATTR_CREATE and XATTR_REPLACE; the sizes (0 asks, too
// small is ERANGE, a value past 64 KiB E2BIG); an empty value;
// the namespaces (user., trusted., security.; another prefix ENOTSUP, a
// prefix alone EINVAL, an empty name ERANGE); a symbolic link's own (none,
// EPERM to set) and its target's; kept across rename and link, gone with
// the file; ctime changed by a set; as uid 1000 (a forked child): read on
// a file it may read, EACCES to change one it may not write, trusted.
// hidden and refused; errors for missing files and bad descriptors.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

static int cmp(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

// The names of a list, sorted (the order differs between file systems).
static void names(const char *what, const char *list, long n) {
    if (n < 0) {
        say(what, n);
        return;
    }
    const char *v[64];
    int k = 0;
    for (long i = 0; i < n && k < 64; i += strlen(list + i) + 1)
        v[k++] = list + i;
    qsort(v, k, sizeof v[0], cmp);
    printf("%s: %ld bytes:", what, n);
    for (int i = 0; i < k; i++)
        printf(" %s", v[i]);
    printf("\n");
    fflush(stdout);
}

static void value(const char *what, const char *path, const char *name) {
    char b[128];
    long n = getxattr(path, name, b, sizeof b);
    if (n < 0)
        say(what, n);
    else
        printf("%s: %ld \"%.*s\"\n", what, n, (int)n, b);
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *top = argc > 1 ? argv[1] : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/xattrs", top);
    mkdir(dir, 0755);
    chmod(dir, 0755);
    if (chdir(dir)) {
        printf("chdir: %s\n", strerror(errno));
        return 1;
    }
    int fd = open("f", O_RDWR | O_CREAT | O_TRUNC, 0644);
    char list[1024];

    names("a new file's list", list, listxattr("f", list, sizeof list));
    say("get of none", getxattr("f", "user.none", list, sizeof list));
    say("set user.one", setxattr("f", "user.one", "first", 5, 0));
    value("get user.one", "f", "user.one");
    say("size asked", getxattr("f", "user.one", NULL, 0));
    say("too small", getxattr("f", "user.one", list, 3));
    say("create of an existing", setxattr("f", "user.one", "x", 1, XATTR_CREATE));
    say("replace of a missing", setxattr("f", "user.two", "x", 1, XATTR_REPLACE));
    say("bad flags", setxattr("f", "user.two", "x", 1, 4));
    say("replace", setxattr("f", "user.one", "second", 6, XATTR_REPLACE));
    value("get after replace", "f", "user.one");
    say("create user.two", setxattr("f", "user.two", "", 0, XATTR_CREATE));
    value("empty value", "f", "user.two");
    say("set trusted.t", setxattr("f", "trusted.t", "root's", 6, 0));
    say("set security.s", setxattr("f", "security.s", "label", 5, 0));
    names("list", list, listxattr("f", list, sizeof list));
    say("list size asked", listxattr("f", NULL, 0));
    say("list too small", listxattr("f", list, 5));
    say("other prefix", setxattr("f", "other.x", "1", 1, 0));
    say("prefix alone", setxattr("f", "user.", "1", 1, 0));
    say("empty name", setxattr("f", "", "1", 1, 0));
    char longname[300];
    memset(longname, 'n', sizeof longname);
    memcpy(longname, "user.", 5);
    longname[256] = 0;
    say("name of 256 bytes", setxattr("f", longname, "1", 1, 0));
    static char big[65537];
    memset(big, 'v', sizeof big);
    // (64 KiB itself is more than some file systems take.)
    say("value of 1000 bytes", setxattr("f", "user.big", big, 1000, 0));
    say("its size", getxattr("f", "user.big", NULL, 0));
    say("value past 64 KiB", setxattr("f", "user.big2", big, 65537, 0));
    say("remove user.big", removexattr("f", "user.big"));
    say("remove again", removexattr("f", "user.big"));

    // By descriptor.
    say("fset", fsetxattr(fd, "user.fd", "byfd", 4, 0));
    char b[64];
    long n = fgetxattr(fd, "user.fd", b, sizeof b);
    printf("fget: %ld \"%.*s\"\n", n, (int)(n > 0 ? n : 0), b);
    names("flist", list, flistxattr(fd, list, sizeof list));
    say("fremove", fremovexattr(fd, "user.fd"));

    // ctime moves with a set.
    struct stat before, after;
    fstat(fd, &before);
    usleep(20000);
    setxattr("f", "user.time", "t", 1, 0);
    fstat(fd, &after);
    printf("ctime after a set is later: %d\n",
           after.st_ctim.tv_sec > before.st_ctim.tv_sec ||
               (after.st_ctim.tv_sec == before.st_ctim.tv_sec && after.st_ctim.tv_nsec > before.st_ctim.tv_nsec));
    close(fd);

    // A directory has its own.
    mkdir("d", 0755);
    say("set on a directory", setxattr("d", "user.dir", "D", 1, 0));
    value("get on the directory", "d", "user.dir");

    // A symbolic link: its target's through it, none of its own.
    symlink("f", "l");
    value("get through a link", "l", "user.one");
    say("lget of the link", lgetxattr("l", "user.one", list, sizeof list));
    say("lset user. on the link", lsetxattr("l", "user.x", "1", 1, 0));
    names("llist of the link", list, llistxattr("l", list, sizeof list));

    // Kept across rename and link; gone with the file.
    say("rename", rename("f", "g"));
    value("after rename", "g", "user.one");
    say("link", link("g", "h"));
    value("through the other name", "h", "user.one");
    unlink("g");
    unlink("h");
    fd = open("g", O_RDWR | O_CREAT, 0644);
    names("a new file of the same name", list, flistxattr(fd, list, sizeof list));
    close(fd);

    // Another user.
    int own = open("owned", O_RDWR | O_CREAT, 0644);
    fsetxattr(own, "user.a", "A", 1, 0);
    fsetxattr(own, "trusted.t", "T", 1, 0);
    close(own);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        setgid(1000);
        setuid(1000);
        value("1000 reads user.a", "owned", "user.a");
        say("1000 sets user.a", setxattr("owned", "user.a", "B", 1, 0));
        say("1000 removes user.a", removexattr("owned", "user.a"));
        say("1000 reads trusted.t", getxattr("owned", "trusted.t", list, sizeof list));
        say("1000 sets trusted.u", setxattr("owned", "trusted.u", "U", 1, 0));
        names("1000 lists", list, listxattr("owned", list, sizeof list));
        _exit(0);
    }
    waitpid(c, NULL, 0);

    // Errors.
    say("get of a missing file", getxattr("missing", "user.a", list, sizeof list));
    say("set of a missing file", setxattr("missing", "user.a", "1", 1, 0));
    say("fget of a closed descriptor", fgetxattr(999, "user.a", list, sizeof list));
    say("flist of a closed descriptor", flistxattr(999, list, sizeof list));
    void *volatile bad = (void *)8;
    say("set with a bad value address", setxattr("owned", "user.bad", bad, 4, 0));
    value("bad address set nothing", "owned", "user.bad");

    unlink("owned");
    unlink("g");
    unlink("l");
    rmdir("d");
    chdir("/");
    say("rmdir", rmdir(dir));
    return 0;
}
