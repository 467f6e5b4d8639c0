#ifndef _SETJMP_H
#define _SETJMP_H
typedef unsigned long jmp_buf[8];
int setjmp(jmp_buf b) __attribute__((returns_twice));
_Noreturn void longjmp(jmp_buf b, int v);
#define _setjmp setjmp
#define _longjmp longjmp
#endif
