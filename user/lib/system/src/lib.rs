//! How the running system is put together (docs/space-banks.md, "The
//! system description"): the parser of the description the root task
//! reads from the boot image (`system`), and the protocol of the name
//! service through which a program asks for the servers it was granted,
//! and of `init`, which starts and supervises the servers.
//!
//! The parser is pure (host-tested); the root task carries a description
//! out (user/root/src/system.rs).

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod desc;
pub mod grant;
pub mod init;
pub mod names;

pub use desc::{Description, Entry, Kind, ParseError, parse};
