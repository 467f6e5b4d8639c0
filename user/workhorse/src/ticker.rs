//! The ticker: a second process in the server's address space that calls
//! the server every 50 ms while a program runs, so that the server polls
//! the terminal for Ctrl-C (a program busy in its own code makes no system
//! call) without a time-out on its receive.  A receive with a time-out
//! puts the server on the kernel's sleep list and every message takes it
//! off again: about 50 instructions of every Linux system call (issue 18,
//! docs/performance.md).  While a process waits for the terminal or the
//! clock the receive still has its 20 ms time-out (main.rs).
//!
//! The ticker calls with label TICK through a sender whose payload is
//! [`PAYLOAD`]; the answer's word 0 is how long to sleep before the next
//! tick.  While no program runs the server keeps the call unanswered
//! (main.rs), so an idle server is not woken.  The ticker makes no
//! allocation and touches nothing of the server's but its own stack and
//! IPC buffer.

use keep_abi::{ACCOUNT, IpcBuffer, Process, SELF_PROCESS, Sender, TIMER, Tag, slot};

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

extern "C" fn run(sender: u64) -> ! {
    let mut ms = 0;
    loop {
        if ms != 0 {
            let _ = TIMER.sleep(ms);
        }
        let m = Sender(sender).call(Tag::new(TICK), [0; 4]);
        ms = if m.err == 0 { m.words[0].clamp(1, 1000) } else { FALLBACK_MS };
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
    // The server may be a constructor's instance, whose pages come in
    // only when the main process touches them (docs/space-banks.md): the
    // ticker, with no pager of its own, would fault on its first push.
    // Touch its stack, its IPC buffer and its code (the page or two of
    // `run`; the calls it makes the server's own loop has made) first.
    // SAFETY: the ticker does not run yet; volatile accesses to statics
    // that only it uses, and reads of the server's own text.
    unsafe {
        for off in (0..STACK_BYTES).step_by(4096) {
            let b = (&raw mut STACK as *mut u8).add(off);
            b.write_volatile(b.read_volatile());
        }
        let buf = &raw mut BUFFER as *mut u8;
        for off in (0..core::mem::size_of::<IpcBuffer>()).step_by(4096) {
            buf.add(off).write_volatile(buf.add(off).read_volatile());
        }
        let code = run as *const u8;
        let _ = code.read_volatile();
        let _ = code.add(256).read_volatile();
    }
    let _ = TIMER.sleep(0);
    p.set_name("workhorse-ticker")?;
    p.set_ipc_buffer(&raw mut BUFFER as u64)?;
    p.set_regs(run as *const () as u64, top - 8, sender_slot, 0)?;
    p.start()
}
