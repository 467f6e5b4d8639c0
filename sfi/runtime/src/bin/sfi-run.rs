//! sfi-run [--timeout SECONDS] MODULE [ARGS...]
//! Runs a program module (built with sfi-cc and sfi/libc) in a fault domain.  The
//! embedder offers the mini libc's host interface: read/write on standard streams and
//! read-only files, heap bounds, a clock and exit.  Exit status: the program's, or 70
//! for a fault, 71 for a timeout, 72 for a load error.
use sfi_runtime::{abort_call, current, CallError, Config, Domain, Imports};
use std::time::Duration;

fn rt() -> &'static sfi_runtime::DomainRt {
    current().expect("host function outside a domain call")
}

fn fd_ok(fd: u64) -> bool {
    fd < 1024
}

unsafe extern "C" fn host_write(fd: u64, p: u64, n: u64, _: u64, _: u64, _: u64) -> u64 {
    match rt().slice(p, n) {
        Some(s) if fd_ok(fd) && fd != 0 => libc::write(fd as i32, s.as_ptr() as *const _, s.len()) as u64,
        _ => -(libc::EFAULT as i64) as u64,
    }
}
unsafe extern "C" fn host_read(fd: u64, p: u64, n: u64, _: u64, _: u64, _: u64) -> u64 {
    match rt().slice(p, n) {
        Some(s) if fd_ok(fd) && fd != 1 && fd != 2 => libc::read(fd as i32, s.as_mut_ptr() as *mut _, s.len()) as u64,
        _ => -(libc::EFAULT as i64) as u64,
    }
}
unsafe extern "C" fn host_open(path: u64, _flags: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    // Read-only access to files; the domain never gets a writable descriptor.
    match rt().c_string(path, 4096) {
        Some(mut s) => {
            s.push(0);
            libc::open(s.as_ptr() as *const _, libc::O_RDONLY | libc::O_CLOEXEC) as i64 as u64
        }
        None => -(libc::EFAULT as i64) as u64,
    }
}
unsafe extern "C" fn host_close(fd: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    if fd > 2 && fd_ok(fd) { libc::close(fd as i32) as u64 } else { 0 }
}
unsafe extern "C" fn host_lseek(fd: u64, off: u64, whence: u64, _: u64, _: u64, _: u64) -> u64 {
    if !fd_ok(fd) { return u64::MAX; }
    libc::lseek(fd as i32, off as i64, whence as i32) as u64
}
unsafe extern "C" fn host_heap(which: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    let h = rt().heap;
    if which == 0 { h.0 } else { h.1 }
}
unsafe extern "C" fn host_clock(_: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
unsafe extern "C" fn host_exit(code: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    abort_call(code as i32)
}

pub fn libc_imports() -> Imports {
    let mut i = Imports::new();
    i.add("sfi_host_write", host_write).add("sfi_host_read", host_read).add("sfi_host_open", host_open)
        .add("sfi_host_close", host_close).add("sfi_host_lseek", host_lseek).add("sfi_host_heap", host_heap)
        .add("sfi_host_clock", host_clock).add("sfi_host_exit", host_exit);
    i
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut timeout = None;
    if args.len() >= 2 && args[0] == "--timeout" {
        timeout = Some(Duration::from_secs_f64(args[1].parse().expect("--timeout SECONDS")));
        args.drain(..2);
    }
    if args.is_empty() {
        eprintln!("usage: sfi-run [--timeout SECONDS] MODULE [ARGS...]");
        std::process::exit(72);
    }
    let bytes = std::fs::read(&args[0]).unwrap_or_else(|e| {
        eprintln!("sfi-run: {}: {}", args[0], e);
        std::process::exit(72)
    });
    let cpu = || {
        let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
        t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
    };
    let t0 = cpu();
    let dom = Domain::load(&bytes, &libc_imports(), &Config::default()).unwrap_or_else(|e| {
        eprintln!("sfi-run: {}: {}", args[0], e);
        std::process::exit(72)
    });
    if std::env::var_os("SFI_RUN_LOAD_TIME").is_some() {
        // For the benchmarks: the CPU time of reading nothing but loading (verify, map, relocate).
        eprintln!("sfi-run: load cpu {:.6}", cpu() - t0);
    }
    let entry = dom.entry("__sfi_start").unwrap_or_else(|| {
        eprintln!("sfi-run: {}: no entry __sfi_start (link with sfi/libc)", args[0]);
        std::process::exit(72)
    });
    // argv: strings and the pointer array at the top of the domain stack.
    let top = dom.rt().stack_top;
    let mut ptrs = Vec::new();
    let mut at = top;
    for a in &args {
        let b = a.as_bytes();
        at -= b.len() as u64 + 1;
        let s = unsafe { dom.rt().slice(at, b.len() as u64 + 1).unwrap() };
        s[..b.len()].copy_from_slice(b);
        s[b.len()] = 0;
        ptrs.push(at);
    }
    ptrs.push(0);
    at = (at - 8 * ptrs.len() as u64) & !15;
    let argv = at;
    for (i, p) in ptrs.iter().enumerate() {
        let s = unsafe { dom.rt().slice(argv + 8 * i as u64, 8).unwrap() };
        s.copy_from_slice(&p.to_le_bytes());
    }
    // The instruction-counting plugin's region markers (tools/icount-plugin), multi-byte
    // no-ops without it: `make sfi-bench` counts the instructions of the call, host
    // functions included, without the module load.
    unsafe { std::arch::asm!(".byte 0x0f, 0x1f, 0x80, 0x01, 0x50, 0x45, 0x4b", options(nomem, nostack, preserves_flags)) };
    let r = dom.call_on_stack(entry, &[args.len() as u64, argv], (argv - 64) & !15, timeout);
    unsafe { std::arch::asm!(".byte 0x0f, 0x1f, 0x80, 0x02, 0x50, 0x45, 0x4b", options(nomem, nostack, preserves_flags)) };
    match r {
        Ok(v) => std::process::exit(v as i32),
        Err(CallError::Exit(c)) => std::process::exit(c),
        Err(e) => {
            eprintln!("sfi-run: {}: {}", args[0], e);
            std::process::exit(if e == CallError::Timeout { 71 } else { 70 });
        }
    }
}
