//! Descriptor kinds beyond files, pipes and the terminal (epoll, sockets,
//! /dev/zero and friends) are objects behind one trait, so that read,
//! write, poll and fstat reach them through one arm each (`Kind::Object`).

use core::any::Any;

use super::*;

pub trait Object: Any {
    /// At most `max` bytes; `Err(WOULD_BLOCK)` when it must wait (EAGAIN
    /// for a non-blocking description is the caller's).
    fn read(&mut self, s: &mut Server, pid: i32, max: usize) -> Result<Vec<u8>, i64> {
        let _ = (s, pid, max);
        Err(EINVAL)
    }
    fn write(&mut self, s: &mut Server, pid: i32, data: &[u8]) -> Result<usize, i64> {
        let _ = (s, pid, data);
        Err(EINVAL)
    }
    /// A read or write of it is never short (a device like /dev/zero): one
    /// call moves all that was asked for, IO_CHUNK at a time.
    fn whole(&self) -> bool {
        false
    }
    /// What poll would say now (POLLIN, POLLOUT, POLLHUP, POLLERR...).
    fn ready(&self) -> u16;
    /// Grows when something happens that an edge-triggered epoll reports
    /// again (data came, room was made).
    fn generation(&self) -> u64 {
        0
    }
    /// fstat's mode and device number.
    fn stat(&self) -> (u32, u64);
    /// What /proc/PID/fd/N links to.
    fn name(&self) -> String {
        String::from("anon_inode:[unknown]")
    }
    /// A directory's entries (name, inode, d_type), for getdents64.
    fn entries(&self) -> Option<Vec<(String, u64, u8)>> {
        None
    }
    fn as_any(&mut self) -> &mut dyn Any;
}

pub type Obj = alloc::rc::Rc<core::cell::RefCell<dyn Object>>;

pub(crate) fn new_obj<T: Object>(o: T) -> Obj {
    alloc::rc::Rc::new(core::cell::RefCell::new(o))
}

/// The object of descriptor `fd` as a `T` (EINVAL when it is another
/// object, `not` when it is no object at all).
pub(crate) fn with_obj<T: Object, R>(
    s: &mut Server,
    pid: i32,
    fd: u64,
    not: i64,
    f: impl FnOnce(&mut Server, &mut T, &Desc) -> Result<R, i64>,
) -> Result<R, i64> {
    let d = super::io::desc(s, pid, fd)?;
    let obj = match &d.borrow().kind {
        Kind::Object(o) => o.clone(),
        _ => return Err(not),
    };
    let mut o = obj.borrow_mut();
    let t = o.as_any().downcast_mut::<T>().ok_or(not)?;
    f(s, t, &d)
}
