//! blkcheck: a block client in a process of its own (docs/devices.md).  It
//! is given a client capability of the block server at CLIENT_SLOT.
//!
//! - arg0 = 0: write the whole range, 8 sectors a request, with data that
//!   depends on arg1 (a seed) and the sector, then read it all back and
//!   compare checksums; exit 0 if all match.
//! - arg0 = 1: read the range and check it holds the disk image's pattern
//!   from sector arg1 on (tools/mkdisk.py), and that a write is refused
//!   with NO_RIGHTS; exit 0 if so.
//!
//! Exit 2: no capability; 3: data differ; 4: a request failed.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;

use keep_abi::Sender;
use keep_blk::{Client, Error, NO_RIGHTS, SECTOR};
use keep_rt::println;
use keep_virtio::{checksum, disk_pattern};

keep_rt::entry!(main);

/// Where the starter puts the client capability.
pub const CLIENT_SLOT: u64 = 0xd;

fn data(seed: u64, sector: u64) -> vec::Vec<u8> {
    (0..8 * SECTOR as u64).map(|i| ((i ^ sector.wrapping_mul(0x9e37)) .wrapping_add(seed) % 253) as u8).collect()
}

fn main(mode: u64, arg: u64) -> i32 {
    let c = Client(Sender(CLIENT_SLOT));
    let (sectors, _) = match c.info() {
        Ok(i) => i,
        Err(e) => {
            println!("blkcheck: no block client capability: {e}");
            return 2;
        }
    };
    let mut buf = vec![0u8; 8 * SECTOR];
    match mode {
        0 => {
            let mut at = 0;
            while at + 8 <= sectors {
                if let Err(e) = c.write(at, &data(arg, at)) {
                    println!("blkcheck: write at {at}: {e}");
                    return 4;
                }
                at += 8;
            }
            let mut at = 0;
            while at + 8 <= sectors {
                if let Err(e) = c.read(at, &mut buf) {
                    println!("blkcheck: read at {at}: {e}");
                    return 4;
                }
                if checksum(&buf) != checksum(&data(arg, at)) {
                    println!("blkcheck: sectors {at}-{}: checksum differs", at + 7);
                    return 3;
                }
                at += 8;
            }
            0
        }
        _ => {
            let mut at = 0;
            while at + 8 <= sectors {
                if let Err(e) = c.read(at, &mut buf) {
                    println!("blkcheck: read at {at}: {e}");
                    return 4;
                }
                for (i, w) in buf.chunks(8).enumerate() {
                    let (s, k) = (arg + at + i as u64 / 64, i as u64 % 64);
                    if u64::from_le_bytes(w.try_into().unwrap()) != disk_pattern(s, k) {
                        println!("blkcheck: sector {s} word {k} is not the image's");
                        return 3;
                    }
                }
                at += 8;
            }
            match c.write(0, &buf[..SECTOR]) {
                Err(Error::Status(NO_RIGHTS)) => 0,
                r => {
                    println!("blkcheck: a write through a read-only client: {r:?}");
                    4
                }
            }
        }
    }
}
