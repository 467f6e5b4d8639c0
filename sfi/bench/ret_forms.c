/* Cycles per call of the return forms in ret_forms.s, natively (not part of
 * make sfi-bench): gcc -O2 -no-pie -o ret_forms ret_forms.c ret_forms.s
 * Best of five rounds of 10 million calls each, CPU time of the thread,
 * cycles at the TSC rate given as the argument in GHz (default 2.6). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void setbase(void);
long loop_plain(long), loop_push(long), loop_split(long), loop_jmp(long);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    const long n = 10000000;
    double ghz = argc > 1 ? atof(argv[1]) : 2.6;
    long (*fs[])(long) = {loop_plain, loop_push, loop_split, loop_jmp};
    const char *names[] = {"plain ret", "masked push/ret", "slot masked in place", "masked jmp"};
    double best[4] = {1e9, 1e9, 1e9, 1e9};
    setbase();
    for (int r = 0; r < 5; r++)
        for (int i = 0; i < 4; i++) {
            double t = now();
            long x = fs[i](n);
            t = now() - t;
            if (x != n)
                abort();
            if (t < best[i])
                best[i] = t;
        }
    for (int i = 0; i < 4; i++)
        printf("%-22s %5.2f cycles per call\n", names[i], best[i] / n * ghz * 1e9);
    return 0;
}
