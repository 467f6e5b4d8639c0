/* Host interface of the Keep SFI mini libc.  In a fault domain these are
   imports (calls through the domain's trampolines to the embedder); in the
   native build they are Linux system calls (host_native.c). */
#ifndef SFI_HOST_H
#define SFI_HOST_H
long sfi_host_write(long fd, const void *buf, long n);
long sfi_host_read(long fd, void *buf, long n);
long sfi_host_open(const char *path, long flags);
long sfi_host_close(long fd);
long sfi_host_lseek(long fd, long off, long whence);
unsigned long sfi_host_heap(long which); /* 0: start, 1: end */
unsigned long sfi_host_clock(void);      /* monotonic nanoseconds */
_Noreturn void sfi_host_exit(long code);
#endif
