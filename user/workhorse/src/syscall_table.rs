// The workhorse's system-call table: the one place that says which Linux
// x86-64 system calls the server answers, with which handler and how far.
// `table.rs` (library) turns it into the list docs/linux-compat.md is made
// from; `main.rs` turns it into the dispatch.  Each line:
//     NUMBER name handler, support, "note";
// support: Full, Partial (the note says what is missing) or Refused
// (answered -ENOSYS on purpose; the note says why).  A number not listed
// is answered -ENOSYS too, and counted (`linux` at the keep> prompt lists
// them).
syscall_table! {
    0 read sys::read, Full, "";
    1 write sys::write, Full, "";
    2 open sys::open, Partial, "as openat(AT_FDCWD, ...); no O_TMPFILE, no permission checks";
    3 close sys::close, Full, "";
    4 stat sys::stat, Full, "";
    5 fstat sys::fstat, Full, "";
    6 lstat sys::lstat, Full, "";
    8 lseek sys::lseek, Partial, "SEEK_SET, SEEK_CUR, SEEK_END; no SEEK_DATA/SEEK_HOLE";
    9 mmap sys::mmap, Partial, "anonymous (populated when touched) and private file mappings (copied in); MAP_SHARED is private (a shared writable file mapping: ENODEV)";
    10 mprotect sys::mprotect, Full, "";
    11 munmap sys::munmap, Full, "";
    12 brk sys::brk, Full, "";
    13 rt_sigaction sys::rt_sigaction, Partial, "actions are recorded and reported; handlers are not run yet";
    14 rt_sigprocmask sys::rt_sigprocmask, Partial, "the mask is recorded; nothing is delivered to handlers yet";
    15 rt_sigreturn sys::refused, Refused, "no signal frames are built yet";
    16 ioctl sys::ioctl, Partial, "terminal only: TCGETS, TCSETS(W/F), TIOCGWINSZ, TIOCGPGRP, TIOCSPGRP; ENOTTY elsewhere";
    17 pread64 sys::pread64, Full, "";
    18 pwrite64 sys::pwrite64, Full, "";
    19 readv sys::readv, Full, "";
    20 writev sys::writev, Full, "";
    21 access sys::access, Partial, "existence only: everyone may do everything";
    22 pipe sys::pipe, Full, "";
    24 sched_yield sys::zero, Full, "";
    28 madvise sys::zero, Partial, "advice is accepted and ignored";
    32 dup sys::dup, Full, "";
    33 dup2 sys::dup2, Full, "";
    34 pause sys::pause, Partial, "waits until a signal ends the process (handlers are not run)";
    35 nanosleep sys::nanosleep, Partial, "the caller waits in the server; signals do not interrupt it";
    39 getpid sys::getpid, Full, "";
    40 sendfile sys::sendfile, Full, "";
    56 clone sys::clone, Partial, "fork-like (a copied address space); CLONE_VM only with CLONE_VFORK; no threads (CLONE_THREAD: ENOSYS)";
    57 fork sys::fork, Full, "";
    58 vfork sys::vfork, Partial, "the child gets a copy of the address space; the parent waits until it execs or exits";
    59 execve sys::execve, Partial, "static ELF and #! scripts; no PT_INTERP (dynamic programs: ENOEXEC)";
    60 exit sys::exit, Partial, "ends the whole process (no threads)";
    61 wait4 sys::wait4, Partial, "WNOHANG; no rusage (zeroed); no stopped children";
    62 kill sys::kill, Partial, "default actions end the target; ignored signals are dropped; handlers are not run";
    63 uname sys::uname, Full, "";
    72 fcntl sys::fcntl, Partial, "F_DUPFD(_CLOEXEC), F_GETFD/SETFD, F_GETFL/SETFL; no locks";
    79 getcwd sys::getcwd, Full, "";
    80 chdir sys::chdir, Full, "";
    81 fchdir sys::fchdir, Full, "";
    82 rename sys::rename, Full, "";
    83 mkdir sys::mkdir, Full, "";
    84 rmdir sys::rmdir, Full, "";
    87 unlink sys::unlink, Full, "";
    89 readlink sys::readlink, Full, "";
    95 umask sys::umask, Full, "";
    96 gettimeofday sys::gettimeofday, Partial, "time since boot (Keep has no real-time clock yet)";
    97 getrlimit sys::getrlimit, Partial, "fixed limits";
    102 getuid sys::zero, Partial, "everyone is root (uid 0)";
    104 getgid sys::zero, Partial, "gid 0";
    107 geteuid sys::zero, Partial, "uid 0";
    108 getegid sys::zero, Partial, "gid 0";
    109 setpgid sys::setpgid, Full, "";
    110 getppid sys::getppid, Full, "";
    111 getpgrp sys::getpgrp, Full, "";
    112 setsid sys::setsid, Full, "";
    121 getpgid sys::getpgid, Full, "";
    124 getsid sys::getsid, Full, "";
    157 prctl sys::prctl, Partial, "PR_SET_NAME and PR_GET_NAME";
    158 arch_prctl sys::arch_prctl, Partial, "ARCH_SET_FS and ARCH_GET_FS (through the server's wrfsbase trampoline); no %gs";
    186 gettid sys::getpid, Full, "";
    201 time sys::time, Partial, "time since boot";
    217 getdents64 sys::getdents64, Full, "";
    218 set_tid_address sys::set_tid_address, Partial, "recorded; nothing is written at exit (no threads)";
    228 clock_gettime sys::clock_gettime, Partial, "every clock counts from boot";
    230 clock_nanosleep sys::clock_nanosleep, Partial, "relative sleeps only";
    231 exit_group sys::exit, Full, "";
    257 openat sys::openat, Partial, "no O_TMPFILE, no permission checks";
    258 mkdirat sys::mkdirat, Full, "";
    262 newfstatat sys::newfstatat, Full, "";
    263 unlinkat sys::unlinkat, Full, "";
    264 renameat sys::renameat, Full, "";
    267 readlinkat sys::readlinkat, Full, "";
    269 faccessat sys::faccessat, Partial, "existence only";
    273 set_robust_list sys::zero, Partial, "accepted; nothing is done at exit (no threads)";
    292 dup3 sys::dup3, Full, "";
    293 pipe2 sys::pipe2, Partial, "O_CLOEXEC and O_NONBLOCK";
    302 prlimit64 sys::prlimit64, Partial, "reads fixed limits; setting them is accepted and ignored";
    316 renameat2 sys::renameat2, Partial, "flags 0 only";
    318 getrandom sys::getrandom, Partial, "a generator seeded from the timer, not cryptographic";
    334 rseq sys::refused, Refused, "restartable sequences need threads; glibc goes on without";
    439 faccessat2 sys::faccessat, Partial, "existence only";
}
