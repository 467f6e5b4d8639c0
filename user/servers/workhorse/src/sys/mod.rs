//! The system calls' handlers, named by `syscall_table.rs`.  Each gets the
//! server, the caller's pid and the call, and says what happens next
//! ([`Out`]).  Guest memory is reached only through `Mm::read`/`write`,
//! which answer EFAULT for anything outside the caller's areas.  The
//! handlers are grouped by area; the shared helpers are here.

pub(crate) use alloc::string::String;
pub(crate) use alloc::vec::Vec;

pub(crate) use keep_abi::{TIMER, reg};

pub(crate) use crate::linux::errno::*;
pub(crate) use crate::linux::{Stat, makedev};
pub(crate) use crate::fd::*;
pub(crate) use crate::mem::{self, PAGE, PROT_WRITE};
pub(crate) use crate::process::{self, Blocked, Keep, Proc};
pub(crate) use crate::tty::{Termios, tty};
pub(crate) use crate::vfs::{self, Data, Ino, Node, fs};
pub(crate) use crate::{Call, Out, Server};
pub(crate) use crate::linux::fs::{AT_EMPTY_PATH, AT_FDCWD, AT_REMOVEDIR, AT_SYMLINK_NOFOLLOW, PATH_MAX};

/// A read or write that must wait (internal; never returned to Linux).
pub(crate) const WOULD_BLOCK: i64 = 100_000;
/// Bytes one read or write moves at most (bounds the server's buffers).
pub(crate) const IO_CHUNK: usize = 64 * 1024;
/// Linux processes at once (zombies included); fork says EAGAIN past it.
pub(crate) const MAX_PROCS: usize = 128;

pub(crate) fn ret(r: Result<i64, i64>) -> Out {
    match r {
        Ok(v) => Out::Ret(v),
        Err(WOULD_BLOCK) => Out::Block,
        Err(e) => Out::Ret(-e),
    }
}

impl Server {
    pub fn proc(&mut self, pid: i32) -> &mut Proc {
        self.procs.get_mut(&pid).expect("caller exists")
    }

    fn path(&mut self, pid: i32, va: u64) -> Result<String, i64> {
        let p = self.proc(pid);
        // The permission checks of what the path is used for judge by
        // the caller (vfs::Fs::cred).
        fs().as_caller(&p.cred);
        let bytes = p.mm.read_cstr(va, PATH_MAX)?;
        // Names are bytes: what is not UTF-8 is kept as bytenames says.
        let s = keep_workhorse::bytenames::from_bytes(&bytes);
        if s.is_empty() {
            return Err(ENOENT);
        }
        Ok(if s == "/proc/self/exe" { p.exe.clone() } else { s })
    }

    /// The directory a *at call starts from.
    fn dirfd(&mut self, pid: i32, dirfd: u64) -> Result<Ino, i64> {
        let p = self.proc(pid);
        if dirfd as i32 as i64 == AT_FDCWD {
            return Ok(p.cwd);
        }
        let d = p.fd(dirfd as i32 as u64)?.desc.clone();
        match d.borrow().kind {
            Kind::Dir { ino } => Ok(ino),
            _ => Err(ENOTDIR),
        }
    }
}

mod creds;
mod devices;
mod eventfd;
mod events;
pub(crate) mod fifo;
mod files;
mod futex;
pub(crate) mod inet;
mod io;
pub(crate) mod locks;
mod memory;
mod misc;
pub(crate) use misc::{now_ns, realtime_ns};
mod object;
pub(crate) mod pidfd;
mod procfs;
mod procs;
pub(crate) mod pty;
mod socket;
mod threads;
pub(crate) mod timers;

pub use creds::*;
pub use eventfd::*;
pub use events::*;
pub use files::*;
pub use futex::*;
pub use io::*;
pub use locks::flock;
pub use memory::*;
pub use misc::*;
pub use object::*;
pub use pidfd::{pidfd_open, pidfd_send_signal};
pub use procs::*;
pub use socket::*;
pub use threads::*;
pub use timers::*;
