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
//! - arg0 = 2: the same as 0 through a dataspace (docs/dataspaces.md):
//!   given the dataspace manager at DS_SLOT, it creates a 32-page
//!   dataspace, shares it read-write with the block server (`ATTACH`),
//!   writes its range 128 sectors (64 KiB) a request from the first half
//!   (`WRITE_DS`), flushes, reads each request's sectors back into the
//!   second half (`READ_DS`) and compares checksums.
//!
//! Exit 2: no capability; 3: data differ; 4: a request failed.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;

use keep_abi::{SELF_ASPACE, Sender, rights, slot};
use keep_blk::{Client, Error, NO_RIGHTS, SECTOR};
use keep_dataspace::{DS_SLOT, Dataspace, Manager};
use keep_rt::println;
use keep_virtio::{checksum, disk_pattern};

keep_rt::entry!(main);

/// Where the starter puts the client capability.
pub const CLIENT_SLOT: u64 = 0xd;

fn data(seed: u64, sector: u64) -> vec::Vec<u8> {
    (0..8 * SECTOR as u64).map(|i| ((i ^ sector.wrapping_mul(0x9e37)) .wrapping_add(seed) % 253) as u8).collect()
}

/// Where mode 2 maps its dataspace, and the slots of its capabilities.
const VA: u64 = 0x0000_3000_0000_0000;
const OWN: u64 = 0x20;
const SHARED: u64 = 0x21;
const HALF: u64 = 64 * 1024;

fn through_dataspace(c: Client, sectors: u64, seed: u64) -> i32 {
    let own = Dataspace(Sender(OWN));
    let made = Manager(Sender(DS_SLOT)).create(32, keep_dataspace::BANK_SLOT, OWN).and_then(|_| own.map(slot::SELF_ASPACE, VA, 0, 32, rights::READ | rights::WRITE));
    if let Err(e) = made.and_then(|_| own.share(rights::READ | rights::WRITE, SHARED)) {
        println!("blkcheck: dataspace: {e}");
        return 4;
    }
    let buffer = match c.attach(SHARED) {
        Ok((b, _, _)) => b,
        Err(e) => {
            println!("blkcheck: ATTACH: {e}");
            return 4;
        }
    };
    // SAFETY: the dataspace is mapped read-write at VA, 128 KiB.
    let mem = unsafe { core::slice::from_raw_parts_mut(VA as *mut u8, 2 * HALF as usize) };
    let chunk = HALF / SECTOR as u64;
    let mut sums = vec::Vec::new();
    let mut at = 0;
    while at + chunk <= sectors {
        for k in 0..chunk / 8 {
            let d = data(seed, at + k * 8);
            mem[(k * 8) as usize * SECTOR..][..d.len()].copy_from_slice(&d);
        }
        sums.push(checksum(&mem[..HALF as usize]));
        if let Err(e) = c.write_ds(buffer, 0, at, chunk) {
            println!("blkcheck: WRITE_DS at {at}: {e}");
            return 4;
        }
        at += chunk;
    }
    if let Err(e) = c.flush() {
        println!("blkcheck: FLUSH: {e}");
        return 4;
    }
    for (i, sum) in sums.iter().enumerate() {
        let at = i as u64 * chunk;
        mem[HALF as usize..].fill(0);
        if let Err(e) = c.read_ds(buffer, HALF, at, chunk) {
            println!("blkcheck: READ_DS at {at}: {e}");
            return 4;
        }
        if checksum(&mem[HALF as usize..]) != *sum {
            println!("blkcheck: sectors {at}-{}: checksum differs", at + chunk - 1);
            return 3;
        }
    }
    let _ = c.detach(buffer);
    let _ = own.destroy();
    let _ = SELF_ASPACE.delete_cap(OWN);
    let _ = SELF_ASPACE.delete_cap(SHARED);
    0
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
        2 => through_dataspace(c, sectors, arg),
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
