/* Files and directories on the file system: create, write, seek, read,
 * stat, list, rename, unlink, and their errors.  argv[1]: a scratch
 * directory to work in. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void check(const char *what, int r)
{
    printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}

static int cmp(const void *a, const void *b) { return strcmp(*(char **)a, *(char **)b); }

int main(int argc, char **argv)
{
    if (argc < 2 || chdir(argv[1]) < 0) {
        printf("usage: files SCRATCH_DIR\n");
        return 2;
    }
    check("mkdir w", mkdir("w", 0755));
    check("mkdir w again", mkdir("w", 0755));
    int fd = open("w/a.txt", O_CREAT | O_WRONLY | O_TRUNC, 0644);
    check("open w/a.txt", fd);
    printf("write: %zd\n", write(fd, "hello, file\n", 12));
    printf("lseek end: %ld\n", (long)lseek(fd, 0, SEEK_END));
    printf("pwrite: %zd\n", pwrite(fd, "J", 1, 0));
    close(fd);
    char buf[64] = {0};
    fd = open("w/a.txt", O_RDONLY);
    printf("read: %zd '%.*s'\n", read(fd, buf, sizeof buf), 11, buf);
    printf("lseek 7: %ld\n", (long)lseek(fd, 7, SEEK_SET));
    memset(buf, 0, sizeof buf);
    printf("read after seek: %zd '%s'", read(fd, buf, sizeof buf), buf);
    printf("read at end: %zd\n", read(fd, buf, sizeof buf));
    struct stat st;
    check("fstat", fstat(fd, &st));
    printf("size %ld regular %d\n", (long)st.st_size, S_ISREG(st.st_mode));
    close(fd);
    check("stat w", stat("w", &st));
    printf("dir %d\n", S_ISDIR(st.st_mode));
    fd = open("w/a.txt", O_WRONLY | O_APPEND);
    write(fd, "more\n", 5);
    close(fd);
    check("stat a", stat("w/a.txt", &st));
    printf("size after append %ld\n", (long)st.st_size);
    for (int i = 0; i < 3; i++) {
        char name[32];
        snprintf(name, sizeof name, "w/f%d", i);
        close(open(name, O_CREAT | O_WRONLY, 0600));
    }
    check("rename", rename("w/f0", "w/g0"));
    DIR *d = opendir("w");
    struct dirent *e;
    char *names[16];
    int n = 0;
    while ((e = readdir(d)) && n < 16)
        names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    printf("entries:");
    for (int i = 0; i < n; i++)
        printf(" %s", names[i]);
    printf("\n");
    check("rmdir non-empty", rmdir("w"));
    check("open missing", open("w/missing", O_RDONLY));
    check("open O_EXCL existing", open("w/a.txt", O_CREAT | O_EXCL | O_WRONLY, 0644));
    check("open dir for writing", open("w", O_WRONLY));
    check("unlink dir", unlink("w"));
    check("read bad fd", (int)read(77, buf, 1));
    check("chdir to file", chdir("w/a.txt"));
    fd = open("w/a.txt", O_RDONLY);
    check("unlink open file", unlink("w/a.txt"));
    memset(buf, 0, sizeof buf);
    printf("read after unlink: %zd\n", read(fd, buf, 5));
    close(fd);
    const char *rm[] = {"w/f1", "w/f2", "w/g0"};
    for (int i = 0; i < 3; i++)
        check(rm[i], unlink(rm[i]));
    check("rmdir", rmdir("w"));
    /* a directory is not moved into itself or below it; kinds must match */
    mkdir("r", 0755);
    mkdir("r/sub", 0755);
    close(open("r/file", O_CREAT | O_WRONLY, 0644));
    check("rename dir into its subdir", rename("r", "r/sub/r"));
    check("rename dir onto itself below", rename("r", "r/sub"));
    check("rename dir over a file", rename("r/sub", "r/file"));
    check("rename file over a dir", rename("r/file", "r/sub"));
    check("rename dir to .", rename("r/sub", "r/."));
    printf("r/sub still there: %d\n", access("r/sub", F_OK) == 0);
    /* a write or read of a file moves all of it in one call (1 MiB) */
    static char big[1 << 20];
    memset(big, 'b', sizeof big);
    fd = open("r/big", O_CREAT | O_RDWR | O_TRUNC, 0644);
    printf("write 1 MiB: %zd\n", write(fd, big, sizeof big));
    printf("pread 1 MiB: %zd\n", pread(fd, big, sizeof big, 0));
    close(fd);
    int z = open("/dev/zero", O_RDONLY);
    printf("read 1 MiB of /dev/zero: %zd\n", read(z, big, sizeof big));
    close(z);
    /* a FIFO is made, listed and stat'ed as one (conformance/fifo.c opens
     * and uses them) */
    check("mkfifo", mkfifo("r/fifo", 0600));
    check("mkfifo again", mkfifo("r/fifo", 0600));
    struct stat fst;
    stat("r/fifo", &fst);
    printf("a FIFO: %d, mode %o\n", S_ISFIFO(fst.st_mode), fst.st_mode & 07777);
    DIR *rd = opendir("r");
    struct dirent *re;
    int fifo_type = -1, sub_type = -1;
    while ((re = readdir(rd))) {
        if (strcmp(re->d_name, "fifo") == 0)
            fifo_type = re->d_type;
        if (strcmp(re->d_name, "sub") == 0)
            sub_type = re->d_type;
    }
    closedir(rd);
    printf("d_type of the FIFO %d, of the directory %d\n", fifo_type, sub_type);
    check("unlink the FIFO", unlink("r/fifo"));
    unlink("r/big");
    unlink("r/file");
    rmdir("r/sub");
    check("rmdir r", rmdir("r"));
    char cwd[256];
    printf("getcwd: %s\n", getcwd(cwd, sizeof cwd) ? "ok" : strerror(errno));
    return 0;
}
