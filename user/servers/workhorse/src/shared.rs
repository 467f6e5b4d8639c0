//! What the threads of one Linux process share (its memory, descriptor
//! table and signal actions): a handle that each thread's `Proc` holds and
//! reaches as if it were its own field (`p.mm.read(..)`, `p.fds[3]`).
//!
//! The server is single threaded and never keeps a reference taken
//! through one handle while it takes another through a second handle of the
//! same value (each handler works on one process at a time), the same rule
//! as `env()`; so the value lives in an `UnsafeCell` rather than a
//! `RefCell`, whose guards would change every use.

use alloc::rc::Rc;
use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

pub struct Shared<T>(Rc<UnsafeCell<T>>);

impl<T> Shared<T> {
    pub fn new(v: T) -> Shared<T> {
        Shared(Rc::new(UnsafeCell::new(v)))
    }

    /// Another handle to the same value (a new thread's).  Not `Clone`, so
    /// that `x.clone()` copies the value (fork) and sharing is explicit.
    pub fn share(&self) -> Shared<T> {
        Shared(self.0.clone())
    }

    /// No other thread holds it.
    pub fn is_unique(&self) -> bool {
        Rc::strong_count(&self.0) == 1
    }

    /// The value's identity (a futex key's, a thread group's).
    pub fn id(&self) -> usize {
        Rc::as_ptr(&self.0) as usize
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: see the module comment.
        unsafe { &*self.0.get() }
    }
}

impl<T> DerefMut for Shared<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: see the module comment.
        unsafe { &mut *self.0.get() }
    }
}
