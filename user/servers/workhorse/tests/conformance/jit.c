// Writable and executable memory, as JIT compilers use it: code written
// into a PROT_READ|PROT_WRITE|PROT_EXEC mapping runs, is rewritten and
// runs again; mprotect to and from PROT_EXEC; two such pages, one calling
// the other; a forked child running and rewriting its copy.
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

typedef int (*fn)(void);

// mov eax, imm32; ret
static void emit_const(unsigned char *p, int v) {
    p[0] = 0xb8;
    memcpy(p + 1, &v, 4);
    p[5] = 0xc3;
}

// mov rax, imm64; jmp rax (a tail call to `target`)
static void emit_jump(unsigned char *p, void *target) {
    p[0] = 0x48;
    p[1] = 0xb8;
    memcpy(p + 2, &target, 8);
    p[10] = 0xff;
    p[11] = 0xe0;
}

int main(void) {
    setvbuf(stdout, NULL, _IONBF, 0);
    unsigned char *code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    printf("mmap rwx: %s\n", code != MAP_FAILED ? "ok" : "failed");
    emit_const(code, 42);
    printf("run: %d\n", ((fn)code)());
    for (int i = 0; i < 5; i++) {
        emit_const(code, 100 + i);
        printf("rewritten and run: %d\n", ((fn)code)());
    }
    // The second page jumps to the first.
    emit_jump(code + 4096, code);
    emit_const(code, 7);
    printf("one page calling the other: %d\n", ((fn)(code + 4096))());
    printf("a read of the code: %02x\n", code[0]);

    pid_t c = fork();
    if (c == 0) {
        emit_const(code, 9);
        _exit(((fn)(code + 4096))());
    }
    int st;
    waitpid(c, &st, 0);
    printf("the child's rewritten copy: %d; the parent's: %d\n", WEXITSTATUS(st), ((fn)(code + 4096))());

    // mprotect: RW (written), then RX (run), then RWX (rewritten, run).
    unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    emit_const(p, 11);
    printf("mprotect rx: %d\n", mprotect(p, 4096, PROT_READ | PROT_EXEC));
    printf("run: %d\n", ((fn)p)());
    printf("mprotect rwx: %d\n", mprotect(p, 4096, PROT_READ | PROT_WRITE | PROT_EXEC));
    emit_const(p, 12);
    printf("rewritten and run: %d\n", ((fn)p)());
    printf("mprotect rw: %d\n", mprotect(p, 4096, PROT_READ | PROT_WRITE));
    c = fork();
    if (c == 0) {
        ((fn)p)();
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("running it now: killed by signal %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}
