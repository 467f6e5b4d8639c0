// POSIX shared memory and named semaphores (shm_open, sem_open: files of
// /dev/shm) shared between a process and its child, as Python's
// multiprocessing uses them.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    char shm[64], sem[64];
    snprintf(shm, sizeof shm, "/keep-devshm-%d", getpid());
    snprintf(sem, sizeof sem, "/keep-devshm-sem-%d", getpid());
    struct stat st;
    printf("/dev/shm is a directory: %d\n", stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode));

    int fd = shm_open(shm, O_CREAT | O_EXCL | O_RDWR, 0600);
    printf("shm_open: %s\n", fd >= 0 ? "ok" : strerror(errno));
    printf("again with O_EXCL: %s\n", shm_open(shm, O_CREAT | O_EXCL | O_RDWR, 0600) < 0 && errno == EEXIST ? "EEXIST" : "?");
    printf("ftruncate: %d\n", ftruncate(fd, 8192));
    int *m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    printf("mmap shared: %s\n", m != MAP_FAILED ? "ok" : strerror(errno));
    m[0] = 1;
    pid_t c = fork();
    if (c == 0) {
        // A fresh open and mapping of it in the child.
        int cfd = shm_open(shm, O_RDWR, 0);
        int *cm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
        cm[1024] = cm[0] + 41;
        m[1] = 7;
        _exit(0);
    }
    int s;
    waitpid(c, &s, 0);
    printf("the child's stores: %d %d\n", m[1024], m[1]);
    char b[8];
    pread(fd, b, 4, 4096);
    printf("read through the descriptor: %d\n", *(int *)b);
    fstat(fd, &st);
    printf("size %lld mode %o\n", (long long)st.st_size, st.st_mode & 0777);
    munmap(m, 8192);
    close(fd);
    printf("shm_unlink: %d\n", shm_unlink(shm));
    printf("shm_open after unlink: %s\n", shm_open(shm, O_RDWR, 0) < 0 && errno == ENOENT ? "ENOENT" : "?");

    // A named semaphore: the child posts, the parent waits.
    sem_t *sp = sem_open(sem, O_CREAT | O_EXCL, 0600, 0);
    printf("sem_open: %s\n", sp != SEM_FAILED ? "ok" : strerror(errno));
    if (sp == SEM_FAILED) return 1;
    c = fork();
    if (c == 0) {
        sem_t *cs = sem_open(sem, 0);
        usleep(50000);
        sem_post(cs);
        sem_post(cs);
        _exit(0);
    }
    printf("sem_wait: %d\n", sem_wait(sp));
    waitpid(c, &s, 0);
    int v;
    sem_getvalue(sp, &v);
    printf("value after the child's two posts and a wait: %d\n", v);
    int t1 = sem_trywait(sp);
    int t2 = sem_trywait(sp);
    printf("sem_trywait: %d; again: %s\n", t1, t2 < 0 && errno == EAGAIN ? "EAGAIN" : "?");
    sem_close(sp);
    printf("sem_unlink: %d\n", sem_unlink(sem));
    printf("sem_open after unlink: %s\n", sem_open(sem, 0) == SEM_FAILED && errno == ENOENT ? "ENOENT" : "?");
    // An unnamed process-shared semaphore in MAP_SHARED anonymous memory.
    sem_t *us = mmap(NULL, sizeof(sem_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    sem_init(us, 1, 0);
    c = fork();
    if (c == 0) {
        usleep(50000);
        sem_post(us);
        _exit(0);
    }
    printf("process-shared sem_wait: %d\n", sem_wait(us));
    waitpid(c, &s, 0);
    return 0;
}
