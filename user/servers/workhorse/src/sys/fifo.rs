//! Named pipes (`mkfifo`, fifo(7)).  A FIFO file gets a pipe at its first
//! open, which every later open shares while any end is open; when the
//! last end closes, what was left unread is dropped, as on Linux.
//!
//! Opening one end waits for the other (open(2)): a reader without
//! `O_NONBLOCK` until a writer has opened, a writer until there is a
//! reader (with `O_NONBLOCK` a reader opens at once and a writer fails
//! with `ENXIO`); `O_RDWR` is both ends and never waits.  A waiting open
//! is retried like any blocked call (main.rs `retry`), so the wait is
//! recorded here, per process: the file, which end, and how many opens of
//! the other end there had been when it began.  An open of the other end
//! since then lets it go on even if that end has closed again (a writer
//! that opened, wrote and closed before the reader ran).

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use core::cell::RefCell;

use super::*;

const SYS_OPEN: u64 = 2;
const SYS_OPENAT: u64 = 257;

struct Fifo {
    pipe: Rc<RefCell<Pipe>>,
    /// Opens of each end so far (a waiting open compares them).
    reader_opens: u64,
    writer_opens: u64,
}

/// An open waiting for the other end.
#[derive(Clone, Copy)]
struct Wait {
    ino: Ino,
    reader: bool,
    /// The other end's opens when the wait began.
    seen: u64,
}

/// The named pipes open or being opened (the server's `fifos`).
#[derive(Default)]
pub struct Fifos {
    open: BTreeMap<Ino, Fifo>,
    waits: BTreeMap<i32, Wait>,
}

/// Whether `pid` still waits in an open (its wait is not one it left, by a
/// signal or by ending).
fn still_waiting(procs: &BTreeMap<i32, Proc>, pid: i32) -> bool {
    procs.get(&pid).is_some_and(|p| matches!(p.blocked, Some(Blocked::Call(c)) if c.nr == SYS_OPEN || c.nr == SYS_OPENAT))
}

/// Opens the FIFO `ino` for `pid` with `flags`: the descriptor's kind, or
/// WOULD_BLOCK while the other end is missing.
pub(crate) fn open(s: &mut Server, pid: i32, ino: Ino, flags: u32) -> Result<Kind, i64> {
    let Server { procs, fifos: t, .. } = s;
    t.waits.retain(|p, _| still_waiting(procs, *p) || *p == pid);
    let waits = &t.waits;
    // Pipes no end holds and no open waits for are dropped with their bytes.
    t.open.retain(|i, f| Rc::strong_count(&f.pipe) > 1 || waits.values().any(|w| w.ino == *i));
    let f = t.open.entry(ino).or_insert_with(|| Fifo {
        pipe: Rc::new(RefCell::new(Pipe::new())),
        reader_opens: 0,
        writer_opens: 0,
    });
    let (reader, writer) = match flags & O_ACCMODE {
        O_RDONLY => (true, false),
        O_WRONLY => (false, true),
        O_RDWR => (true, true),
        _ => return Err(EINVAL),
    };
    let nonblock = flags & O_NONBLOCK != 0;
    let mine = t.waits.get(&pid).copied().filter(|w| w.ino == ino && w.reader == reader);
    let go = if reader && writer {
        true
    } else if reader {
        let other = f.writer_opens;
        nonblock || f.pipe.borrow().writers > 0 || mine.is_some_and(|w| w.seen != other)
    } else {
        let readers = f.pipe.borrow().readers > 0 || t.waits.iter().any(|(p, w)| *p != pid && w.ino == ino && w.reader);
        if !readers && nonblock {
            return Err(ENXIO);
        }
        readers || mine.is_some_and(|w| w.seen != f.reader_opens)
    };
    if !go {
        if mine.is_none() {
            let seen = if reader { f.writer_opens } else { f.reader_opens };
            t.waits.insert(pid, Wait { ino, reader, seen });
        }
        return Err(WOULD_BLOCK);
    }
    t.waits.remove(&pid);
    f.reader_opens += reader as u64;
    f.writer_opens += writer as u64;
    Ok(Kind::Pipe(f.pipe.clone(), Some(ino)))
}
