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

static READ_BUF: [core::sync::atomic::AtomicU8; 4] = [const { core::sync::atomic::AtomicU8::new(0x5a) }; 4];
static READ_DONE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// A thread whose blocking READ of 4 bytes waits for input that never comes.
fn reader(_: &keep_loader::thread::Args) -> u64 {
    let r = CONSOLE.read_raw(READ_BUF.as_ptr() as u64, 4, 0);
    READ_DONE.store(1 + r.map_or_else(|e| e.0, |n| n << 32), core::sync::atomic::Ordering::SeqCst);
    0
}

/// CON0006: a blocking CONSOLE.READ with no input waits (BLOCKED, nothing
/// written, no answer); STOP takes it out of the wait and START puts it
/// back into the same READ, still waiting; ktest's non-blocking READ beside
/// it is WOULD_BLOCK.
pub fn read_blocks(cx: &mut Cx) -> TestResult {
    use core::sync::atomic::Ordering::SeqCst;
    use keep_abi::state;
    use crate::Ctx;
    READ_DONE.store(0, SeqCst);
    // Above ktest's priority: it runs at once and blocks in its READ.
    let t = keep_loader::thread::spawn(&mut cx.slots, "ktest-reader", 12, reader, &[])?;
    let r = (|| {
        let blocked = |what: &str| -> TestResult {
            let st = t.process.status().ctx("STATUS")?;
            ensure!(st.state == state::BLOCKED, "{what}: the reader is {st}, not waiting");
            ensure!(READ_DONE.load(SeqCst) == 0, "{what}: the READ answered {:#x}", READ_DONE.load(SeqCst));
            ensure!(READ_BUF.iter().all(|b| b.load(SeqCst) == 0x5a), "{what}: the READ wrote its buffer");
            Ok(())
        };
        blocked("started")?;
        let mut b = [0u8; 1];
        expect_err(CONSOLE.read_raw(b.as_mut_ptr() as u64, 1, 1), Error::WOULD_BLOCK, "a non-blocking READ beside it")?;
        t.process.stop().ctx("STOP")?;
        let st = t.process.status().ctx("STATUS")?;
        ensure!(st.state == state::STOPPED, "after STOP the reader is {st}");
        t.process.start().ctx("START")?;
        blocked("started again")
    })();
    t.kill(&mut cx.slots);
    r
}
