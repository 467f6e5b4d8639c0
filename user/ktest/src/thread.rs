//! Processes that run a Rust function of ktest in ktest's own address
//! space (so they share its memory and its capability space): servers,
//! pagers and kpagers for the IPC and fault tests.  Each has its own stack
//! and IPC buffer on the heap.  A thread must not allocate: the heap lock
//! is not made for processes of different priorities.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, IpcBuffer, Process, Status, slot};

use crate::{Ctx, Cx};

/// What a thread's function gets.
pub struct Args {
    pub process: Process,
    pub words: [u64; 4],
    buf: *mut IpcBuffer,
}

impl Args {
    /// The thread's own IPC buffer.
    #[allow(clippy::mut_from_ref)]
    pub fn buf(&self) -> &mut IpcBuffer {
        // SAFETY: the buffer lives as long as the Thread and only this
        // thread uses it.
        unsafe { &mut *self.buf }
    }
}

/// The function a thread runs; its result is the exit code.
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
    // SAFETY: the Start outlives the thread (Thread owns it and destroys
    // the process before dropping it).
    let s = unsafe { &*start };
    let code = (s.body)(&s.args);
    let _ = s.args.process.exit(code);
    loop {
        // SAFETY: ud2 only raises #UD.
        unsafe { core::arch::asm!("ud2", options(nomem, nostack)) };
    }
}

/// Makes (but does not start) a thread running `body` with `words` at
/// `priority`.
pub fn create(
    cx: &mut Cx,
    name: &str,
    priority: u64,
    body: Body,
    words: [u64; 4],
) -> Result<Thread, String> {
    let p = cx.slot()?;
    if let Err(e) = ACCOUNT.create_process(slot::SELF_ASPACE, p) {
        cx.slots.free(p);
        return Err(alloc::format!("CREATE_PROCESS in own aspace failed: {e}"));
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
        t.kill(cx);
        return Err(alloc::format!("setting up thread {name} failed: {e}"));
    }
    Ok(t)
}

/// Makes and starts a thread.
pub fn spawn(
    cx: &mut Cx,
    name: &str,
    priority: u64,
    body: Body,
    words: [u64; 4],
) -> Result<Thread, String> {
    let t = create(cx, name, priority, body, words)?;
    if let Err(e) = t.process.start() {
        t.kill(cx);
        return Err(alloc::format!("START of thread {name} failed: {e}"));
    }
    Ok(t)
}

impl Thread {
    /// Waits for the thread to end, then destroys it.
    pub fn join(self, cx: &mut Cx) -> Result<Status, String> {
        let s = self.process.wait().ctx("WAIT for thread");
        self.kill(cx);
        s
    }

    /// Destroys the thread wherever it is.
    pub fn kill(self, cx: &mut Cx) {
        let _ = ACCOUNT.destroy(self.process.0);
        cx.drop_slot(self.process.0);
    }
}
