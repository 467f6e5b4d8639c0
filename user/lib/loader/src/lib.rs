//! Starting programs from user space.
//!
//! * [`bootimg`] reads the boot image the kernel hands the root task.
//! * [`program`] validates a static ELF64 executable and plans, page by
//!   page, what goes where with which rights (pure, host-tested).
//! * [`spawn`] carries a plan out with kernel invocations: a fresh address
//!   space and process, pages filled through a scratch mapping, a stack,
//!   capabilities and registers.
//! * [`slots`] hands out the caller's free capability slots.
//! * [`testelf`] writes tiny ELF files for tests (host and in-guest).
//! * [`thread`] runs a function of the caller as a process in its space.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod bootimg;
pub mod program;
pub mod slots;
pub mod spawn;
pub mod testelf;
pub mod thread;

pub use bootimg::{BootImage, ImageError};
pub use program::{ElfError, Program};
pub use slots::SlotPool;
pub use spawn::{Blob, Child, FrameSource, Grant, LazyRange, LoadError, Loader, Spec};

/// Size of a page (4 KiB).
pub const PAGE_SIZE: u64 = keep_abi::layout::PAGE_SIZE;
