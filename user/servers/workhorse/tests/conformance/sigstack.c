// sigaltstack and signals on the alternate stack (SA_ONSTACK), and faults
// (SIGSEGV, SIGBUS, SIGFPE, SIGILL) delivered to the program's handlers,
// as Python's faulthandler and JIT runtimes use them.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static char altstack[65536] __attribute__((aligned(16)));
static volatile int on_alt, nested_flags, change_err, uc_flags, uc_sp_ok, got;
static sigjmp_buf jb;
static volatile int fault_sig, fault_code, fault_addr_ok;
static volatile uintptr_t want_addr;

static const char *err(int r) {
    if (r == 0) return "ok";
    switch (errno) {
    case EINVAL: return "EINVAL";
    case ENOMEM: return "ENOMEM";
    case EPERM: return "EPERM";
    case EFAULT: return "EFAULT";
    default: return strerror(errno);
    }
}

static int within(void *p) {
    return (char *)p >= altstack && (char *)p < altstack + sizeof altstack;
}

static void handler(int sig, siginfo_t *si, void *ucv) {
    ucontext_t *uc = ucv;
    volatile int local;
    on_alt = within((void *)&local);
    stack_t now, other = {.ss_sp = altstack, .ss_size = sizeof altstack};
    sigaltstack(NULL, &now);
    nested_flags = now.ss_flags;
    change_err = sigaltstack(&other, NULL) == 0 ? 0 : errno;
    uc_flags = uc->uc_stack.ss_flags;
    uc_sp_ok = uc->uc_stack.ss_sp == altstack && uc->uc_stack.ss_size == sizeof altstack;
    got = sig;
    (void)si;
}

static void fault(int sig, siginfo_t *si, void *ucv) {
    volatile int local;
    fault_sig = sig;
    fault_code = si->si_code;
    // (want_addr 1: the faulting instruction's address, not known here.)
    fault_addr_ok = want_addr == 1 ? si->si_addr != NULL : (uintptr_t)si->si_addr == want_addr;
    on_alt = within((void *)&local);
    (void)ucv;
    siglongjmp(jb, 1);
}

static char *guarded;
static volatile int fixed;

// A SIGSEGV handler that makes the page writable and returns: the store
// is made again and succeeds.
static void fixer(int sig, siginfo_t *si, void *ucv) {
    (void)sig; (void)ucv;
    fixed = (char *)si->si_addr == guarded && si->si_code == SEGV_ACCERR;
    mprotect(guarded, 4096, PROT_READ | PROT_WRITE);
}

static void install(int sig, void (*h)(int, siginfo_t *, void *), int flags) {
    struct sigaction sa = {0};
    sa.sa_sigaction = h;
    sa.sa_flags = SA_SIGINFO | flags;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
}

static void try_fault(const char *what, int sig, void (*f)(void), uintptr_t addr) {
    fault_sig = fault_code = fault_addr_ok = on_alt = 0;
    want_addr = addr;
    install(sig, fault, SA_ONSTACK);
    if (sigsetjmp(jb, 1) == 0) f();
    printf("%s: handler got signal %d, si_code %d, si_addr right %d, on the alternate stack %d\n",
           what, fault_sig, fault_code, fault_addr_ok, on_alt);
    signal(sig, SIG_DFL);
}

static volatile int zero = 0;
// (Through volatile pointers: a constant null store is undefined to the
// compiler, which may drop it.)
static int *volatile nullp = 0;
static int *volatile lowp = (int *)0x10000;
static void null_write(void) { *nullp = 1; }
static void unmapped_read(void) { (void)*(volatile int *)lowp; }
static void divide(void) { volatile int x = 7 / zero; (void)x; }
static char *bus_page;
static void bus(void) { (void)*(volatile char *)bus_page; }
static void readonly_write(void) { *(volatile char *)guarded = 1; }

int main(int argc, char **argv) {
    const char *dir = argc > 1 ? argv[1] : "/tmp";
    setvbuf(stdout, NULL, _IONBF, 0);
    stack_t ss, old;
    memset(&old, 0x55, sizeof old);
    const char *e = err(sigaltstack(NULL, &old));
    printf("initial: %s, flags %d, sp null %d, size %zu\n", e, old.ss_flags, old.ss_sp == NULL, old.ss_size);
    ss.ss_sp = altstack;
    ss.ss_size = 1024;
    ss.ss_flags = 0;
    printf("too small: %s\n", err(sigaltstack(&ss, NULL)));
    ss.ss_size = sizeof altstack;
    ss.ss_flags = 4;
    printf("bad flags: %s\n", err(sigaltstack(&ss, NULL)));
    printf("bad pointer: %s\n", err(sigaltstack((stack_t *)8, NULL)));
    printf("bad old pointer: %s\n", err(sigaltstack(NULL, (stack_t *)8)));
    ss.ss_flags = 0;
    printf("set: %s\n", err(sigaltstack(&ss, &old)));
    printf("old: flags %d\n", old.ss_flags);
    sigaltstack(NULL, &old);
    printf("get: flags %d, sp right %d, size %zu\n", old.ss_flags, old.ss_sp == altstack, old.ss_size);

    install(SIGUSR1, handler, SA_ONSTACK);
    raise(SIGUSR1);
    printf("SA_ONSTACK handler: signal %d, on the alternate stack %d, sigaltstack says flags %d, "
           "changing it there: %s, uc_stack flags %d, uc_stack right %d\n",
           got, on_alt, nested_flags, change_err == EPERM ? "EPERM" : "allowed", uc_flags, uc_sp_ok);
    sigaltstack(NULL, &old);
    printf("after the handler: flags %d\n", old.ss_flags);
    install(SIGUSR2, handler, 0);
    raise(SIGUSR2);
    printf("handler without SA_ONSTACK: on the alternate stack %d\n", on_alt);
    kill(getpid(), SIGUSR1);
    printf("kill to itself, SA_ONSTACK: on the alternate stack %d\n", on_alt);

    // Inherited by fork.
    pid_t c = fork();
    if (c == 0) {
        raise(SIGUSR1);
        _exit(on_alt ? 3 : 4);
    }
    int st;
    waitpid(c, &st, 0);
    printf("the fork child's handler on the inherited alternate stack: %d\n", WEXITSTATUS(st) == 3);

    // Faults to handlers, on the alternate stack.
    try_fault("null write", SIGSEGV, null_write, 0);
    try_fault("unmapped read", SIGSEGV, unmapped_read, 0x10000);
    try_fault("integer divide by zero", SIGFPE, divide, 1);
    char path[512];
    snprintf(path, sizeof path, "%s/sigstack.bus", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ftruncate(fd, 100);
    bus_page = mmap(NULL, 8192, PROT_READ, MAP_SHARED, fd, 0);
    bus_page += 4096;
    try_fault("read a page past the end of a file", SIGBUS, bus, (uintptr_t)bus_page);
    close(fd);
    unlink(path);
    guarded = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    try_fault("write to a read-only page", SIGSEGV, readonly_write, (uintptr_t)guarded);
    install(SIGSEGV, fixer, 0);
    *(volatile char *)guarded = 42;
    printf("a handler that mprotects the page and returns: fixed %d, the store made: %d\n", fixed, guarded[0]);
    signal(SIGSEGV, SIG_DFL);

    // Disabled: a SA_ONSTACK handler runs on the ordinary stack.
    ss.ss_flags = SS_DISABLE;
    printf("disable: %s\n", err(sigaltstack(&ss, NULL)));
    sigaltstack(NULL, &old);
    printf("get: flags %d, size %zu\n", old.ss_flags, old.ss_size);
    raise(SIGUSR1);
    printf("SA_ONSTACK handler with the stack disabled: on the alternate stack %d\n", on_alt);

    // A fault with no handler, and one with the signal blocked, end the
    // process with the signal.
    c = fork();
    if (c == 0) null_write();
    waitpid(c, &st, 0);
    printf("no handler: killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    c = fork();
    if (c == 0) {
        install(SIGSEGV, fault, 0);
        sigset_t m;
        sigemptyset(&m);
        sigaddset(&m, SIGSEGV);
        sigprocmask(SIG_BLOCK, &m, NULL);
        null_write();
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("handler, signal blocked: killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    c = fork();
    if (c == 0) {
        signal(SIGSEGV, SIG_IGN);
        null_write();
        _exit(0);
    }
    waitpid(c, &st, 0);
    printf("signal ignored: killed by %d\n", WIFSIGNALED(st) ? WTERMSIG(st) : -1);
    return 0;
}
