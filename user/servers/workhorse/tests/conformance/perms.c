// Owners and permissions: chmod, chown (and what it clears), umask, kept
// and shown by stat; a setgid directory's group; the set*id calls and
// their EPERMs, getgroups/setgroups, /proc/self/status; then, as uid
// 1000, what the mode bits refuse: open (EACCES for read, write, truncate,
// create), access and faccessat (real or effective ids), search of a
// directory, mkdir, unlink, rename and link in a directory it may not
// write, a sticky directory (EPERM), chmod and chown of another's file
// (EPERM), truncate, execve of a file it may not execute, kill of root's
// process (EPERM but for SIGCONT in the session) and of its own.  Paths are
// relative to a directory made here, so the scratch directory's own mode
// does not matter.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static void say(const char *what, long r) {
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %ld\n", what, r);
    fflush(stdout);
}

static void show(const char *name) {
    struct stat st;
    if (lstat(name, &st)) {
        printf("stat %s: %s\n", name, strerror(errno));
        return;
    }
    printf("stat %s: mode %o uid %u gid %u\n", name, st.st_mode, st.st_uid, st.st_gid);
    fflush(stdout);
}

static void ids(const char *what) {
    uid_t r, e, s;
    gid_t gr, ge, gs;
    getresuid(&r, &e, &s);
    getresgid(&gr, &ge, &gs);
    printf("%s: uid %u %u %u gid %u %u %u (getuid %u geteuid %u getgid %u getegid %u)\n", what, r, e, s, gr, ge, gs,
           getuid(), geteuid(), getgid(), getegid());
    fflush(stdout);
}

static void status_lines(void) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "Uid:", 4) || !strncmp(line, "Gid:", 4) || !strncmp(line, "Groups:", 7)) {
            // Trailing blanks differ in no way that matters; drop them.
            size_t n = strlen(line);
            while (n && (line[n - 1] == '\n' || line[n - 1] == ' '))
                line[--n] = 0;
            printf("  %s\n", line);
        }
    if (f)
        fclose(f);
    fflush(stdout);
}

// open, the descriptor closed again: 0 or -1 (errno set).
static int opened(const char *name, int flags) {
    int fd = open(name, flags, 0644);
    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

static int make(const char *name, int mode) {
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0)
        return -1;
    write(fd, "data\n", 5);
    close(fd);
    return chmod(name, mode);
}

static void as_user(void) {
    say("setgroups(0)", setgroups(0, NULL));
    say("setgid(1000)", setgid(1000));
    say("setuid(1000)", setuid(1000));
    ids("as 1000");
    status_lines();
    say("getgroups", getgroups(0, NULL));
    say("setuid(0)", setuid(0));
    say("setgid(0)", setgid(0));
    say("setresuid(-1, 0, -1)", setresuid(-1, 0, -1));
    say("setreuid(0, -1)", setreuid(0, -1));
    gid_t g = 5;
    say("setgroups as 1000", setgroups(1, &g));
    say("setuid(1000) again", setuid(1000));

    // Signals: only to processes of its own uid, but SIGCONT in its session.
    say("kill(root's process, 0)", kill(getppid(), 0));
    say("kill(root's process, SIGTERM)", kill(getppid(), SIGTERM));
    say("kill(root's process, SIGCONT)", kill(getppid(), SIGCONT));
    say("kill(its group, 0) (root's process in it too)", kill(0, 0));
    fflush(stdout);
    pid_t kid = fork();
    if (kid == 0) {
        pause();
        _exit(0);
    }
    say("kill(its own child, SIGTERM)", kill(kid, SIGTERM));
    int gst;
    waitpid(kid, &gst, 0);
    say("its child ended by", WIFSIGNALED(gst) ? WTERMSIG(gst) : -1);

    say("open root's 0600 for reading", opened("secret", O_RDONLY));
    say("open root's 0644 for reading", opened("public", O_RDONLY));
    say("open root's 0644 for writing", opened("public", O_WRONLY));
    say("open root's 0644 read-only with O_TRUNC", opened("public", O_RDONLY | O_TRUNC));
    say("open root's 0666 for writing", opened("shared", O_WRONLY));
    say("open root's group-writable 0664 (not in its group)", opened("groupw", O_WRONLY));
    say("access root's 0600 R_OK", access("secret", R_OK));
    say("access root's 0600 F_OK", access("secret", F_OK));
    say("access root's 0644 R_OK", access("public", R_OK));
    say("access root's 0644 W_OK", access("public", W_OK));
    say("access root's 0755 X_OK", access("tool", X_OK));
    say("access root's 0644 X_OK", access("public", X_OK));
    say("access bad mode", access("public", 8));
    say("create in root's 0755 directory", opened("newfile", O_WRONLY | O_CREAT));
    say("mkdir in root's 0755 directory", mkdir("newdir", 0755));
    say("unlink in root's 0755 directory", unlink("public"));
    say("rename in root's 0755 directory", rename("public", "moved"));
    // Linux's protected hard links (Debian's default): only a file it
    // owns, or a plain file it may read and write.
    say("link root's 0644 in root's 0755 directory", link("public", "linked"));
    say("link root's 0666 in root's 0755 directory", link("shared", "linked"));
    say("link root's 0644 into mine", link("public", "mine/linked"));
    say("link root's 0666 into mine", link("shared", "mine/linked"));
    say("unlink it", unlink("mine/linked"));
    say("symlink in root's 0755 directory", symlink("public", "symlinked"));
    say("truncate root's 0644", truncate("public", 0));
    say("chmod root's file", chmod("public", 0777));
    say("chown root's file", chown("public", 1000, 1000));
    say("stat in root's 0700 directory", access("closed/inside", F_OK));
    say("open in root's 0700 directory", opened("closed/inside", O_RDONLY));
    say("list root's 0311 directory", opened("listless", O_RDONLY | O_DIRECTORY));
    say("open in root's 0311 directory by name", opened("listless/inside", O_RDONLY));

    // Its own directory (made 0777 by root, then given to it).
    say("chdir mine", chdir("mine"));
    say("create in mine", make("own", 0640));
    show("own");
    say("chmod own 0604", chmod("own", 0604));
    show("own");
    say("chown own to 0", chown("own", 0, -1));
    say("chown own to group 5 (not a member)", chown("own", -1, 5));
    say("chown own to its own ids", chown("own", 1000, 1000));
    say("fchown own -1 -1", ({
            int fd = open("own", O_RDONLY);
            int r = fchown(fd, -1, -1);
            close(fd);
            r;
        }));
    say("chmod own 0200", chmod("own", 0200));
    say("open own 0200 for reading", opened("own", O_RDONLY));
    say("open own 0200 for writing", opened("own", O_WRONLY));
    say("access own 0200 R_OK", access("own", R_OK));
    // The owner's bits alone count for the owner.
    say("chmod own 0077", chmod("own", 0077));
    say("open own 0077 for reading", opened("own", O_RDONLY));
    say("chmod own 0700", chmod("own", 0700));
    say("execve own 0700 (not a program)", execl("./own", "own", (char *)NULL));
    say("chdir ..", chdir(".."));
    say("execve root's 0700 program", execl("./private-tool", "private-tool", (char *)NULL));

    // A sticky directory (1777) of root's: its files are their owners'.
    say("unlink root's file in sticky", unlink("sticky/roots"));
    say("rename root's file in sticky", rename("sticky/roots", "sticky/mine"));
    say("create in sticky", make("sticky/mine", 0644));
    say("unlink own file in sticky", unlink("sticky/mine"));
    say("unlink root's file in 0777 (not sticky)", unlink("open/roots"));
}

// A child that, as uid 1000, looks at a file and ends: what root does next
// must be judged as root's.
static void touch_as_1000(void) {
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        setgid(1000);
        setuid(1000);
        access("public", R_OK);
        _exit(0);
    }
    waitpid(c, NULL, 0);
}

int main(int argc, char **argv) {
    const char *top = argc > 1 ? argv[1] : "/tmp";
    char dir[512];
    snprintf(dir, sizeof dir, "%s/perms", top);
    mkdir(dir, 0755);
    chmod(dir, 0755);
    if (chdir(dir)) {
        printf("chdir: %s\n", strerror(errno));
        return 1;
    }
    umask(022);
    say("umask", umask(027));
    say("create under umask 027", open("masked", O_WRONLY | O_CREAT, 0777) >= 0 ? 0 : -1);
    show("masked");
    umask(022);
    say("mkdir under umask 022", mkdir("d", 0777));
    show("d");

    make("secret", 0600);
    make("public", 0644);
    make("shared", 0666);
    make("groupw", 0664);
    chown("groupw", 0, 50);
    make("tool", 0755);
    make("private-tool", 0700);
    show("secret");
    show("groupw");
    mkdir("closed", 0700);
    make("closed/inside", 0644);
    mkdir("listless", 0311);
    chmod("listless", 0311);
    make("listless/inside", 0644);
    mkdir("mine", 0777);
    chmod("mine", 0777);
    say("chown mine to 1000", chown("mine", 1000, 1000));
    show("mine");
    mkdir("sticky", 0777);
    chmod("sticky", 01777);
    make("sticky/roots", 0666);
    mkdir("open", 0777);
    chmod("open", 0777);
    make("open/roots", 0666);
    show("sticky");

    // chown by root: setuid goes, setgid goes when the group may execute.
    make("suid", 06755);
    show("suid");
    say("chown suid", chown("suid", 7, 8));
    show("suid");
    make("sgid", 02745);
    say("chown sgid", chown("sgid", 7, -1));
    show("sgid");
    say("chown -1 -1 of a setuid file", (make("keep", 04755), chown("keep", -1, -1)));
    show("keep");
    say("lchown of a symlink", (symlink("public", "link"), lchown("link", 9, 9)));
    show("link");
    show("public");
    say("fchownat AT_SYMLINK_NOFOLLOW", fchownat(AT_FDCWD, "link", 10, 10, AT_SYMLINK_NOFOLLOW));
    show("link");
    say("fchownat bad flags", fchownat(AT_FDCWD, "link", 10, 10, 0x4));

    // A setgid directory: what is made in it takes its group, and a
    // directory made in it is setgid too.
    mkdir("sg", 0755);
    chown("sg", 0, 50);
    chmod("sg", 02775);
    make("sg/file", 0644);
    mkdir("sg/sub", 0755);
    show("sg");
    show("sg/file");
    show("sg/sub");

    // Real and effective ids: access judges by the real, AT_EACCESS by the
    // effective.
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        say("setresuid(-1, 1000, -1)", setresuid(-1, 1000, -1));
        ids("effective 1000");
        say("access 0600 (real 0)", access("secret", R_OK));
        say("faccessat AT_EACCESS 0600", faccessat(AT_FDCWD, "secret", R_OK, AT_EACCESS));
        say("open 0600 (effective 1000)", opened("secret", O_RDONLY));
        say("back to 0 by the saved id", setresuid(-1, 0, -1));
        say("open 0600 (effective 0)", opened("secret", O_RDONLY));
        say("setreuid(-1, 1000)", setreuid(-1, 1000));
        ids("after setreuid");
        say("setreuid(1000, 0)", setreuid(1000, 0));
        ids("after the swap");
        _exit(0);
    }
    waitpid(c, NULL, 0);

    fflush(stdout);
    c = fork();
    if (c == 0) {
        as_user();
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    say("child", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

    // Root's calls that name no path of their own, after another user's.
    touch_as_1000();
    int sock = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sun = {.sun_family = AF_UNIX};
    strcpy(sun.sun_path, "sock");
    say("root binds a socket in its directory", bind(sock, (struct sockaddr *)&sun, sizeof sun));
    close(sock);
    show("sock");
    unlink("sock");
    touch_as_1000();
    int m = memfd_create("m", 0);
    say("root's memfd_create", m >= 0 ? 0 : -1);
    close(m);

    // Root again: everything.
    say("root opens 0600", opened("secret", O_RDWR));
    say("root opens 0000", (make("none", 0), opened("none", O_RDWR)));
    say("root access X_OK of 0644", access("public", X_OK));
    say("root access X_OK of 0100", (chmod("none", 0100), access("none", X_OK)));
    say("root searches 0000 directory", (chmod("closed", 0), access("closed/inside", R_OK)));
    say("root execve of 0644", execl("./public", "public", (char *)NULL));
    chmod("closed", 0700);

    const char *names[] = {"masked", "secret", "public", "shared", "groupw", "tool", "private-tool", "closed/inside",
                           "listless/inside", "mine/own", "sticky/roots", "sticky/mine", "open/roots", "suid",
                           "sgid", "keep", "link", "sg/file", "none", NULL};
    for (int i = 0; names[i]; i++)
        unlink(names[i]);
    const char *dirs[] = {"d", "closed", "listless", "mine", "sticky", "open", "sg/sub", "sg", NULL};
    for (int i = 0; dirs[i]; i++)
        rmdir(dirs[i]);
    chdir("/");
    say("rmdir", rmdir(dir));
    return 0;
}
