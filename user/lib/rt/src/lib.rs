//! Run-time support of Keep user programs: the entry point, the memory
//! functions the compiler calls, a heap, the IPC buffer, console output and
//! the panic handler.
//!
//! A program is `#![no_std]` and `#![no_main]`, defines
//! `fn main(arg0: u64, arg1: u64) -> i32` and names it with
//! [`entry!`]; `arg0` and `arg1` are the rdi and rsi its creator set.  When
//! `main` returns, the process exits with its value.

#![no_std]

pub use keep_abi as abi;

pub mod console;
pub mod icount;
mod mem;

use core::alloc::{GlobalAlloc, Layout};
use core::panic::PanicInfo;
use linked_list_allocator::LockedHeap;

/// Bytes of heap every program gets (zeroed memory in .bss).
pub const HEAP_SIZE: usize = 1 << 20;

static ALLOCATOR: LockedHeap = LockedHeap::empty();

static mut HEAP: [u8; HEAP_SIZE] = [0; HEAP_SIZE];

/// The allocator `alloc` uses: the 1 MiB heap, or from the moment a program
/// names one with [`set_allocator`], that one (blocks of the 1 MiB heap
/// still go back to it).
struct Rt;

/// A program's own allocator (a server that needs more than 1 MiB grows
/// its own; the workhorse does).  Set once, before any thread starts.
static mut OWN: Option<&'static dyn GlobalAlloc> = None;

fn own() -> Option<&'static dyn GlobalAlloc> {
    // SAFETY: written once by set_allocator before other threads exist.
    unsafe { *(&raw const OWN) }
}

fn in_heap(ptr: *mut u8) -> bool {
    let base = &raw const HEAP as usize;
    (base..base + HEAP_SIZE).contains(&(ptr as usize))
}

// SAFETY: both allocators are GlobalAllocs; a block goes back to the one
// it came from (told apart by address).
unsafe impl GlobalAlloc for Rt {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match own() {
            // SAFETY: forwarded as received.
            Some(a) => unsafe { a.alloc(layout) },
            None => unsafe { ALLOCATOR.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match own() {
            // SAFETY: forwarded to the allocator that made the block.
            Some(a) if !in_heap(ptr) => unsafe { a.dealloc(ptr, layout) },
            _ => unsafe { ALLOCATOR.dealloc(ptr, layout) },
        }
    }
}

#[global_allocator]
static RT: Rt = Rt;

/// Makes `a` the allocator for everything allocated from now on.
///
/// # Safety
/// Call it once, from the program's only thread, before any other thread
/// of the program exists.
pub unsafe fn set_allocator(a: &'static dyn GlobalAlloc) {
    // SAFETY: the caller promises there is no concurrent access.
    unsafe { *(&raw mut OWN) = Some(a) };
}

/// The program's IPC buffer (8 KiB, page-aligned, in .bss), named to the
/// kernel with SET_IPC_BUFFER at start-up.
static mut IPC_BUFFER: abi::IpcBuffer = abi::IpcBuffer::new();

/// The IPC buffer of the program's first process.  The program is single
/// threaded unless it starts processes in its own address space, which must
/// use buffers of their own.
#[allow(clippy::mut_from_ref)]
pub fn ipc_buffer() -> &'static mut abi::IpcBuffer {
    // SAFETY: only the main process uses this buffer and it never holds two
    // references across a call that would use the other.
    unsafe { &mut *(&raw mut IPC_BUFFER) }
}

/// The address of [`ipc_buffer`].
pub fn ipc_buffer_addr() -> u64 {
    (&raw const IPC_BUFFER) as u64
}

// The kernel enters with rdi and rsi set and the stack pointer at the top of
// the stack, not necessarily 16-byte aligned as the ABI wants for a call.
core::arch::global_asm!(
    ".pushsection .text._start, \"ax\", @progbits",
    ".globl _start",
    "_start:",
    "and $-16, %rsp",
    "xor %ebp, %ebp",
    "call {start}",
    "ud2",
    ".popsection",
    start = sym start,
    options(att_syntax)
);

unsafe extern "Rust" {
    /// Defined by the program with [`entry!`].
    safe fn keep_main(arg0: u64, arg1: u64) -> i32;
}

/// Touches every page of the heap (a read, then the same byte back): a
/// program that replaces its constructor's fault handler, which pages its
/// zero pages in on first touch (docs/space-banks.md, "Paging"), must have
/// them all first.
pub fn touch_heap() {
    let base = &raw mut HEAP as *mut u8;
    for off in (0..HEAP_SIZE).step_by(4096) {
        // SAFETY: the byte lies in HEAP; the same value is written back,
        // and the program is single threaded while it does this.
        unsafe { core::ptr::write_volatile(base.add(off), core::ptr::read_volatile(base.add(off))) };
    }
}

extern "C" fn start(arg0: u64, arg1: u64) -> ! {
    // SAFETY: runs once, before anything allocates; HEAP is used only here.
    unsafe { ALLOCATOR.lock().init(&raw mut HEAP as *mut u8, HEAP_SIZE) };
    // A program its constructor loaded lazily gets its zero pages on first
    // touch, but the kernel does not fault memory in for an invocation:
    // touch each page of the IPC buffer (a read, then the same byte back).
    let base = ipc_buffer_addr() as *mut u8;
    for off in (0..core::mem::size_of::<abi::IpcBuffer>()).step_by(4096) {
        // SAFETY: the byte lies in IPC_BUFFER, which nothing uses yet.
        unsafe { core::ptr::write_volatile(base.add(off), core::ptr::read_volatile(base.add(off))) };
    }
    // Fails only without a writable SELF_PROCESS; such a program gets no
    // strings or capabilities in messages.
    let _ = abi::SELF_PROCESS.set_ipc_buffer(ipc_buffer_addr());
    exit(keep_main(arg0, arg1))
}

/// Names the program's `main(arg0: u64, arg1: u64) -> i32`.
#[macro_export]
macro_rules! entry {
    ($main:path) => {
        #[unsafe(no_mangle)]
        fn keep_main(arg0: u64, arg1: u64) -> i32 {
            let main: fn(u64, u64) -> i32 = $main;
            main(arg0, arg1)
        }
    };
}

/// Ends the process with `code` (as the unsigned exit code the parent sees).
pub fn exit(code: i32) -> ! {
    let _ = abi::SELF_PROCESS.exit(code as u32 as u64);
    // EXIT only returns if the slot does not hold our process: make the
    // failure visible as a fault rather than spinning.
    loop {
        // SAFETY: ud2 only raises #UD.
        unsafe { core::arch::asm!("ud2", options(nomem, nostack)) };
    }
}

/// The exit code of a program that panicked.
pub const PANIC_EXIT_CODE: i32 = 101;

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    match info.location() {
        Some(l) => println!("panic: {} at {}:{}", info.message(), l.file(), l.line()),
        None => println!("panic: {}", info.message()),
    }
    exit(PANIC_EXIT_CODE)
}

/// Never called (panics abort), but the precompiled `core` refers to it.
#[unsafe(no_mangle)]
pub extern "C" fn rust_eh_personality() {}

/// Never called either (nothing unwinds); the precompiled `alloc` refers
/// to it from its landing pads.
#[unsafe(no_mangle)]
pub extern "C" fn _Unwind_Resume() -> ! {
    exit(PANIC_EXIT_CODE)
}
