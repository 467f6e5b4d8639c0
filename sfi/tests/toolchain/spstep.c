/* Small %rsp steps checked at once where the flags are dead (spstep_asm.s). */
#include <stdio.h>
int flags_after_step(void);
long step_then_branch(long x);
long step24_then_branch(long x);
int main(void) {
    printf("flags after step %d\n", flags_after_step());
    printf("step then branch %ld %ld %ld %ld\n", step_then_branch(0), step_then_branch(20), step24_then_branch(0), step24_then_branch(20));
    return 0;
}
