//! The Linux x86-64 ABI the workhorse answers: its constants, each defined
//! once here by area (the values of Linux's uapi headers), and the
//! structures it marshals into guest memory ([`Stat`]).  The server's
//! handlers name these; none defines a Linux value of its own.

/// Error numbers (asm-generic/errno-base.h, errno.h), returned negated in
/// rax.
pub mod errno {
    pub const EPERM: i64 = 1;
    pub const ENOENT: i64 = 2;
    pub const ESRCH: i64 = 3;
    pub const EINTR: i64 = 4;
    pub const EIO: i64 = 5;
    pub const ENXIO: i64 = 6;
    pub const E2BIG: i64 = 7;
    pub const ENOEXEC: i64 = 8;
    pub const EBADF: i64 = 9;
    pub const ECHILD: i64 = 10;
    pub const EAGAIN: i64 = 11;
    pub const ENOMEM: i64 = 12;
    pub const EACCES: i64 = 13;
    pub const EFAULT: i64 = 14;
    pub const EBUSY: i64 = 16;
    pub const EEXIST: i64 = 17;
    pub const EXDEV: i64 = 18;
    pub const ENODEV: i64 = 19;
    pub const ENOTDIR: i64 = 20;
    pub const EISDIR: i64 = 21;
    pub const EINVAL: i64 = 22;
    pub const EMFILE: i64 = 24;
    pub const ENOTTY: i64 = 25;
    pub const EFBIG: i64 = 27;
    pub const ENOSPC: i64 = 28;
    pub const ESPIPE: i64 = 29;
    pub const EPIPE: i64 = 32;
    pub const ERANGE: i64 = 34;
    pub const EDEADLK: i64 = 35;
    pub const ENAMETOOLONG: i64 = 36;
    pub const ENOSYS: i64 = 38;
    pub const ENOTEMPTY: i64 = 39;
    pub const ELOOP: i64 = 40;
    pub const ENODATA: i64 = 61;
    pub const EOVERFLOW: i64 = 75;
    pub const ELIBBAD: i64 = 80;
    pub const ENOTSOCK: i64 = 88;
    pub const EDESTADDRREQ: i64 = 89;
    pub const EMSGSIZE: i64 = 90;
    pub const EPROTOTYPE: i64 = 91;
    pub const ENOPROTOOPT: i64 = 92;
    pub const EPROTONOSUPPORT: i64 = 93;
    pub const ESOCKTNOSUPPORT: i64 = 94;
    pub const EOPNOTSUPP: i64 = 95;
    pub const EAFNOSUPPORT: i64 = 97;
    pub const EADDRINUSE: i64 = 98;
    pub const EADDRNOTAVAIL: i64 = 99;
    pub const ENETUNREACH: i64 = 101;
    pub const ECONNRESET: i64 = 104;
    pub const EISCONN: i64 = 106;
    pub const ENOTCONN: i64 = 107;
    pub const ETIMEDOUT: i64 = 110;
    pub const ECONNREFUSED: i64 = 111;
    pub const EALREADY: i64 = 114;
    pub const EINPROGRESS: i64 = 115;
}

/// Files: open flags, the *at calls' flags, file types and mode bits,
/// directory entry types, fcntl commands and record locks.
pub mod fs {
    pub const O_RDONLY: u32 = 0;
    pub const O_WRONLY: u32 = 1;
    pub const O_RDWR: u32 = 2;
    pub const O_ACCMODE: u32 = 3;
    pub const O_CREAT: u32 = 0o100;
    pub const O_EXCL: u32 = 0o200;
    pub const O_NOCTTY: u32 = 0o400;
    pub const O_TRUNC: u32 = 0o1000;
    pub const O_APPEND: u32 = 0o2000;
    pub const O_NONBLOCK: u32 = 0o4000;
    pub const O_DIRECTORY: u32 = 0o200000;
    pub const O_NOFOLLOW: u32 = 0o400000;
    pub const O_CLOEXEC: u32 = 0o2000000;

    pub const AT_FDCWD: i64 = -100;
    pub const AT_SYMLINK_NOFOLLOW: u64 = 0x100;
    pub const AT_REMOVEDIR: u64 = 0x200;
    pub const AT_EACCESS: u64 = 0x200;
    pub const AT_EMPTY_PATH: u64 = 0x1000;
    pub const PATH_MAX: usize = 4096;

    pub const S_IFMT: u32 = 0o170000;
    pub const S_IFIFO: u32 = 0o010000;
    pub const S_IFCHR: u32 = 0o020000;
    pub const S_IFDIR: u32 = 0o040000;
    pub const S_IFREG: u32 = 0o100000;
    pub const S_IFLNK: u32 = 0o120000;
    pub const S_ISUID: u32 = 0o4000;
    pub const S_ISGID: u32 = 0o2000;
    pub const S_ISVTX: u32 = 0o1000;
    pub const S_IXGRP: u32 = 0o010;

    pub const DT_DIR: u8 = 4;
    pub const DT_REG: u8 = 8;
    pub const DT_LNK: u8 = 10;

    pub const F_DUPFD: u64 = 0;
    pub const F_GETFD: u64 = 1;
    pub const F_SETFD: u64 = 2;
    pub const F_GETFL: u64 = 3;
    pub const F_SETFL: u64 = 4;
    pub const F_GETLK: u64 = 5;
    pub const F_SETLK: u64 = 6;
    pub const F_SETLKW: u64 = 7;
    pub const F_OFD_GETLK: u64 = 36;
    pub const F_OFD_SETLK: u64 = 37;
    pub const F_OFD_SETLKW: u64 = 38;
    pub const F_DUPFD_CLOEXEC: u64 = 1030;
    pub const F_SETPIPE_SZ: u64 = 1031;
    pub const F_GETPIPE_SZ: u64 = 1032;
    /// struct flock's l_type.
    pub const F_RDLCK: u16 = 0;
    pub const F_WRLCK: u16 = 1;
    pub const F_UNLCK: u16 = 2;
    /// flock(2)'s operations.
    pub const LOCK_SH: u64 = 1;
    pub const LOCK_EX: u64 = 2;
    pub const LOCK_NB: u64 = 4;
    pub const LOCK_UN: u64 = 8;

    pub const XATTR_CREATE: u32 = 1;
    pub const XATTR_REPLACE: u32 = 2;
    /// A name component, and an extended attribute's name, at most.
    pub const NAME_MAX: usize = 255;
    /// An extended attribute's value at most.
    pub const XATTR_SIZE_MAX: usize = 65536;
}

/// Terminal and file ioctls (asm-generic/ioctls.h) and termios flags.
pub mod ioctl {
    pub const TCGETS: u64 = 0x5401;
    pub const TCSETS: u64 = 0x5402;
    pub const TCSETSW: u64 = 0x5403;
    pub const TCSETSF: u64 = 0x5404;
    pub const TCSBRK: u64 = 0x5409;
    pub const TCFLSH: u64 = 0x540b;
    pub const TIOCSCTTY: u64 = 0x540e;
    pub const TIOCGPGRP: u64 = 0x540f;
    pub const TIOCSPGRP: u64 = 0x5410;
    pub const TIOCGWINSZ: u64 = 0x5413;
    pub const TIOCSWINSZ: u64 = 0x5414;
    pub const FIONREAD: u64 = 0x541b;
    pub const FIONBIO: u64 = 0x5421;
    pub const TIOCNOTTY: u64 = 0x5422;
    pub const TIOCGSID: u64 = 0x5429;
    pub const TIOCGPTN: u64 = 0x8004_5430;
    pub const TIOCSPTLCK: u64 = 0x4004_5431;
    pub const TIOCGPTLCK: u64 = 0x8004_5439;
    pub const TIOCGPTPEER: u64 = 0x5441;
    pub const FIONCLEX: u64 = 0x5450;
    pub const FIOCLEX: u64 = 0x5451;

    /// c_lflag.
    pub const ISIG: u32 = 0o1;
    pub const ICANON: u32 = 0o2;
    pub const ECHO: u32 = 0o10;
    pub const TOSTOP: u32 = 0o400;
    /// c_iflag.
    pub const ICRNL: u32 = 0o400;
    /// c_oflag.
    pub const OPOST: u32 = 0o1;
    pub const ONLCR: u32 = 0o4;
}

/// Signals, sigaction flags, and the codes of SIGCHLD's siginfo.
pub mod signal {
    pub const SIGHUP: i32 = 1;
    pub const SIGILL: i32 = 4;
    pub const SIGTRAP: i32 = 5;
    pub const SIGBUS: i32 = 7;
    pub const SIGFPE: i32 = 8;
    pub const SIGKILL: i32 = 9;
    pub const SIGSEGV: i32 = 11;
    pub const SIGPIPE: i32 = 13;
    pub const SIGALRM: i32 = 14;
    pub const SIGCHLD: i32 = 17;
    pub const SIGCONT: i32 = 18;
    pub const SIGSTOP: i32 = 19;
    pub const SIGTSTP: i32 = 20;
    pub const SIGTTIN: i32 = 21;
    pub const SIGTTOU: i32 = 22;
    pub const SIGWINCH: i32 = 28;
    pub const SIG_IGN: u64 = 1;

    pub const SA_NOCLDSTOP: u64 = 1;
    pub const SA_NOCLDWAIT: u64 = 2;
    pub const SA_RESTORER: u64 = 0x0400_0000;
    pub const SA_ONSTACK: u64 = 0x0800_0000;
    pub const SA_RESTART: u64 = 0x1000_0000;
    pub const SA_NODEFER: u64 = 0x4000_0000;
    pub const SA_RESETHAND: u64 = 0x8000_0000;

    pub const CLD_EXITED: i32 = 1;
    pub const CLD_KILLED: i32 = 2;
    pub const CLD_DUMPED: i32 = 3;
    pub const CLD_STOPPED: i32 = 5;
    pub const CLD_CONTINUED: i32 = 6;
    pub const SI_TKILL: i32 = -6;

    pub const SS_ONSTACK: u32 = 1;
    pub const SS_DISABLE: u32 = 2;
    pub const SS_AUTODISARM: u32 = 1 << 31;
    pub const MINSIGSTKSZ: u64 = 2048;
}

/// wait4 and waitid options.
pub mod wait {
    pub const WNOHANG: u64 = 1;
    pub const WUNTRACED: u64 = 2;
    pub const WSTOPPED: u64 = 2;
    pub const WEXITED: u64 = 4;
    pub const WCONTINUED: u64 = 8;
    pub const WNOWAIT: u64 = 0x0100_0000;
    /// __WNOTHREAD, __WALL and __WCLONE.
    pub const WALL_CLONE_NOTHREAD: u64 = 0xe000_0000;
}

/// clone flags.
pub mod clone {
    pub const CLONE_VM: u64 = 0x100;
    pub const CLONE_FILES: u64 = 0x400;
    pub const CLONE_SIGHAND: u64 = 0x800;
    pub const CLONE_VFORK: u64 = 0x4000;
    pub const CLONE_PARENT: u64 = 0x8000;
    pub const CLONE_THREAD: u64 = 0x10000;
    pub const CLONE_SETTLS: u64 = 0x80000;
    pub const CLONE_PARENT_SETTID: u64 = 0x100000;
    pub const CLONE_CHILD_CLEARTID: u64 = 0x200000;
    pub const CLONE_CHILD_SETTID: u64 = 0x1000000;
}

/// poll and epoll events.
pub mod poll {
    pub const POLLIN: u16 = 1;
    pub const POLLPRI: u16 = 2;
    pub const POLLOUT: u16 = 4;
    pub const POLLERR: u16 = 8;
    pub const POLLHUP: u16 = 0x10;
    pub const POLLNVAL: u16 = 0x20;
    pub const POLLRDHUP: u16 = 0x2000;

    pub const EPOLLERR: u32 = 8;
    pub const EPOLLHUP: u32 = 0x10;
    pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
    pub const EPOLLWAKEUP: u32 = 1 << 29;
    pub const EPOLLONESHOT: u32 = 1 << 30;
    pub const EPOLLET: u32 = 1 << 31;
}

/// Sockets: families, types, protocols, message flags and options.
pub mod socket {
    pub const AF_UNSPEC: u16 = 0;
    pub const AF_UNIX: u64 = 1;
    pub const AF_INET: u64 = 2;
    pub const SOCK_STREAM: u32 = 1;
    pub const SOCK_DGRAM: u32 = 2;
    pub const SOCK_RAW: u32 = 3;
    pub const SOCK_SEQPACKET: u32 = 5;
    pub const SOCK_NONBLOCK: u64 = 0o4000;
    pub const SOCK_CLOEXEC: u64 = 0o2000000;
    pub const IPPROTO_IP: u64 = 0;
    pub const IPPROTO_TCP: u64 = 6;
    pub const IPPROTO_UDP: u64 = 17;

    pub const MSG_PEEK: u64 = 2;
    pub const MSG_TRUNC: u64 = 0x20;
    pub const MSG_DONTWAIT: u64 = 0x40;
    pub const MSG_NOSIGNAL: u64 = 0x4000;
    pub const MSG_CMSG_CLOEXEC: u64 = 0x4000_0000;
    pub const SCM_RIGHTS: u32 = 1;

    pub const SOL_SOCKET: u64 = 1;
    pub const SO_REUSEADDR: u64 = 2;
    pub const SO_TYPE: u64 = 3;
    pub const SO_ERROR: u64 = 4;
    pub const SO_BROADCAST: u64 = 6;
    pub const SO_SNDBUF: u64 = 7;
    pub const SO_RCVBUF: u64 = 8;
    pub const SO_KEEPALIVE: u64 = 9;
    pub const SO_LINGER: u64 = 13;
    pub const SO_REUSEPORT: u64 = 15;
    pub const SO_RCVTIMEO: u64 = 20;
    pub const SO_SNDTIMEO: u64 = 21;
    pub const SO_ACCEPTCONN: u64 = 30;
    pub const SO_PROTOCOL: u64 = 38;
    pub const SO_DOMAIN: u64 = 39;
    pub const TCP_NODELAY: u64 = 1;
    pub const TCP_KEEPIDLE: u64 = 4;
    pub const TCP_KEEPINTVL: u64 = 5;
    pub const TCP_KEEPCNT: u64 = 6;
    pub const IP_TOS: u64 = 1;
    pub const IP_TTL: u64 = 2;
}

/// Memory: protections, mmap, mremap, madvise and msync flags.
pub mod mm {
    pub const PROT_READ: u32 = 1;
    pub const PROT_WRITE: u32 = 2;
    pub const PROT_EXEC: u32 = 4;
    pub const MAP_SHARED: u64 = 1;
    pub const MAP_PRIVATE: u64 = 2;
    pub const MAP_FIXED: u64 = 0x10;
    pub const MAP_ANONYMOUS: u64 = 0x20;
    pub const MAP_FIXED_NOREPLACE: u64 = 0x100000;
    pub const MREMAP_MAYMOVE: u64 = 1;
    pub const MREMAP_FIXED: u64 = 2;
    pub const MADV_DONTNEED: u64 = 4;
    pub const MS_ASYNC: u64 = 1;
    pub const MS_INVALIDATE: u64 = 2;
    pub const MS_SYNC: u64 = 4;
}

/// futex operations.
pub mod futex {
    pub const FUTEX_WAIT: u64 = 0;
    pub const FUTEX_WAKE: u64 = 1;
    pub const FUTEX_REQUEUE: u64 = 3;
    pub const FUTEX_CMP_REQUEUE: u64 = 4;
    pub const FUTEX_WAIT_BITSET: u64 = 9;
    pub const FUTEX_WAKE_BITSET: u64 = 10;
    pub const FUTEX_PRIVATE_FLAG: u64 = 128;
    pub const FUTEX_CLOCK_REALTIME: u64 = 256;
}

/// Scheduling policies and priority targets.
pub mod sched {
    pub const SCHED_OTHER: u64 = 0;
    pub const SCHED_FIFO: u64 = 1;
    pub const SCHED_RR: u64 = 2;
    pub const SCHED_BATCH: u64 = 3;
    pub const SCHED_IDLE: u64 = 5;
    pub const SCHED_DEADLINE: u64 = 6;
    pub const SCHED_RESET_ON_FORK: u64 = 0x4000_0000;
    pub const PRIO_PROCESS: u64 = 0;
    pub const PRIO_PGRP: u64 = 1;
    pub const PRIO_USER: u64 = 2;
}

/// A device number as stat's st_dev and st_rdev carry it (major, minor
/// below 256).
pub const fn makedev(major: u64, minor: u64) -> u64 {
    (major << 8) | minor
}

/// struct stat of x86-64 (asm/stat.h), written into guest memory as
/// [`Stat::to_bytes`] lays it out.  Times are in nanoseconds since the
/// epoch; st_blocks counts 512-byte units of `size`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: u64,
    pub blksize: u64,
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
}

impl Stat {
    /// Its size in guest memory.
    pub const BYTES: usize = 144;

    /// A file on device 1 with no owner and no times, blocks of 4096.
    pub const fn new(mode: u32, ino: u64, nlink: u64, size: u64, rdev: u64) -> Stat {
        Stat { dev: 1, ino, nlink, mode, uid: 0, gid: 0, rdev, size, blksize: 4096, atime: 0, mtime: 0, ctime: 0 }
    }

    /// Linux's layout: st_dev, st_ino, st_nlink (8 bytes each), st_mode,
    /// st_uid, st_gid (4 each), padding, st_rdev, st_size, st_blksize,
    /// st_blocks (8 each), st_atim, st_mtim, st_ctim (seconds and
    /// nanoseconds, 8 each), 24 bytes reserved.
    pub fn to_bytes(&self) -> [u8; Self::BYTES] {
        let mut b = [0u8; Self::BYTES];
        let mut put = |at: usize, v: &[u8]| b[at..at + v.len()].copy_from_slice(v);
        put(0, &self.dev.to_le_bytes());
        put(8, &self.ino.to_le_bytes());
        put(16, &self.nlink.to_le_bytes());
        put(24, &self.mode.to_le_bytes());
        put(28, &self.uid.to_le_bytes());
        put(32, &self.gid.to_le_bytes());
        put(40, &self.rdev.to_le_bytes());
        put(48, &self.size.to_le_bytes());
        put(56, &self.blksize.to_le_bytes());
        put(64, &self.size.div_ceil(512).to_le_bytes());
        for (i, t) in [self.atime, self.mtime, self.ctime].into_iter().enumerate() {
            put(72 + i * 16, &(t / 1_000_000_000).to_le_bytes());
            put(80 + i * 16, &(t % 1_000_000_000).to_le_bytes());
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u64_at(b: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
    }

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn stat_has_linux_x86_64_layout() {
        let s = Stat {
            dev: 0x0802,
            ino: 7,
            nlink: 3,
            mode: fs::S_IFREG | 0o644,
            uid: 1000,
            gid: 100,
            rdev: makedev(136, 4),
            size: 1025,
            blksize: 4096,
            atime: 5_000_000_001,
            mtime: 6_000_000_002,
            ctime: 7_999_999_999,
        };
        let b = s.to_bytes();
        assert_eq!(b.len(), 144);
        assert_eq!(u64_at(&b, 0), 0x0802);
        assert_eq!(u64_at(&b, 8), 7);
        assert_eq!(u64_at(&b, 16), 3);
        assert_eq!(u32_at(&b, 24), 0o100644);
        assert_eq!(u32_at(&b, 28), 1000);
        assert_eq!(u32_at(&b, 32), 100);
        assert_eq!(u32_at(&b, 36), 0, "padding");
        assert_eq!(u64_at(&b, 40), (136 << 8) | 4);
        assert_eq!(u64_at(&b, 48), 1025);
        assert_eq!(u64_at(&b, 56), 4096);
        assert_eq!(u64_at(&b, 64), 3, "st_blocks: 512-byte units, rounded up");
        assert_eq!((u64_at(&b, 72), u64_at(&b, 80)), (5, 1));
        assert_eq!((u64_at(&b, 88), u64_at(&b, 96)), (6, 2));
        assert_eq!((u64_at(&b, 104), u64_at(&b, 112)), (7, 999_999_999));
        assert!(b[120..].iter().all(|&x| x == 0), "reserved");
    }

    #[test]
    fn new_stat_is_on_device_one_with_4k_blocks() {
        let b = Stat::new(fs::S_IFCHR | 0o666, 2, 1, 0, makedev(1, 3)).to_bytes();
        assert_eq!(u64_at(&b, 0), 1);
        assert_eq!(u64_at(&b, 56), 4096);
        assert_eq!(u64_at(&b, 64), 0);
        assert_eq!(u64_at(&b, 40), 0x103);
    }
}
