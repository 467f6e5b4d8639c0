//! /dev/zero, /dev/full, /dev/urandom and /dev/random (/dev/null and the
//! terminal are descriptor kinds of their own, fd.rs).

use super::*;
use super::io::{POLLIN, POLLOUT};
use super::object::{Object, new_obj};

#[derive(Clone, Copy, PartialEq)]
pub enum Dev {
    Zero,
    Full,
    Random,
}

impl Dev {
    /// The device a /dev path names, with its (major, minor).
    pub fn by_path(path: &str) -> Option<(Dev, u64)> {
        Some(match path {
            "/dev/zero" => (Dev::Zero, 5),
            "/dev/full" => (Dev::Full, 7),
            "/dev/random" => (Dev::Random, 8),
            "/dev/urandom" => (Dev::Random, 9),
            _ => return None,
        })
    }
}

pub struct Device {
    dev: Dev,
    minor: u64,
}

impl Object for Device {
    fn whole(&self) -> bool {
        true
    }
    fn read(&mut self, s: &mut Server, _: i32, max: usize) -> Result<Vec<u8>, i64> {
        let mut b = alloc::vec![0u8; max];
        if self.dev == Dev::Random {
            // The server's generator (see getrandom in the table).
            for chunk in b.chunks_mut(8) {
                let r = s.random().to_le_bytes();
                chunk.copy_from_slice(&r[..chunk.len()]);
            }
        }
        Ok(b)
    }
    fn write(&mut self, _: &mut Server, _: i32, data: &[u8]) -> Result<usize, i64> {
        if self.dev == Dev::Full { Err(28) } else { Ok(data.len()) } // ENOSPC
    }
    fn ready(&self) -> u16 {
        POLLIN | POLLOUT
    }
    fn stat(&self) -> (u32, u64) {
        (0o020666, makedev(1, self.minor))
    }
    fn name(&self) -> String {
        String::from(match self.minor {
            5 => "/dev/zero",
            7 => "/dev/full",
            8 => "/dev/random",
            _ => "/dev/urandom",
        })
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

/// The description of a device path, or None.
pub(crate) fn open(path: &str, flags: u32) -> Option<Desc> {
    let (dev, minor) = Dev::by_path(path)?;
    Some(Description::new(Kind::Object(new_obj(Device { dev, minor })), flags & (O_ACCMODE | O_NONBLOCK)))
}

/// fstat's bytes for a device path, or None.
pub(crate) fn stat(path: &str) -> Option<[u8; Stat::BYTES]> {
    let (_, minor) = Dev::by_path(path)?;
    Some(Stat::new(0o020666, 0x100 + minor, 1, 0, makedev(1, minor)).to_bytes())
}
