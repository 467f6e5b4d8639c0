/* A small stack-machine interpreter: switch dispatch (jump tables), a table
   of native functions (indirect calls), errors recovered with longjmp. */
#include <stdio.h>
#include <stdlib.h>
#include <setjmp.h>
enum { PUSH, ADD, SUB, MUL, DIV, LT, JZ, JMP, DUP, SWAP, OVER, DROP, CALLN, PRINT, HALT, LOAD, STORE };
static jmp_buf err;
static long gcd(long a, long b) { while (b) { long t = a % b; a = b; b = t; } return a; }
static long isqrt(long a, long b) { (void)b; long r = 0; while ((r + 1) * (r + 1) <= a) r++; return r; }
static long (*natives[])(long, long) = {gcd, isqrt};
static long run(const long *code, long *vars) {
    long st[256]; int sp = 0; long pc = 0, steps = 0;
    for (;;) {
        steps++;
        long op = code[pc++];
        switch (op) {
        case PUSH: st[sp++] = code[pc++]; break;
        case ADD: sp--; st[sp-1] += st[sp]; break;
        case SUB: sp--; st[sp-1] -= st[sp]; break;
        case MUL: sp--; st[sp-1] *= st[sp]; break;
        case DIV: sp--; if (!st[sp]) longjmp(err, 1); st[sp-1] /= st[sp]; break;
        case LT: sp--; st[sp-1] = st[sp-1] < st[sp]; break;
        case JZ: if (!st[--sp]) pc = code[pc]; else pc++; break;
        case JMP: pc = code[pc]; break;
        case DUP: st[sp] = st[sp-1]; sp++; break;
        case SWAP: { long t = st[sp-1]; st[sp-1] = st[sp-2]; st[sp-2] = t; break; }
        case OVER: st[sp] = st[sp-2]; sp++; break;
        case DROP: sp--; break;
        case CALLN: { long f = code[pc++]; sp--; st[sp-1] = natives[f](st[sp-1], st[sp]); break; }
        case PRINT: printf("%ld\n", st[--sp]); break;
        case LOAD: st[sp++] = vars[code[pc++]]; break;
        case STORE: vars[code[pc++]] = st[--sp]; break;
        case HALT: return steps;
        default: longjmp(err, 2);
        }
    }
}
int main(void) {
    /* sum of gcd(i, 360) + isqrt(i) for i < 60000 */
    long prog[] = {PUSH, 0, STORE, 0, PUSH, 0, STORE, 1,
        /* 8 */ LOAD, 0, PUSH, 60000, LT, JZ, 45,
        LOAD, 0, PUSH, 360, CALLN, 0, LOAD, 0, PUSH, 0, CALLN, 1, ADD, LOAD, 1, ADD, STORE, 1,
        LOAD, 0, PUSH, 1, ADD, STORE, 0, JMP, 8, HALT, HALT, HALT,
        /* 45 */ LOAD, 1, PRINT, HALT};
    long vars[4];
    int e = setjmp(err);
    if (!e) printf("steps %ld\n", run(prog, vars));
    long bad[] = {PUSH, 1, PUSH, 0, DIV, HALT};
    if (!(e = setjmp(err))) run(bad, vars); else printf("error %d recovered\n", e);
    long bad2[] = {PUSH, 1, 99};
    if (!(e = setjmp(err))) run(bad2, vars); else printf("error %d recovered\n", e);
    return 0;
}
