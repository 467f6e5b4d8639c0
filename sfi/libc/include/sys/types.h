#ifndef _SYS_TYPES_H
#define _SYS_TYPES_H
#include <stddef.h>
typedef long ssize_t;
typedef long off_t;
typedef int pid_t;
typedef unsigned mode_t;
#endif
