//! The ticker: a second process in the server's address space that calls
//! the server every 50 ms while a program runs, so that interval timers
//! fire in a program busy in its own code (which makes no system call),
//! and, when the server has no terminal of the console multiplexer, so
//! that it polls the kernel's console for Ctrl-C; all without a time-out
//! on its receive.  A receive with a time-out puts the server on the
//! kernel's sleep list and every message takes it off again: about 50
//! instructions of every Linux system call (docs/performance.md).  Input
//! on the multiplexer's terminal comes as a notification instead
//! (tty.rs).
//!
//! The ticker calls with label TICK through a sender whose payload is
//! [`PAYLOAD`]; the answer's word 0 is how long to sleep before the next
//! tick.  While no program runs the server keeps the call unanswered
//! (main.rs), so an idle server is not woken.  The ticker makes no
//! allocation and touches nothing of the server's but its own stack and
//! IPC buffer.
//!
//! It has no fault handler: the server's pages come from its constructor's
//! pager as the server touches them, so `start` touches every page the
//! ticker will use first (its stack, its IPC buffer and its code, one
//! function whose system calls are inlined).

use keep_abi::{ACCOUNT, IpcBuffer, Process, SELF_PROCESS, Tag, method, slot, syscall, tag};

/// The payload of the ticker's sender: above any Linux pid (a positive
/// i32) and the root task's 0.
pub const PAYLOAD: u64 = 1 << 63;
/// The label of a tick.
pub const TICK: u64 = 1;
/// What the ticker sleeps if a call fails (it never should).
const FALLBACK_MS: u64 = 50;

const STACK_BYTES: usize = 16 * 1024;

#[repr(C, align(4096))]
struct Stack([u8; STACK_BYTES]);

static mut STACK: Stack = Stack([0; STACK_BYTES]);
static mut BUFFER: IpcBuffer = IpcBuffer::new();

/// The ticker's code: one function (the system calls are inlined), so
/// that `start` can touch all of it.
#[inline(never)]
extern "C" fn run(sender: u64) -> ! {
    let mut ms = 0;
    loop {
        if ms != 0 {
            let _ = syscall(slot::TIMER, method::timer::SLEEP, [ms, 0, 0, 0], 0);
        }
        let (err, _, _, w) = syscall(sender, Tag::new(TICK).with_mode(tag::MODE_CALL).0, [0; 4], 0);
        ms = if err == 0 { w[0].clamp(1, 1000) } else { FALLBACK_MS };
    }
}

/// How much of the code from `run` on is touched (more than its size).
const CODE_BYTES: u64 = 512;

/// Touches [from, from+len): each page once (`write`: written as it is).
fn touch(from: u64, len: u64, write: bool) {
    let mut a = from & !4095;
    while a < from + len {
        // SAFETY: a lies in the server's own stack, buffer or code, mapped
        // (or mapped by its pager on this access); a write stores back
        // the byte read.
        unsafe {
            let p = a.max(from) as *mut u8;
            let b = core::ptr::read_volatile(p);
            if write {
                core::ptr::write_volatile(p, b);
            }
        }
        a += 4096;
    }
}

/// Makes and starts the ticker at the server's priority (a created
/// process's, like the Linux processes'), with its sender in `sender_slot`
/// and its process in `process_slot`.
pub fn start(process_slot: u64, sender_slot: u64) -> keep_abi::Result<()> {
    SELF_PROCESS.mint(sender_slot, PAYLOAD, 0)?;
    ACCOUNT.create_process(slot::SELF_ASPACE, process_slot)?;
    let p = Process(process_slot);
    let stack = &raw mut STACK as u64;
    // The ABI wants rsp + 8 16-aligned at a function's entry.
    let top = (stack + STACK_BYTES as u64) & !15;
    touch(stack, STACK_BYTES as u64, true);
    touch(&raw mut BUFFER as u64, size_of::<IpcBuffer>() as u64, true);
    touch(run as *const () as u64, CODE_BYTES, false);
    p.set_name("workhorse-ticker")?;
    p.set_ipc_buffer(&raw mut BUFFER as u64)?;
    p.set_regs(run as *const () as u64, top - 8, sender_slot, 0)?;
    p.start()
}
