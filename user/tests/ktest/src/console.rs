//! CONSOLE.READ's and WRITE's argument checks (abi/keep.toml): a length
//! out of 1..4096 (READ) or above 4096 (WRITE), a nonblocking flag other
//! than 0 or 1, and a buffer outside the caller's memory are refused with
//! nothing read or written; a non-blocking READ with no input waiting is
//! WOULD_BLOCK (nothing types on the console under the suite).

use keep_abi::{CONSOLE, Error, invoke, method};

use crate::fault::KERNEL_ADDR;
use crate::{Cx, TestResult, expect_err};

/// ktest's own memory never reaches this address (a hole of its space).
const UNMAPPED: u64 = 0x0000_6f00_0000_0000;

pub fn read_write_args(_: &mut Cx) -> TestResult {
    let mut buf = [0x5au8; 16];
    let p = buf.as_mut_ptr() as u64;
    let read = |ptr: u64, len: u64, nb: u64| invoke(CONSOLE.0, method::console::READ, [ptr, len, nb, 0]);
    for (len, nb, what) in [(0, 1, "READ of 0 bytes"), (4097, 1, "READ of 4097 bytes"), (u64::MAX, 1, "READ of 2^64-1 bytes"), (1, 2, "READ with nonblocking 2"), (1, u64::MAX, "READ with nonblocking all ones")] {
        expect_err(read(p, len, nb), Error::INVALID_ARG, what)?;
    }
    expect_err(read(KERNEL_ADDR, 1, 1), Error::FAULT, "READ into the kernel")?;
    expect_err(read(UNMAPPED, 16, 1), Error::FAULT, "READ into unmapped memory")?;
    expect_err(read(u64::MAX - 3, 16, 1), Error::FAULT, "READ into a range that wraps")?;
    expect_err(read(p, 16, 1), Error::WOULD_BLOCK, "non-blocking READ with no input")?;
    ensure!(buf == [0x5a; 16], "a refused READ wrote into the buffer: {buf:?}");
    let write = |ptr: u64, len: u64| invoke(CONSOLE.0, method::console::WRITE, [ptr, len, 0, 0]);
    expect_err(write(p, 4097), Error::INVALID_ARG, "WRITE of 4097 bytes")?;
    expect_err(write(KERNEL_ADDR, 8), Error::FAULT, "WRITE from the kernel")?;
    expect_err(write(UNMAPPED, 8), Error::FAULT, "WRITE from unmapped memory")?;
    let n = write(p, 0).map_err(|e| alloc::format!("WRITE of 0 bytes: {e:?}"))?;
    ensure!(n[0] == 0, "WRITE of 0 bytes wrote {}", n[0]);
    Ok(())
}
