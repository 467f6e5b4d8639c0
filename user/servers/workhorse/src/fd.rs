//! Open file descriptions (what a file descriptor refers to; dup and fork
//! share them) and pipes.

use alloc::collections::VecDeque;
use alloc::rc::Rc;
use core::cell::RefCell;

use crate::vfs::{Ino, fs};
pub(crate) use crate::linux::fs::{O_ACCMODE, O_APPEND, O_CLOEXEC, O_CREAT, O_DIRECTORY, O_EXCL, O_NOCTTY, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_TRUNC, O_WRONLY};

/// Bytes a new pipe holds before writers wait.
pub const PIPE_SIZE: usize = 16384;
/// The most F_SETPIPE_SZ gives (Linux's pipe-max-size, which a process
/// without CAP_SYS_RESOURCE cannot pass: the server bounds its memory).
pub const PIPE_MAX_SIZE: usize = 1 << 20;

pub struct Pipe {
    pub buf: VecDeque<u8>,
    pub readers: u32,
    pub writers: u32,
    /// Counts reads and writes (edge-triggered epoll reports each).
    pub generation: u64,
    /// Bytes it holds before writers wait (F_SETPIPE_SZ).
    pub size: usize,
}

impl Pipe {
    pub fn new() -> Pipe {
        Pipe { buf: VecDeque::new(), readers: 0, writers: 0, generation: 0, size: PIPE_SIZE }
    }

    /// Room for more bytes.
    pub fn room(&self) -> usize {
        self.size.saturating_sub(self.buf.len())
    }

    /// F_SETPIPE_SZ: `arg` (an unsigned int, as Linux takes it) rounded up
    /// to a power of two pages, at least one; EINVAL past 2^31, EPERM past
    /// PIPE_MAX_SIZE, EBUSY below the bytes it holds.  The new size.
    pub fn resize(&mut self, arg: u64) -> Result<usize, i64> {
        let arg = arg as u32 as usize;
        if arg > 1 << 31 {
            return Err(crate::errno::EINVAL);
        }
        let size = arg.max(4096).next_power_of_two();
        if size > PIPE_MAX_SIZE {
            return Err(crate::errno::EPERM);
        }
        if size < self.buf.len() {
            return Err(crate::errno::EBUSY);
        }
        self.size = size;
        Ok(size)
    }
}

pub enum Kind {
    /// The terminal (the Keep console through the server's line discipline).
    Console,
    File { ino: Ino },
    Dir { ino: Ino },
    /// A pipe's end, or both (a FIFO opened O_RDWR): which, the
    /// description's access mode says.  A named pipe (sys/fifo.rs) also
    /// names its file.
    Pipe(Rc<RefCell<Pipe>>, Option<Ino>),
    /// /dev/null.
    Null,
    /// A file made when opened (/proc/meminfo and the like).
    Generated(Rc<[u8]>),
    /// epoll, sockets, /dev/zero...: sys/object.rs.
    Object(crate::sys::Obj),
}

pub struct Description {
    pub kind: Kind,
    /// O_ACCMODE, O_APPEND, O_NONBLOCK as opened (fcntl F_SETFL changes
    /// the last two).
    pub flags: u32,
    pub pos: u64,
}

pub type Desc = Rc<RefCell<Description>>;


impl Description {
    pub fn new(kind: Kind, flags: u32) -> Desc {
        match &kind {
            Kind::File { ino } | Kind::Dir { ino } => fs().get_mut(*ino).opens += 1,
            Kind::Pipe(p, file) => {
                let mut p = p.borrow_mut();
                p.readers += (flags & O_ACCMODE != O_WRONLY) as u32;
                p.writers += (flags & O_ACCMODE != O_RDONLY) as u32;
                if let Some(ino) = file {
                    fs().get_mut(*ino).opens += 1;
                }
            }
            _ => {}
        }
        Rc::new(RefCell::new(Description { kind, flags, pos: 0 }))
    }

    pub fn readable(&self) -> bool {
        self.flags & O_ACCMODE != O_WRONLY
    }

    pub fn writable(&self) -> bool {
        self.flags & O_ACCMODE != O_RDONLY
    }
}

impl Drop for Description {
    fn drop(&mut self) {
        // Its OFD and flock locks (sys/locks.rs know it by this address,
        // the RefCell's contents).
        crate::sys::locks::description_dropped(self as *const Description as usize);
        match &self.kind {
            Kind::File { ino } | Kind::Dir { ino } => {
                let f = fs();
                f.get_mut(*ino).opens -= 1;
                f.release(*ino);
            }
            Kind::Pipe(p, file) => {
                {
                    let mut p = p.borrow_mut();
                    p.readers -= self.readable() as u32;
                    p.writers -= self.writable() as u32;
                }
                if let Some(ino) = file {
                    let f = fs();
                    f.get_mut(*ino).opens -= 1;
                    f.release(*ino);
                }
            }
            _ => {}
        }
    }
}

/// A file descriptor: a description and the close-on-exec flag.
#[derive(Clone)]
pub struct Fd {
    pub desc: Desc,
    pub cloexec: bool,
}
