// File calls archivers and copiers make: creat, the extended-attribute
// calls (a file system may keep none: ENOTSUP, or ENODATA where it does),
// lseek of /dev/null, sendfile's offset errors.  Prints what is the same
// on every Linux file system.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

static char path[512], path2[512];

static const char *err(long r) {
    if (r >= 0) return "ok";
    switch (errno) {
    case ENOENT: return "ENOENT";
    case EBADF: return "EBADF";
    case EINVAL: return "EINVAL";
    case ENOSYS: return "ENOSYS";
    case ESPIPE: return "ESPIPE";
    default: return strerror(errno);
    }
}

// No attribute here, or no attributes at all: the same to a program.
static const char *noattr(long r) {
    if (r < 0 && (errno == ENOTSUP || errno == ENODATA)) return "none";
    return err(r);
}

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    snprintf(path, sizeof path, "%s/fileops.creat", dir);
    snprintf(path2, sizeof path2, "%s/fileops.link", dir);
    unlink(path);
    unlink(path2);

    // creat: a new file, write-only, mode under the umask; an existing
    // one truncated.
    umask(022);
    int fd = syscall(SYS_creat, path, 0666);
    printf("creat: %s\n", err(fd));
    printf("write: %zd\n", write(fd, "hello, archive\n", 15));
    char b[64];
    printf("read of a creat descriptor: %s\n", err(read(fd, b, sizeof b)));
    printf("fcntl F_GETFL O_ACCMODE: %d\n", fcntl(fd, F_GETFL) & O_ACCMODE);
    struct stat st;
    fstat(fd, &st);
    printf("mode %o size %lld\n", st.st_mode & 07777, (long long)st.st_size);
    close(fd);
    fd = syscall(SYS_creat, path, 0600);
    fstat(fd, &st);
    printf("creat again: %s, size %lld, mode %o kept\n", err(fd), (long long)st.st_size, st.st_mode & 07777);
    close(fd);
    snprintf(b, sizeof b, "%s/no/such/dir/x", dir);
    printf("creat in a missing directory: %s\n", err(syscall(SYS_creat, b, 0644)));

    // A write at the largest offset there is: past every file system's
    // maximum file size, EFBIG, and the file unchanged.
    fd = open(path, O_RDWR);
    printf("pwrite at offset 2^63-1: %s\n", err(pwrite(fd, "x", 1, 0x7fffffffffffffffLL)));
    fstat(fd, &st);
    printf("size after it: %lld\n", (long long)st.st_size);
    close(fd);

    // Extended attributes.
    char list[256];
    long r = getxattr(path, "user.keep.none", b, sizeof b);
    printf("getxattr of an absent attribute: %s\n", noattr(r));
    r = lgetxattr(path, "user.keep.none", b, sizeof b);
    printf("lgetxattr: %s\n", noattr(r));
    fd = open(path, O_RDONLY);
    r = fgetxattr(fd, "user.keep.none", b, sizeof b);
    printf("fgetxattr: %s\n", noattr(r));
    r = listxattr(path, list, sizeof list);
    printf("listxattr: %s\n", r >= 0 || errno == ENOTSUP ? "answered" : err(r));
    r = llistxattr(path, list, sizeof list);
    printf("llistxattr: %s\n", r >= 0 || errno == ENOTSUP ? "answered" : err(r));
    r = flistxattr(fd, list, sizeof list);
    printf("flistxattr: %s\n", r >= 0 || errno == ENOTSUP ? "answered" : err(r));
    r = removexattr(path, "user.keep.none");
    printf("removexattr: %s\n", noattr(r));
    r = fremovexattr(fd, "user.keep.none");
    printf("fremovexattr: %s\n", noattr(r));
    r = lremovexattr(path, "user.keep.none");
    printf("lremovexattr: %s\n", noattr(r));
    snprintf(b, sizeof b, "%s/fileops.none", dir);
    printf("getxattr of a missing file: %s\n", err(getxattr(b, "user.x", list, sizeof list)));
    printf("listxattr of a missing file: %s\n", err(listxattr(b, list, sizeof list)));
    printf("setxattr of a missing file: %s\n", err(setxattr(b, "user.x", "1", 1, 0)));
    printf("fgetxattr of a closed descriptor: %s\n", err(fgetxattr(999, "user.x", list, sizeof list)));
    printf("fsetxattr of a closed descriptor: %s\n", err(fsetxattr(999, "user.x", "1", 1, 0)));
    printf("flistxattr of a closed descriptor: %s\n", err(flistxattr(999, list, sizeof list)));
    close(fd);

    // /dev/null: every seek answers 0.
    fd = open("/dev/null", O_RDWR);
    printf("lseek /dev/null SEEK_SET 100: %lld\n", (long long)lseek(fd, 100, SEEK_SET));
    printf("lseek /dev/null SEEK_END 0: %lld\n", (long long)lseek(fd, 0, SEEK_END));
    printf("lseek /dev/null SEEK_CUR 7: %lld\n", (long long)lseek(fd, 7, SEEK_CUR));
    FILE *f = fdopen(fd, "w");
    printf("fseek, ftell of /dev/null: %d %ld\n", fseek(f, 0, SEEK_END), ftell(f));
    fclose(f);

    // sendfile: a negative offset is EINVAL; a good one copies.
    int in = open(path, O_RDWR);
    write(in, "0123456789", 10);
    int out = open("/dev/null", O_WRONLY);
    off_t off = -1;
    printf("sendfile, offset -1: %s\n", err(sendfile(out, in, &off, 4)));
    off = -4096;
    printf("sendfile, offset -4096: %s\n", err(sendfile(out, in, &off, 4)));
    off = 3;
    long n = sendfile(out, in, &off, 4);
    printf("sendfile, offset 3: %ld, offset now %lld\n", n, (long long)off);
    printf("sendfile from a closed descriptor: %s\n", err(sendfile(out, 999, &off, 4)));
    close(in);
    close(out);
    unlink(path);
    return 0;
}
