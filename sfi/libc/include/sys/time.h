#ifndef _SYS_TIME_H
#define _SYS_TIME_H
#include <time.h>
struct timeval { long tv_sec; long tv_usec; };
int gettimeofday(struct timeval *restrict tv, void *restrict tz);
#endif
