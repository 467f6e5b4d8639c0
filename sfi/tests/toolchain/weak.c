/* Undefined weak symbols are NULL, as natively: their addresses (through
   the GOT, in initialised data, compared, called only when not NULL) must
   be 0 in the sandbox too, and they are never imports.  A weak symbol that
   another object file defines (weak_def.c) resolves to it. */
#include <stdio.h>
#include <stdint.h>

extern int missing_fn(int) __attribute__((weak));
extern int missing_var __attribute__((weak));
extern int missing_arr[] __attribute__((weak));
extern int present_fn(int) __attribute__((weak));     /* defined in weak_def.c */
extern int present_var __attribute__((weak));         /* defined in weak_def.c */

int (*const fn_table[])(int) = {missing_fn, present_fn, 0};
int *const var_table[] = {&missing_var, &present_var, &missing_arr[2]};
static const void *const mixed[] = {(const void *)missing_fn, "text"};

__attribute__((noinline)) static int call_if(int (*f)(int), int x) { return f ? f(x) : -1; }

int main(int argc, char **argv) {
    (void)argv;
    volatile uintptr_t a = (uintptr_t)&missing_fn;
    printf("missing_fn %s\n", missing_fn ? "non-null" : "null");
    printf("&missing_var %lu\n", (unsigned long)(uintptr_t)&missing_var);
    printf("&missing_arr[2] %lu\n", (unsigned long)(uintptr_t)&missing_arr[2]);
    printf("address in a volatile %lu\n", (unsigned long)a);
    if (missing_fn)
        printf("called missing_fn: %d\n", missing_fn(1));
    else
        printf("missing_fn not called\n");
    if (present_fn)
        printf("present_fn(20) = %d\n", present_fn(20));
    printf("present_var %d\n", &present_var ? present_var : -1);
    for (int i = 0; i < 3; i++)
        printf("fn_table[%d] %s -> %d\n", i, fn_table[i] ? "set" : "null", call_if(fn_table[i], i + 1));
    printf("var_table %d %d %lu\n", var_table[0] == 0, *var_table[1], (unsigned long)(uintptr_t)var_table[2]);
    printf("mixed %d %s\n", mixed[0] == 0, (const char *)mixed[1]);
    /* The same checks with the compiler unable to fold them. */
    int n = 0;
    for (int i = 0; i < argc + 2; i++)
        n += fn_table[i % 2] != 0;
    printf("non-null entries %d\n", n);
    return 0;
}
