//! Keep SFI runtime: loads verified modules into fault domains and calls them.
//!
//! A fault domain is a 4 GiB-aligned 4 GiB region with 4 GiB of unmapped
//! guard space on each side.  Domain layout (offsets from the base):
//!   0x0_0000  unmapped (null guard)
//!   0x0_f000  entry page (read+execute): int3, and the entry call ending at 0x1_0000
//!   0x1_0000  trampolines: bundle 0 returns to the host, bundle i calls import i-1
//!   0x2_0000  module code (read+execute)
//!   data_offset  data, bss, then the heap (read+write)
//!   SHARED_BASE..SHARED_END  shared regions mapped by `share`
//!   SHARED_END..STACK_LOW  never mapped
//!   4 GiB - stack_size .. 4 GiB  the stack (stack_size at most 256 MiB: above STACK_LOW)
//! See docs/sfi.md for the scheme and the argument why it confines a module.

mod stubs;

use sfi_verify::layout::{ENTRY_PAGE, runtime_pages};
use sfi_verify::{CODE_BASE, DOMAIN_SIZE, STACK_LOW, TRAMP_BASE};
use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;
use std::sync::Once;
use std::time::Duration;

pub use sfi_verify;

pub type HostFn = unsafe extern "C" fn(u64, u64, u64, u64, u64, u64) -> u64;

pub const GUARD: u64 = 1 << 32;
pub const SHARED_BASE: u64 = 0x8000_0000;
pub use sfi_verify::SHARED_END;
const PAGE: u64 = 4096;

/// What the asm stubs read (layout fixed, see stubs.rs).
#[repr(C)]
pub struct DomainRt {
    pub base: u64,
    table: *const HostFn,
    in_call: Cell<u64>,
    /// Writable ranges (absolute), for checking pointers that host functions receive.
    rw: std::cell::RefCell<Vec<(u64, u64)>>,
    pub heap: (u64, u64),
    pub stack_top: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// A trap inside the domain: signal number, fault address, instruction offset in the domain.
    Fault { signal: i32, addr: u64, offset: u64 },
    Timeout,
    /// The domain asked to stop (through a host function that called `abort_call`).
    Exit(i32),
    /// The domain is already running on this thread (re-entry is refused).
    Busy,
    BadArgs,
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Fault { signal, addr, offset } => {
                write!(f, "fault in domain: signal {} ({}) at domain offset 0x{:x}, address 0x{:x}", signal, signame(*signal), offset, addr)
            }
            CallError::Timeout => write!(f, "call ran too long and was stopped"),
            CallError::Exit(c) => write!(f, "domain exited with status {}", c),
            CallError::Busy => write!(f, "domain is already running on this thread"),
            CallError::BadArgs => write!(f, "at most six arguments"),
        }
    }
}

fn signame(s: i32) -> &'static str {
    match s {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGBUS => "SIGBUS",
        libc::SIGILL => "SIGILL",
        libc::SIGFPE => "SIGFPE",
        libc::SIGTRAP => "SIGTRAP",
        _ => "signal",
    }
}

const ST_FAULT: u64 = 1;
const ST_TIMEOUT: u64 = 2;
const ST_EXIT: u64 = 3;

#[derive(Default)]
pub struct Imports {
    map: HashMap<String, HostFn>,
}

impl Imports {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn add(&mut self, name: &str, f: HostFn) -> &mut Self {
        self.map.insert(name.to_string(), f);
        self
    }
}

pub struct Config {
    pub heap_size: u64,
    pub stack_size: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config { heap_size: 1 << 30, stack_size: 8 << 20 }
    }
}

pub struct Domain {
    rt: Box<DomainRt>,
    _table: Vec<HostFn>,
    reservation: (u64, u64),
    entries: HashMap<String, u64>,
    pub code_size: u64,
}

#[derive(Debug)]
pub enum LoadError {
    Rejected(sfi_verify::Reject),
    UnresolvedImport(String),
    Os(String),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Rejected(r) => write!(f, "module rejected: {}", r),
            LoadError::UnresolvedImport(n) => write!(f, "module imports {} which the embedder does not provide", n),
            LoadError::Os(e) => write!(f, "{}", e),
        }
    }
}

fn os_err(what: &str) -> LoadError {
    LoadError::Os(format!("{}: {}", what, std::io::Error::last_os_error()))
}

unsafe fn map_fixed(addr: u64, len: u64, prot: i32, extra: i32) -> Result<(), LoadError> {
    let p = libc::mmap(addr as *mut _, len as usize, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED | extra, -1, 0);
    if p == libc::MAP_FAILED {
        return Err(os_err("mmap"));
    }
    Ok(())
}

fn round_up(x: u64, a: u64) -> u64 {
    (x + a - 1) & !(a - 1)
}

/// The entry page, then trampoline bundles (the whole trampoline area).
fn trampolines(n_imports: usize, base: u64) -> Vec<u8> {
    // SAFETY: addresses of symbols.
    let (ret, call) = unsafe {
        (&stubs::sfi_return_from_domain as *const u8 as u64, &stubs::sfi_host_call as *const u8 as u64)
    };
    runtime_pages((PAGE + TRAMP_BASE) as usize, n_imports, base, ret, call)
}

impl Domain {
    /// Verifies `bytes` and loads the module into a new fault domain.
    pub fn load(bytes: &[u8], imports: &Imports, cfg: &Config) -> Result<Domain, LoadError> {
        let m = sfi_verify::verify(bytes).map_err(LoadError::Rejected)?;
        let mut table = Vec::new();
        for name in &m.imports {
            match imports.map.get(name) {
                Some(f) => table.push(*f),
                None => return Err(LoadError::UnresolvedImport(name.clone())),
            }
        }
        install_handlers();
        unsafe {
            // Reserve guard + domain + guard, 4 GiB aligned.
            let len = 4 * GUARD;
            let p = libc::mmap(std::ptr::null_mut(), len as usize, libc::PROT_NONE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE, -1, 0);
            if p == libc::MAP_FAILED {
                return Err(os_err("reserving a fault domain"));
            }
            let start = p as u64;
            let base = round_up(start + GUARD, GUARD);
            let tramp = trampolines(m.imports.len(), base);
            map_fixed(base + ENTRY_PAGE, tramp.len() as u64, libc::PROT_READ | libc::PROT_WRITE, 0)?;
            std::ptr::copy_nonoverlapping(tramp.as_ptr(), (base + ENTRY_PAGE) as *mut u8, tramp.len());
            libc::mprotect((base + ENTRY_PAGE) as *mut _, tramp.len(), libc::PROT_READ | libc::PROT_EXEC);
            let code_len = round_up(m.code.len() as u64, PAGE);
            if code_len > 0 {
                map_fixed(base + CODE_BASE, code_len, libc::PROT_READ | libc::PROT_WRITE, 0)?;
                std::ptr::copy_nonoverlapping(m.code.as_ptr(), (base + CODE_BASE) as *mut u8, m.code.len());
                // The rest of the last code page is executable too: int3, so
                // that a masked branch to a bundle there traps (rule 10).
                std::ptr::write_bytes((base + CODE_BASE + m.code.len() as u64) as *mut u8, 0xcc, (code_len - m.code.len() as u64) as usize);
                libc::mprotect((base + CODE_BASE) as *mut _, code_len as usize, libc::PROT_READ | libc::PROT_EXEC);
            }
            let data_end = m.data_offset + m.data.len() as u64 + m.bss_size;
            let heap_start = round_up(data_end, 1 << 16);
            let heap_end = heap_start + round_up(cfg.heap_size, PAGE);
            let stack_low = DOMAIN_SIZE - round_up(cfg.stack_size.max(PAGE), PAGE);
            if heap_end > SHARED_BASE || stack_low < STACK_LOW {
                libc::munmap(p, len as usize);
                return Err(LoadError::Os("heap or stack too large for the domain layout".into()));
            }
            // Data and heap are one mapping; the heap follows the data at a 64 KiB boundary.
            map_fixed(base + m.data_offset, heap_end - m.data_offset, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_NORESERVE)?;
            std::ptr::copy_nonoverlapping(m.data.as_ptr(), (base + m.data_offset) as *mut u8, m.data.len());
            for &r in &m.relocs {
                let slot = (base + m.data_offset + r as u64) as *mut u64;
                slot.write_unaligned(slot.read_unaligned().wrapping_add(base));
            }
            map_fixed(base + stack_low, DOMAIN_SIZE - stack_low, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_NORESERVE)?;
            let entries = m.entries.iter().map(|(n, o)| (n.clone(), base + CODE_BASE + *o as u64)).collect();
            let rt = Box::new(DomainRt {
                base,
                table: table.as_ptr(),
                in_call: Cell::new(0),
                rw: std::cell::RefCell::new(vec![(base + m.data_offset, base + heap_end), (base + stack_low, base + DOMAIN_SIZE)]),
                heap: (base + heap_start, base + heap_end),
                stack_top: base + DOMAIN_SIZE,
            });
            Ok(Domain { rt, _table: table, reservation: (start, len), entries, code_size: m.code.len() as u64 })
        }
    }

    pub fn base(&self) -> u64 {
        self.rt.base
    }
    pub fn rt(&self) -> &DomainRt {
        &self.rt
    }
    pub fn entry(&self, name: &str) -> Option<u64> {
        self.entries.get(name).copied()
    }

    /// Calls `entry` (an address from `entry()`) with up to six integer arguments.
    pub fn call(&self, entry: u64, args: &[u64]) -> Result<u64, CallError> {
        self.enter(entry, args, self.rt.stack_top, None)
    }

    /// As `call`, but the call is stopped after `limit` of wall-clock time.
    pub fn call_timeout(&self, entry: u64, args: &[u64], limit: Duration) -> Result<u64, CallError> {
        self.enter(entry, args, self.rt.stack_top, Some(limit))
    }

    /// Calls with the domain stack starting at `stack_top` (absolute, 16-byte aligned, inside the stack region).
    /// `stack_top` must lie in the domain's stack area (above offset STACK_LOW).
    pub fn call_on_stack(&self, entry: u64, args: &[u64], stack_top: u64, limit: Option<Duration>) -> Result<u64, CallError> {
        let off = stack_top.wrapping_sub(self.rt.base);
        if stack_top % 16 != 0 || !(STACK_LOW + 64..=DOMAIN_SIZE).contains(&off) || !self.rt.writable(stack_top - 64, 64) {
            return Err(CallError::BadArgs);
        }
        self.enter(entry, args, stack_top, limit)
    }

    #[inline]
    fn enter(&self, entry: u64, args: &[u64], stack_top: u64, limit: Option<Duration>) -> Result<u64, CallError> {
        if args.len() > 6 {
            return Err(CallError::BadArgs);
        }
        if self.rt.in_call.get() != 0 {
            return Err(CallError::Busy);
        }
        let mut a = [0u64; 6];
        a[..args.len()].copy_from_slice(args);
        ensure_thread();
        self.rt.in_call.set(1);
        if let Some(l) = limit {
            arm_timer(l);
        }
        let r = unsafe { stubs::sfi_enter(&*self.rt as *const DomainRt as *const u8, entry, stack_top, a.as_ptr()) };
        if limit.is_some() {
            arm_timer(Duration::ZERO);
        }
        self.rt.in_call.set(0);
        if r.status == 0 {
            return Ok(r.value);
        }
        let tls = unsafe { stubs::sfi_tls_ptr() };
        let status = r.status;
        unsafe { *tls.add(3) = 0 };
        let info = unsafe { [*tls.add(4), *tls.add(5), *tls.add(6)] };
        Err(match status {
            ST_TIMEOUT => CallError::Timeout,
            ST_EXIT => CallError::Exit(info[0] as i32),
            _ => CallError::Fault { signal: info[0] as i32, addr: info[1], offset: info[2].wrapping_sub(self.rt.base) },
        })
    }

    /// Maps `size` bytes of fresh shared memory at offset `off_a` in `a` and `off_b` in `b`.
    pub fn share(a: &Domain, off_a: u64, b: &Domain, off_b: u64, size: u64) -> Result<(), LoadError> {
        for off in [off_a, off_b] {
            if off % PAGE != 0 || size % PAGE != 0 || size == 0 || off < SHARED_BASE || off + size > SHARED_END {
                return Err(LoadError::Os("shared regions must be page aligned inside the shared area".into()));
            }
        }
        for (d, off) in [(a, off_a), (b, off_b)] {
            let (lo, hi) = (d.rt.base + off, d.rt.base + off + size);
            if d.rt.rw.borrow().iter().any(|&(s, e)| lo < e && s < hi) {
                return Err(LoadError::Os("shared region overlaps a mapped region".into()));
            }
        }
        unsafe {
            let fd = libc::memfd_create(c"sfi-shared".as_ptr(), 0);
            if fd < 0 || libc::ftruncate(fd, size as i64) != 0 {
                return Err(os_err("memfd"));
            }
            for (d, off) in [(a, off_a), (b, off_b)] {
                let addr = d.rt.base + off;
                let p = libc::mmap(addr as *mut _, size as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED | libc::MAP_FIXED, fd, 0);
                if p == libc::MAP_FAILED {
                    libc::close(fd);
                    return Err(os_err("mapping shared region"));
                }
                d.rt.rw.borrow_mut().push((addr, addr + size));
            }
            libc::close(fd);
        }
        Ok(())
    }
}

impl Drop for Domain {
    fn drop(&mut self) {
        unsafe { libc::munmap(self.reservation.0 as *mut _, self.reservation.1 as usize) };
    }
}

impl DomainRt {
    /// True if [addr, addr+len) is writable domain memory (data, heap, stack, shared).
    pub fn writable(&self, addr: u64, len: u64) -> bool {
        let end = match addr.checked_add(len) {
            Some(e) => e,
            None => return false,
        };
        self.rw.borrow().iter().any(|&(s, e)| addr >= s && end <= e)
    }
    /// A host function's view of a buffer the domain passed, if it lies in writable domain memory.
    /// # Safety
    /// The domain may change the bytes concurrently only if it runs on another thread; the
    /// runtime runs a domain on one thread at a time.
    pub unsafe fn slice(&self, addr: u64, len: u64) -> Option<&mut [u8]> {
        if len == 0 {
            return Some(&mut []);
        }
        if self.writable(addr, len) {
            Some(std::slice::from_raw_parts_mut(addr as *mut u8, len as usize))
        } else {
            None
        }
    }
    /// Reads a NUL-terminated string from writable domain memory (at most `max` bytes).
    pub fn c_string(&self, addr: u64, max: u64) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        for i in 0..max {
            if !self.writable(addr + i, 1) {
                return None;
            }
            let b = unsafe { *((addr + i) as *const u8) };
            if b == 0 {
                return Some(out);
            }
            out.push(b);
        }
        None
    }
}

/// The domain whose host function is running on this thread (for use inside host functions).
pub fn current() -> Option<&'static DomainRt> {
    unsafe {
        let p = *stubs::sfi_tls_ptr().add(1) as *const DomainRt;
        p.as_ref()
    }
}

/// Ends the innermost domain call on this thread with `CallError::Exit(code)`.
/// Only for host functions called by a domain.
pub fn abort_call(code: i32) -> ! {
    unsafe {
        let tls = stubs::sfi_tls_ptr();
        *tls.add(3) = ST_EXIT;
        *tls.add(4) = code as u64;
        stubs::sfi_abort()
    }
}

// ------------------------------------------------------------------ signals

static HANDLERS: Once = Once::new();
static mut PREVIOUS: [Option<libc::sigaction>; 65] = [None; 65];

fn timer_signal() -> i32 {
    libc::SIGRTMIN() + 3
}

fn install_handlers() {
    HANDLERS.call_once(|| unsafe {
        for sig in [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE, libc::SIGTRAP, timer_signal()] {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, &sa, &mut old);
            PREVIOUS[sig as usize] = Some(old);
        }
    });
}

thread_local! {
    static THREAD_READY: Cell<bool> = const { Cell::new(false) };
    static TIMER: Cell<Option<libc::timer_t>> = const { Cell::new(None) };
}

fn ensure_thread() {
    THREAD_READY.with(|r| {
        if r.get() {
            return;
        }
        unsafe {
            // Faults may happen with %rsp anywhere in the domain: handle them on a separate stack.
            let size = 256 * 1024;
            let stack = libc::mmap(std::ptr::null_mut(), size, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0);
            let ss = libc::stack_t { ss_sp: stack, ss_flags: 0, ss_size: size };
            libc::sigaltstack(&ss, std::ptr::null_mut());
        }
        r.set(true);
    });
}

fn arm_timer(limit: Duration) {
    TIMER.with(|t| unsafe {
        let timer = match t.get() {
            Some(x) => x,
            None => {
                let mut sev: libc::sigevent = std::mem::zeroed();
                sev.sigev_notify = libc::SIGEV_THREAD_ID;
                sev.sigev_signo = timer_signal();
                sev.sigev_notify_thread_id = libc::gettid();
                let mut id: libc::timer_t = std::ptr::null_mut();
                if libc::timer_create(libc::CLOCK_MONOTONIC, &mut sev, &mut id) != 0 {
                    panic!("timer_create: {}", std::io::Error::last_os_error());
                }
                t.set(Some(id));
                id
            }
        };
        let its = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: limit.as_secs() as i64, tv_nsec: limit.subsec_nanos() as i64 },
        };
        libc::timer_settime(timer, 0, &its, std::ptr::null_mut());
    });
}

unsafe extern "C" fn handler(sig: i32, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    let uc = ctx as *mut libc::ucontext_t;
    let gregs = &mut (*uc).uc_mcontext.gregs;
    let rip = gregs[libc::REG_RIP as usize] as u64;
    let tls = stubs::sfi_tls_ptr();
    let rt = *tls.add(1) as *const DomainRt;
    let in_stub = rip >= &stubs::sfi_stub_start as *const u8 as u64 && rip < &stubs::sfi_stub_end as *const u8 as u64;
    let in_domain = !rt.is_null() && (rip.wrapping_sub((*rt).base) < DOMAIN_SIZE || in_stub);
    if in_domain {
        if sig == timer_signal() {
            *tls.add(3) = ST_TIMEOUT;
        } else {
            *tls.add(3) = ST_FAULT;
            *tls.add(4) = sig as u64;
            *tls.add(5) = (*info).si_addr() as u64;
            *tls.add(6) = rip;
        }
        gregs[libc::REG_RSP as usize] = *tls as i64;
        gregs[libc::REG_RIP as usize] = &stubs::sfi_unwind as *const u8 as i64;
        return;
    }
    if sig == timer_signal() {
        // Running trusted host code: try again shortly.
        if !rt.is_null() {
            arm_timer(Duration::from_millis(1));
        }
        return;
    }
    // Not ours: restore the previous disposition and let the fault happen again.
    if let Some(old) = PREVIOUS[sig as usize] {
        libc::sigaction(sig, &old, std::ptr::null_mut());
    }
}
