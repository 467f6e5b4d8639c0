/* File times: set when a file is made, mtime and ctime by writes and
 * truncation, ctime alone by chmod, link and rename, a directory's by the
 * names in it; utimensat (explicit, UTIME_NOW, UTIME_OMIT, futimens,
 * errors), utimes and utime read back exactly.  Only relations and times
 * the program set are printed (the clocks differ from the host's). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <utime.h>

static char dir[512];

static struct stat st(const char *name)
{
    char p[600];
    struct stat s;
    memset(&s, 0, sizeof s);
    snprintf(p, sizeof p, "%s/%s", dir, name);
    if (stat(p, &s) != 0)
        printf("stat %s: %s\n", name, strerror(errno));
    return s;
}

static int later(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

static int same(struct timespec a, struct timespec b)
{
    return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

static void say(const char *what, int r)
{
    if (r < 0)
        printf("%s: -1 %s\n", what, strerror(errno));
    else
        printf("%s: %d\n", what, r);
}

int main(int argc, char **argv)
{
    snprintf(dir, sizeof dir, "%s/times-test", argc > 1 ? argv[1] : "/tmp");
    mkdir(dir, 0755);
    int d = open(dir, O_RDONLY | O_DIRECTORY);
    unlink("f");
    fchdir(d);
    unlink("f");
    unlink("g");
    unlink("h");

    struct stat d0 = st(".");
    usleep(20000);
    int fd = open("f", O_CREAT | O_RDWR, 0644);
    struct stat f0 = st("f");
    printf("a new file's three times are equal: %d\n", same(f0.st_atim, f0.st_mtim) && same(f0.st_mtim, f0.st_ctim));
    struct stat d1 = st(".");
    printf("making it changed the directory's mtime and ctime: %d %d\n", later(d1.st_mtim, d0.st_mtim),
           later(d1.st_ctim, d0.st_ctim));

    usleep(20000);
    write(fd, "hello", 5);
    struct stat f1 = st("f");
    printf("a write: mtime later %d, ctime later %d, mtime == ctime %d\n", later(f1.st_mtim, f0.st_mtim),
           later(f1.st_ctim, f0.st_ctim), same(f1.st_mtim, f1.st_ctim));
    usleep(20000);
    write(fd, "", 0);
    struct stat f2 = st("f");
    printf("an empty write leaves them: %d\n", same(f2.st_mtim, f1.st_mtim));
    usleep(20000);
    ftruncate(fd, 2);
    struct stat f3 = st("f");
    printf("ftruncate: mtime later %d\n", later(f3.st_mtim, f2.st_mtim));
    usleep(20000);
    fchmod(fd, 0600);
    struct stat f4 = st("f");
    printf("chmod: ctime later %d, mtime the same %d\n", later(f4.st_ctim, f3.st_ctim), same(f4.st_mtim, f3.st_mtim));
    usleep(20000);
    link("f", "g");
    struct stat f5 = st("f");
    printf("link: ctime later %d, mtime the same %d\n", later(f5.st_ctim, f4.st_ctim), same(f5.st_mtim, f4.st_mtim));
    usleep(20000);
    struct stat d2 = st(".");
    rename("g", "h");
    struct stat d3 = st("."), f6 = st("h");
    printf("rename: the directory's mtime later %d, the file's ctime later %d\n", later(d3.st_mtim, d2.st_mtim),
           later(f6.st_ctim, f5.st_ctim));

    /* Explicit times read back exactly. */
    struct timespec ts[2] = {{1000000, 123456789}, {2000000, 987654321}};
    say("utimensat", utimensat(d, "f", ts, 0));
    struct stat f7 = st("f");
    printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)f7.st_atim.tv_sec, f7.st_atim.tv_nsec, (long)f7.st_mtim.tv_sec,
           f7.st_mtim.tv_nsec);
    printf("and ctime is not what was set: %d\n", !same(f7.st_ctim, ts[1]));
    struct timespec omit[2] = {{0, UTIME_OMIT}, {3000000, 5}};
    say("utimensat, atime omitted", utimensat(d, "f", omit, 0));
    struct stat f8 = st("f");
    printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)f8.st_atim.tv_sec, f8.st_atim.tv_nsec, (long)f8.st_mtim.tv_sec,
           f8.st_mtim.tv_nsec);
    struct timespec now[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    say("utimensat, mtime now", utimensat(d, "f", now, 0));
    struct stat f9 = st("f");
    printf("mtime changed %d, atime kept %d\n", f9.st_mtim.tv_sec != 3000000, same(f9.st_atim, f8.st_atim));
    struct timespec both_omit[2] = {{0, UTIME_OMIT}, {0, UTIME_OMIT}};
    say("utimensat, both omitted", utimensat(d, "f", both_omit, 0));
    say("futimens to given times", futimens(fd, ts));
    struct stat f10 = st("f");
    printf("mtime %ld.%09ld\n", (long)f10.st_mtim.tv_sec, f10.st_mtim.tv_nsec);
    usleep(20000);
    say("futimens to now", futimens(fd, NULL));
    struct stat f11 = st("f");
    printf("now is not what was set: %d, atime == mtime %d\n", f11.st_mtim.tv_sec != 2000000,
           same(f11.st_atim, f11.st_mtim));

    struct utimbuf ub = {.actime = 4000000, .modtime = 5000000};
    say("utime", utime("f", &ub));
    struct stat f12 = st("f");
    printf("atime %ld mtime %ld (ns %ld)\n", (long)f12.st_atim.tv_sec, (long)f12.st_mtim.tv_sec, f12.st_mtim.tv_nsec);
    struct timeval tv[2] = {{6000000, 1}, {7000000, 999999}};
    say("utimes", utimes("f", tv));
    struct stat f13 = st("f");
    printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)f13.st_atim.tv_sec, f13.st_atim.tv_nsec, (long)f13.st_mtim.tv_sec,
           f13.st_mtim.tv_nsec);

    /* Errors. */
    struct timespec bad[2] = {{0, 1000000000}, {0, 0}};
    say("utimensat with tv_nsec of a second", utimensat(d, "f", bad, 0));
    say("utimensat with an unknown flag", utimensat(d, "f", NULL, 0x4000));
    say("utimensat of a missing file", utimensat(d, "nosuch", NULL, 0));
    say("futimens of a bad descriptor", futimens(999, NULL));
    struct timeval badtv[2] = {{0, 1000000}, {0, 0}};
    say("utimes with tv_usec of a second", utimes("f", badtv));

    /* The newer of two files (test -nt). */
    int a = open("a", O_CREAT | O_WRONLY, 0644);
    usleep(20000);
    int b = open("b", O_CREAT | O_WRONLY, 0644);
    struct stat sa = st("a"), sb = st("b");
    printf("b is newer than a: %d\n", later(sb.st_mtim, sa.st_mtim));
    close(a);
    close(b);
    close(fd);
    unlink("a");
    unlink("b");
    unlink("f");
    unlink("h");
    fchdir(d);
    chdir("..");
    say("rmdir", rmdir(dir));
    return 0;
}
