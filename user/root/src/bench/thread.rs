//! Processes that run a function of the root task in the root task's own
//! address space (sharing its memory and capability space): the same-space
//! IPC server, the faulting processes of the fault benchmarks and the
//! kpager.  Each has its own stack and IPC buffer, allocated by the root
//! task; a thread itself never allocates (the heap lock is not made for
//! several processes).

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, IpcBuffer, Process, SELF_ASPACE, slot};

use super::BenchResult;
use crate::Root;

/// What a thread's function gets.
pub struct Args {
    pub process: Process,
    pub words: [u64; 8],
    buf: *mut IpcBuffer,
}

impl Args {
    /// The thread's own IPC buffer.
    #[allow(clippy::mut_from_ref)]
    pub fn buf(&self) -> &mut IpcBuffer {
        // SAFETY: the buffer lives as long as the Thread; only this thread
        // uses it.
        unsafe { &mut *self.buf }
    }
}

pub type Body = fn(&Args) -> u64;

struct Start {
    body: Body,
    args: Args,
}

pub struct Thread {
    pub process: Process,
    start: Box<Start>,
    _stack: Vec<u64>,
    _buf: Box<IpcBuffer>,
}

const STACK_WORDS: usize = 4096;

extern "C" fn entry(start: *const Start) -> ! {
    // SAFETY: the Start outlives the process (Thread owns it and destroys
    // the process before dropping it).
    let s = unsafe { &*start };
    let code = (s.body)(&s.args);
    let _ = s.args.process.exit(code);
    loop {
        // SAFETY: ud2 only raises #UD.
        unsafe { core::arch::asm!("ud2", options(nomem, nostack)) };
    }
}

/// Makes a CREATED thread running `body` with `words` at `priority`.
pub fn create(
    root: &mut Root,
    name: &str,
    priority: u64,
    body: Body,
    words: [u64; 8],
) -> BenchResult<Thread> {
    let p = root.slots.alloc().ok_or("no free capability slot")?;
    if let Err(e) = ACCOUNT.create_process(slot::SELF_ASPACE, p) {
        root.slots.free(p);
        return Err(alloc::format!("CREATE_PROCESS failed: {e}"));
    }
    let process = Process(p);
    let mut buf = Box::new(IpcBuffer::new());
    let buf_ptr: *mut IpcBuffer = &mut *buf;
    let start = Box::new(Start {
        body,
        args: Args {
            process,
            words,
            buf: buf_ptr,
        },
    });
    let stack = vec![0u64; STACK_WORDS];
    // The ABI wants rsp + 8 to be 16-aligned at function entry.
    let top = (stack.as_ptr() as u64 + 8 * STACK_WORDS as u64) & !15;
    let t = Thread {
        process,
        start,
        _stack: stack,
        _buf: buf,
    };
    let setup = process
        .set_name(name)
        .and_then(|_| process.set_priority(priority))
        .and_then(|_| process.set_ipc_buffer(buf_ptr as u64))
        .and_then(|_| {
            process.set_regs(
                entry as *const () as u64,
                top - 8,
                &*t.start as *const Start as u64,
                0,
            )
        });
    if let Err(e) = setup {
        t.kill(root);
        return Err(alloc::format!("setting up thread {name} failed: {e}"));
    }
    Ok(t)
}

/// Makes and starts a thread.
pub fn spawn(
    root: &mut Root,
    name: &str,
    priority: u64,
    body: Body,
    words: [u64; 8],
) -> BenchResult<Thread> {
    let t = create(root, name, priority, body, words)?;
    if let Err(e) = t.process.start() {
        t.kill(root);
        return Err(alloc::format!("START of thread {name} failed: {e}"));
    }
    Ok(t)
}

impl Thread {
    /// Destroys the thread wherever it is.
    pub fn kill(self, root: &mut Root) {
        let _ = ACCOUNT.destroy(self.process.0);
        let _ = SELF_ASPACE.delete_cap(self.process.0);
        root.slots.free(self.process.0);
    }
}
