#ifndef _UNISTD_H
#define _UNISTD_H
#include <stddef.h>
#include <sys/types.h>
ssize_t read(int fd, void *b, size_t n);
ssize_t write(int fd, const void *b, size_t n);
int close(int fd);
off_t lseek(int fd, off_t o, int w);
int isatty(int fd);
int unlink(const char *p);
pid_t getpid(void);
#endif
