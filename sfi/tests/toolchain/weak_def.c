/* The definitions of weak.c's weak symbols that do exist. */
int present_fn(int x) { return x * 2 + 1; }
int present_var = 42;
