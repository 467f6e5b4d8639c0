/* Calling an undefined weak function faults, in the sandbox as natively
   (a call of NULL); run.py checks that sfi-run reports a fault, not an
   unresolved import.  The tail call goes the same way. */
#include <stdio.h>
extern int missing_fn(int) __attribute__((weak));
__attribute__((noinline)) int tail(int x) { return missing_fn(x); }
int main(void) {
    printf("before\n");
    fflush(stdout);
    return tail(3) + missing_fn(4);
}
