//! Threads: processes that run a Rust function of the calling program in
//! its own address space (sharing its memory and capability space), each
//! with its own stack and IPC buffer on the caller's heap.  A thread must
//! not allocate: the heap lock is not made for processes of different
//! priorities.  ktest's servers and pagers and the benchmarks' partners are
//! threads.

use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, IpcBuffer, Process, SELF_ASPACE, Status, slot};

use crate::SlotPool;

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

/// Makes (but does not start) a thread running `body` at `priority`; its
/// `words` are the first of `Args::words`, the rest 0.
pub fn create(
    slots: &mut SlotPool,
    name: &str,
    priority: u64,
    body: Body,
    words: &[u64],
) -> Result<Thread, String> {
    create_sized(slots, name, priority, body, words, STACK_WORDS)
}

/// The same with a stack of `stack_words` words (a thread that calls
/// little needs less than the usual 32 KiB: init's watchers).
pub fn create_sized(
    slots: &mut SlotPool,
    name: &str,
    priority: u64,
    body: Body,
    words: &[u64],
    stack_words: usize,
) -> Result<Thread, String> {
    let p = slots.alloc().ok_or("no free capability slot")?;
    if let Err(e) = ACCOUNT.create_process(slot::SELF_ASPACE, p) {
        slots.free(p);
        return Err(format!("CREATE_PROCESS in own aspace failed: {e}"));
    }
    let process = Process(p);
    let mut all = [0u64; 8];
    all[..words.len()].copy_from_slice(words);
    let mut buf = Box::new(IpcBuffer::new());
    let buf_ptr: *mut IpcBuffer = &mut *buf;
    let start = Box::new(Start {
        body,
        args: Args {
            process,
            words: all,
            buf: buf_ptr,
        },
    });
    let stack = vec![0u64; stack_words];
    // The ABI wants rsp + 8 to be 16-aligned at function entry.
    let top = (stack.as_ptr() as u64 + 8 * stack_words as u64) & !15;
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
        t.kill(slots);
        return Err(format!("setting up thread {name} failed: {e}"));
    }
    Ok(t)
}

/// Makes and starts a thread.
pub fn spawn(
    slots: &mut SlotPool,
    name: &str,
    priority: u64,
    body: Body,
    words: &[u64],
) -> Result<Thread, String> {
    spawn_sized(slots, name, priority, body, words, STACK_WORDS)
}

/// Makes and starts a thread with a stack of `stack_words` words.
pub fn spawn_sized(
    slots: &mut SlotPool,
    name: &str,
    priority: u64,
    body: Body,
    words: &[u64],
    stack_words: usize,
) -> Result<Thread, String> {
    let t = create_sized(slots, name, priority, body, words, stack_words)?;
    if let Err(e) = t.process.start() {
        t.kill(slots);
        return Err(format!("START of thread {name} failed: {e}"));
    }
    Ok(t)
}

impl Thread {
    /// Waits for the thread to end, then destroys it.
    pub fn join(self, slots: &mut SlotPool) -> Result<Status, String> {
        let s = self.process.wait().map_err(|e| format!("WAIT for thread: {e}"));
        self.kill(slots);
        s
    }

    /// Destroys the thread wherever it is and frees its slot.
    pub fn kill(self, slots: &mut SlotPool) {
        let _ = ACCOUNT.destroy(self.process.0);
        let _ = SELF_ASPACE.delete_cap(self.process.0);
        slots.free(self.process.0);
    }
}
