//! SFI inside a Keep process (docs/sfi.md, "Inside Keep").
//!
//! A verified module runs in a *fault domain*: a 4 GiB region of the
//! process's own address space at base B (4 GiB aligned), with 4 GiB of
//! never-mapped address space on each side.  The layout inside the domain,
//! the module format and the verifier are the host tool chain's (`sfi/`); the verifier
//! is the same crate, built without std.
//!
//! Faults: the runtime makes a thread of the process its fault handler.  An
//! exception in a domain arrives there as an EXCEPTION message; the handler
//! rewrites the calling thread's registers so that it resumes in the stub's
//! unwind path on its host stack (READ_REGS, WRITE_REGS, RESUME), and the
//! call returns `CallError::Fault`.  A fault elsewhere is left to the kernel
//! (the handler is removed and the instruction retried: the process ends
//! FAULTED, as it would without the runtime).  Time-outs: with a limit set,
//! the handler also wakes every `WATCHDOG_MS` and stops a call that has been
//! the same call for longer than the limit (STOP, the same rewrite, START).

#![no_std]

extern crate alloc;

mod stubs;

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use keep_abi::{
    Error, MEMORY, SELF_ASPACE, SELF_PROCESS, Tag, label, recv, reg, reply, rights, ty,
};
use keep_loader::SlotPool;
use keep_loader::thread::{self, Args, Thread};
pub use sfi_verify::{Reject, CODE_BASE};
use sfi_verify::layout::{ENTRY_PAGE, runtime_pages};
use sfi_verify::{BUNDLE, DOMAIN_SIZE, STACK_LOW};

/// Domain k has base `REGION + k * SPACING`: every domain has 4 GiB of
/// unmapped space below and above it (the next domain starts 4 GiB later).
pub const REGION: u64 = 0x2000_0000_0000;
pub const SPACING: u64 = 2 * DOMAIN_SIZE;
pub const MAX_DOMAINS: usize = 64;
/// Where code pages are filled before they are mapped read+execute.
const SCRATCH: u64 = 0x1f00_0000_0000;
const PAGE: u64 = 4096;
/// The watchdog's period.
pub const WATCHDOG_MS: u64 = 10;

/// Why a module could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The verifier refused it.
    Rejected(Reject),
    /// It imports a function the embedder does not offer.
    UnresolvedImport(String),
    /// All MAX_DOMAINS domains are in use.
    NoDomain,
    /// Heap or stack do not fit the layout, or data and bss are over the limit.
    Layout,
    /// A kernel operation failed (out of memory, slots...).
    Kernel(&'static str, Error),
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            LoadError::Rejected(r) => write!(f, "rejected: {r}"),
            LoadError::UnresolvedImport(n) => write!(f, "unresolved import {n}"),
            LoadError::NoDomain => write!(f, "no free fault domain"),
            LoadError::Layout => write!(f, "data, heap or stack too large"),
            LoadError::Kernel(what, e) => write!(f, "{what}: {e}"),
        }
    }
}

/// How a call ended other than by returning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    /// An exception in the domain: vector, faulting address (CR2 for a page
    /// fault), rip as an offset in the domain.
    Fault { vector: u64, addr: u64, offset: u64 },
    /// The watchdog stopped it.
    Timeout,
    /// The domain is already running (a host function called back into it).
    Busy,
    /// More than six arguments.
    BadArgs,
}

/// Values of `sfi_state[STATUS]`.
const ST_FAULT: u64 = 1;
const ST_TIMEOUT: u64 = 2;

/// A host function a module may import: six integer arguments, one result.
pub type HostFn = extern "C" fn(u64, u64, u64, u64, u64, u64) -> u64;

pub struct Config {
    /// Bytes of heap after the data (0: none).
    pub heap_size: u64,
    /// Bytes of stack at the top of the domain.
    pub stack_size: u64,
    /// Most bytes of data and bss a module may ask for (every page is a
    /// frame from the memory pool, mapped at load time).
    pub max_data: u64,
}

impl Default for Config {
    fn default() -> Config {
        Config { heap_size: 0, stack_size: 16 * PAGE, max_data: 1 << 20 }
    }
}

/// What the stubs read: base, host-function table.
#[repr(C)]
struct DomainRt {
    base: u64,
    table: *const u64,
}

pub struct Domain {
    rt: Box<DomainRt>,
    _table: Vec<u64>,
    index: usize,
    /// (address, page capability slot) of every mapped page.
    pages: Vec<(u64, u64)>,
    entries: Vec<(String, u64)>,
    heap: (u64, u64),
    stack_top: u64,
    in_call: core::cell::Cell<bool>,
}

/// Bit k: domain k is in use.
static USED: AtomicU64 = AtomicU64::new(0);
/// Call limit in milliseconds (0: none); read by the handler thread.
static LIMIT_MS: AtomicU64 = AtomicU64::new(0);
/// Faults and time-outs the handler turned into errors (for tests).
static ENDED: AtomicU64 = AtomicU64::new(0);

/// The runtime of a process: its fault-handler thread.
pub struct Runtime {
    handler: Option<Thread>,
    slots: [u64; 2],
}

const PAYLOAD: u64 = 0x5f1;

/// Whether the CPU has FSGSBASE (and so the kernel has set CR4.FSGSBASE).
pub fn fsgsbase() -> bool {
    // cpuid has no side effects; leaf 7 is read only when leaf 0 says it exists.
    let max = core::arch::x86_64::__cpuid(0).eax;
    max >= 7 && core::arch::x86_64::__cpuid_count(7, 0).ebx & 1 != 0
}

impl Runtime {
    /// Starts the fault-handler thread at `priority` (higher than the
    /// calling thread's, so that its watchdog can preempt a looping domain)
    /// and makes it this process's fault handler.
    pub fn start(slots: &mut SlotPool, priority: u64) -> Result<Runtime, String> {
        if !fsgsbase() {
            return Err("the CPU has no FSGSBASE: %gs cannot point at a domain".into());
        }
        let ret = slots.alloc().ok_or("no slot")?;
        let snd = match slots.alloc() {
            Some(s) => s,
            None => {
                slots.free(ret);
                return Err("no slot".into());
            }
        };
        let mut rt = Runtime { handler: None, slots: [ret, snd] };
        let r = thread::spawn(slots, "sfi-handler", priority, handler, &[ret]).and_then(|t| {
            let pid = t.process;
            rt.handler = Some(t);
            pid.mint(snd, PAYLOAD, 0)
                .and_then(|_| SELF_PROCESS.set_fault_handler(snd))
                .map_err(|e| alloc::format!("installing the fault handler: {e}"))
        });
        match r {
            Ok(()) => Ok(rt),
            Err(e) => {
                rt.stop(slots);
                Err(e)
            }
        }
    }

    /// Calls that run longer than `ms` are stopped (0: never).  The
    /// watchdog checks every WATCHDOG_MS, so a call may run up to
    /// `ms + 2 * WATCHDOG_MS`.
    pub fn set_timeout(&self, ms: u64) {
        LIMIT_MS.store(ms, Ordering::Relaxed);
    }

    /// Calls ended by a fault or a time-out so far.
    pub fn ended(&self) -> u64 {
        ENDED.load(Ordering::Relaxed)
    }

    /// Removes the fault handler and ends its thread.
    pub fn stop(mut self, slots: &mut SlotPool) {
        let _ = SELF_PROCESS.set_fault_handler(0);
        if let Some(t) = self.handler.take() {
            t.kill(slots);
        }
        for s in self.slots {
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
    }
}

/// Whether `rip` is code of the call in progress: the domain or the stubs.
fn in_call_code(rip: u64) -> bool {
    let dom = stubs::state(stubs::DOMAIN);
    if dom == 0 {
        return false;
    }
    // SAFETY: DOMAIN points at the DomainRt of the call in progress, which
    // lives as long as its Domain, which the calling thread borrows.
    let base = unsafe { (*(dom as *const DomainRt)).base };
    // SAFETY: only the symbols' addresses are taken.
    let (s0, s1) = unsafe { (stubs::addr_of(&stubs::sfi_stub_start), stubs::addr_of(&stubs::sfi_stub_end)) };
    rip.wrapping_sub(base) < DOMAIN_SIZE || (s0..s1).contains(&rip)
}

/// Moves the (stopped or faulted) calling thread to the unwind path with
/// `status`; its registers go through this thread's IPC buffer.
fn unwind(a: &Args, status: u64) -> keep_abi::Result<()> {
    SELF_PROCESS.read_regs()?;
    let mut r = a.buf().regs();
    // SAFETY: address of a symbol.
    r[reg::RIP as usize] = unsafe { stubs::addr_of(&stubs::sfi_unwind) };
    r[reg::RSP as usize] = stubs::state(stubs::HOST_RSP);
    a.buf().set_regs(&r);
    stubs::set_state(stubs::STATUS, status);
    SELF_PROCESS.write_regs()?;
    ENDED.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// The fault-handler thread (must not allocate).  words[0]: its receive slot.
fn handler(a: &Args) -> u64 {
    let ret = a.words[0];
    a.buf().set_recv_slots(&[ret]);
    // The call the watchdog saw last and how many periods it has been running.
    let (mut seen, mut periods) = (0u64, 0u64);
    loop {
        let limit = LIMIT_MS.load(Ordering::Relaxed);
        let m = recv(Tag::new(0).with_slots(1), if limit == 0 { 0 } else { WATCHDOG_MS });
        if m.err == keep_abi::err::TIMEOUT {
            let seq = stubs::state(stubs::SEQ);
            if stubs::state(stubs::DOMAIN) == 0 || seq != seen {
                seen = seq;
                periods = 0;
                continue;
            }
            periods += 1;
            if periods * WATCHDOG_MS <= limit {
                continue;
            }
            // Same call for longer than the limit.  This thread has the
            // higher priority, so the caller has not run since the check.
            if SELF_PROCESS.stop().is_err() {
                continue;
            }
            let ok = SELF_PROCESS.read_regs().is_ok() && {
                let rip = a.buf().regs()[reg::RIP as usize];
                // In a host function or the stubs it is left to go on; the
                // next period looks again.
                let dom = stubs::state(stubs::DOMAIN);
                dom != 0 && rip.wrapping_sub(unsafe { (*(dom as *const DomainRt)).base }) < DOMAIN_SIZE
            };
            if ok {
                let _ = unwind(a, ST_TIMEOUT);
                periods = 0;
            }
            let _ = SELF_PROCESS.start();
            continue;
        }
        if m.err != 0 || m.tag.label() != label::EXCEPTION || !m.tag.is_called() {
            continue;
        }
        let (vector, rip, addr) = (m.words[0], m.words[1], m.words[2]);
        let answer = if in_call_code(rip) {
            stubs::set_state(stubs::VECTOR, vector);
            stubs::set_state(stubs::ADDR, addr);
            stubs::set_state(stubs::RIP, rip);
            match unwind(a, ST_FAULT) {
                Ok(()) => reply::RESUME,
                Err(_) => reply::STOP,
            }
        } else {
            // Not ours: let the kernel treat it as if there were no handler.
            let _ = SELF_PROCESS.set_fault_handler(0);
            reply::RESUME
        };
        let _ = keep_abi::Return(ret).reply(Tag::new(answer), [0; 4]);
    }
}

fn round_up(x: u64, a: u64) -> u64 {
    (x + a - 1) & !(a - 1)
}

/// The entry page and as many trampoline pages as the imports need
/// (sfi_verify::layout).
fn trampolines(n_imports: usize, base: u64) -> Vec<u8> {
    let len = PAGE + round_up(BUNDLE * (n_imports as u64 + 1), PAGE);
    // SAFETY: addresses of symbols.
    let (ret, call) = unsafe { (stubs::addr_of(&stubs::sfi_return_from_domain), stubs::addr_of(&stubs::sfi_host_call)) };
    runtime_pages(len as usize, n_imports, base, ret, call)
}

/// Allocates a domain index.
fn take_index() -> Option<usize> {
    loop {
        let used = USED.load(Ordering::Relaxed);
        let k = (!used).trailing_zeros() as usize;
        if k >= MAX_DOMAINS {
            return None;
        }
        if USED.compare_exchange(used, used | 1 << k, Ordering::Relaxed, Ordering::Relaxed).is_ok() {
            return Some(k);
        }
    }
}

impl Domain {
    /// Verifies `bytes` and loads the module into a new fault domain.
    /// `imports` offers host functions by name.
    pub fn load(
        slots: &mut SlotPool,
        bytes: &[u8],
        imports: &[(&str, HostFn)],
        cfg: &Config,
    ) -> Result<Domain, LoadError> {
        let m = sfi_verify::verify(bytes).map_err(LoadError::Rejected)?;
        let mut table = Vec::new();
        for name in &m.imports {
            match imports.iter().find(|(n, _)| n == name) {
                Some((_, f)) => table.push(*f as usize as u64),
                None => return Err(LoadError::UnresolvedImport(name.clone())),
            }
        }
        let data_end = m.data_offset + m.data.len() as u64 + m.bss_size;
        let heap_start = round_up(data_end, 1 << 16);
        let heap_end = heap_start + round_up(cfg.heap_size, PAGE);
        let stack_low = DOMAIN_SIZE - round_up(cfg.stack_size.max(PAGE), PAGE);
        if heap_end > 0x8000_0000 || stack_low < STACK_LOW || data_end - m.data_offset > cfg.max_data {
            return Err(LoadError::Layout);
        }
        let index = take_index().ok_or(LoadError::NoDomain)?;
        let base = REGION + index as u64 * SPACING;
        let mut d = Domain {
            rt: Box::new(DomainRt { base, table: core::ptr::null() }),
            _table: table,
            index,
            pages: Vec::new(),
            entries: m.entries.iter().map(|(n, o)| (n.clone(), base + CODE_BASE + *o as u64)).collect(),
            heap: (base + heap_start, base + heap_end),
            stack_top: base + DOMAIN_SIZE,
            in_call: core::cell::Cell::new(false),
        };
        d.rt.table = d._table.as_ptr();
        let rx = rights::READ | rights::EXEC;
        let rw = rights::READ | rights::WRITE;
        let r = (|| {
            d.map_filled(slots, base + ENTRY_PAGE, &trampolines(m.imports.len(), base), rx)?;
            d.map_filled(slots, base + CODE_BASE, m.code, rx)?;
            // Data (zero-filled pages cover the bss), then the heap.
            let mut a = base + m.data_offset;
            while a < base + round_up(data_end, PAGE) {
                d.map_zero(slots, a, rw)?;
                a += PAGE;
            }
            let mut a = d.heap.0;
            while a < d.heap.1 {
                d.map_zero(slots, a, rw)?;
                a += PAGE;
            }
            let mut a = base + stack_low;
            while a < d.stack_top {
                d.map_zero(slots, a, rw)?;
                a += PAGE;
            }
            Ok(())
        })();
        if let Err(e) = r {
            d.unload(slots);
            return Err(e);
        }
        // SAFETY: the data pages are mapped read+write just above, and
        // relocations were checked to be aligned slots inside the data.
        unsafe {
            let dst = (base + m.data_offset) as *mut u8;
            core::ptr::copy_nonoverlapping(m.data.as_ptr(), dst, m.data.len());
            for &off in &m.relocs {
                let slot = dst.add(off as usize) as *mut u64;
                slot.write(slot.read().wrapping_add(base));
            }
        }
        Ok(d)
    }

    fn new_page(&mut self, slots: &mut SlotPool, vaddr: u64, rights_: u64) -> Result<u64, LoadError> {
        let s = slots.alloc().ok_or(LoadError::Kernel("slot for a page", Error::NO_CAPPAGE))?;
        if let Err(e) = MEMORY.retype(ty::PAGE, s) {
            slots.free(s);
            return Err(LoadError::Kernel("RETYPE PAGE", e));
        }
        if let Err(e) = SELF_ASPACE.map(s, vaddr, rights_) {
            let _ = MEMORY.reclaim(s);
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
            return Err(LoadError::Kernel("MAP", e));
        }
        self.pages.push((vaddr, s));
        Ok(s)
    }

    fn map_zero(&mut self, slots: &mut SlotPool, vaddr: u64, rights_: u64) -> Result<(), LoadError> {
        self.new_page(slots, vaddr, rights_).map(drop)
    }

    /// Maps `bytes` at `vaddr` with `rights_`, filling each page through a
    /// writable scratch mapping first (code is never writable in place), and
    /// the rest of the last page with int3 (only code is mapped this way).
    fn map_filled(&mut self, slots: &mut SlotPool, vaddr: u64, bytes: &[u8], rights_: u64) -> Result<(), LoadError> {
        for (i, chunk) in bytes.chunks(PAGE as usize).enumerate() {
            let s = self.new_page(slots, SCRATCH, rights::READ | rights::WRITE)?;
            // SAFETY: SCRATCH is mapped writable just above, one page.
            // The rest of a last, partial page is executable too: int3, so that
            // a masked branch to a bundle there traps (docs/sfi.md, rule 10).
            unsafe {
                core::ptr::copy_nonoverlapping(chunk.as_ptr(), SCRATCH as *mut u8, chunk.len());
                core::ptr::write_bytes((SCRATCH + chunk.len() as u64) as *mut u8, 0xcc, PAGE as usize - chunk.len());
            }
            self.pages.pop();
            let _ = SELF_ASPACE.unmap(SCRATCH);
            let at = vaddr + i as u64 * PAGE;
            self.pages.push((at, s));
            SELF_ASPACE.map(s, at, rights_).map_err(|e| LoadError::Kernel("MAP code", e))?;
        }
        Ok(())
    }

    /// Unmaps and gives back every page, and frees the domain's place.
    pub fn unload(mut self, slots: &mut SlotPool) {
        for (vaddr, s) in self.pages.drain(..) {
            let _ = SELF_ASPACE.unmap(vaddr);
            let _ = MEMORY.reclaim(s);
            let _ = SELF_ASPACE.delete_cap(s);
            slots.free(s);
        }
        USED.fetch_and(!(1u64 << self.index), Ordering::Relaxed);
    }

    pub fn base(&self) -> u64 {
        self.rt.base
    }

    /// [start, end) of the heap (absolute addresses), for data the embedder
    /// hands to the module.
    pub fn heap(&self) -> (u64, u64) {
        self.heap
    }

    /// The address of entry `name`.
    pub fn entry(&self, name: &str) -> Option<u64> {
        self.entries.iter().find(|(n, _)| n == name).map(|e| e.1)
    }

    /// Calls `entry` (an address from `entry()`) with up to six integer
    /// arguments; its result, or how it ended.
    #[inline]
    pub fn call(&self, entry: u64, args: &[u64]) -> Result<u64, CallError> {
        if args.len() > 6 {
            return Err(CallError::BadArgs);
        }
        if self.in_call.replace(true) {
            return Err(CallError::Busy);
        }
        let mut a = [0u64; 6];
        a[..args.len()].copy_from_slice(args);
        // SAFETY: rt lives as long as self; the stack top is the domain's
        // mapped stack; entry is an address the caller got from `entry()`
        // or any other address, which the domain's masking confines.
        let r = unsafe { stubs::sfi_enter(&*self.rt as *const DomainRt as *const u8, entry, self.stack_top, a.as_ptr()) };
        self.in_call.set(false);
        match r.status {
            0 => Ok(r.value),
            ST_TIMEOUT => Err(CallError::Timeout),
            _ => Err(CallError::Fault {
                vector: stubs::state(stubs::VECTOR),
                addr: stubs::state(stubs::ADDR),
                offset: stubs::state(stubs::RIP).wrapping_sub(self.rt.base),
            }),
        }
    }
}

