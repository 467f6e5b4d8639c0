#ifndef _SIGNAL_H
#define _SIGNAL_H
typedef int sig_atomic_t;
#endif
