//! Micro-benchmarks: sfi-bench [--batches N] RT_MODULE [MODULE...]
//! Prints JSON lines {"name":..., "samples":[...], "unit":...}: the cycles of a null
//! cross-domain round trip, of a C procedure call, of a one-byte pipe round trip
//! between two processes, and the verifier's throughput (and load throughput:
//! verify, map, relocate, unmap) on the given modules, in MiB of code per CPU second.
//! N batches of each (default 31, the pipe 21); bench.py runs a few batches
//! at a time between the programs, to spread the samples over its whole run.
//!
//! sfi-bench --count RT_MODULE [MODULE...] times nothing: it runs 10,000 null
//! cross-domain calls and then one verification of the modules, each between the
//! instruction-counting plugin's markers (tools/icount-plugin), for bench.py to run
//! under QEMU user mode: the instructions of a call and per byte verified, which
//! do not move with the host's load or clock.
use sfi_runtime::{Config, Domain, Imports};
use std::arch::x86_64::{__rdtscp, _rdtsc};
use std::time::Instant;

unsafe extern "C" fn host_nop(x: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    x
}

#[inline(never)]
extern "C" fn c_procedure(x: u64) -> u64 {
    unsafe { std::ptr::read_volatile(&x) }
}

fn cycles() -> u64 {
    let mut aux = 0;
    unsafe { __rdtscp(&mut aux) }
}

/// CPU time of this thread, in seconds (the machine is shared: wall time would
/// also count the time other processes held the CPU).
fn cpu_seconds() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// Runs `f` over and over for `seconds` of CPU time (a warm-up, not sampled).
fn for_cpu_seconds(seconds: f64, mut f: impl FnMut()) {
    let start = cpu_seconds();
    while cpu_seconds() - start < seconds {
        f();
    }
}

fn verify_all(mods: &[Vec<u8>]) {
    for m in mods {
        sfi_verify::verify(m).expect("benchmark modules verify");
    }
}

/// The instruction-counting plugin's region markers (multi-byte no-ops without it).
fn region_start() {
    unsafe { std::arch::asm!(".byte 0x0f, 0x1f, 0x80, 0x01, 0x50, 0x45, 0x4b", options(nomem, nostack, preserves_flags)) };
}
fn region_end() {
    unsafe { std::arch::asm!(".byte 0x0f, 0x1f, 0x80, 0x02, 0x50, 0x45, 0x4b", options(nomem, nostack, preserves_flags)) };
}

/// COUNT_CALLS null calls in region 1, one verification of `mods` in region 2.
pub const COUNT_CALLS: u64 = 10_000;
fn count(d: &Domain, mods: &[Vec<u8>]) {
    let nothing = d.entry("nothing").unwrap();
    std::hint::black_box(d.call(nothing, &[]).unwrap());
    verify_all(mods);
    region_start();
    for _ in 0..COUNT_CALLS {
        std::hint::black_box(d.call(nothing, &[]).unwrap());
    }
    region_end();
    region_start();
    verify_all(mods);
    region_end();
    let code: usize = mods.iter().map(|m| sfi_verify::parse(m).map(|x| x.code.len()).unwrap_or(0)).sum();
    println!("{{\"calls\":{},\"code_bytes\":{}}}", COUNT_CALLS, code);
}

fn emit(name: &str, unit: &str, samples: &[f64]) {
    let s: Vec<String> = samples.iter().map(|x| format!("{:.3}", x)).collect();
    use std::io::Write;
    println!("{{\"name\":\"{}\",\"unit\":\"{}\",\"samples\":[{}]}}", name, unit, s.join(","));
    std::io::stdout().flush().ok();
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let counting = args.first().map(String::as_str) == Some("--count");
    if counting {
        args.remove(0);
    }
    let batches: Option<usize> = if args.first().map(String::as_str) == Some("--batches") {
        let n = args.get(1).and_then(|n| n.parse().ok()).filter(|&n| n > 0);
        args.drain(..args.len().min(2));
        Some(n.unwrap_or(0))
    } else {
        None
    };
    if args.is_empty() || batches == Some(0) {
        eprintln!("usage: sfi-bench [--batches N] RT_MODULE [MODULE...]  (N: a positive number)");
        std::process::exit(2);
    }
    let (batches, pipe_batches) = (batches.unwrap_or(31), batches.unwrap_or(21));
    let bytes = std::fs::read(&args[0]).expect("runtime test module");
    let mut imp = Imports::new();
    imp.add("host_double", host_nop).add("host_nested", host_nop).add("host_exit", host_nop).add("host_x87", host_nop);
    let d = Domain::load(&bytes, &imp, &Config { heap_size: 1 << 20, stack_size: 1 << 20 }).expect("load");
    if counting {
        let mods: Vec<Vec<u8>> = args[1..].iter().map(|p| std::fs::read(p).unwrap()).collect();
        count(&d, &mods);
        return;
    }
    let nothing = d.entry("nothing").unwrap();
    const N: u64 = 200_000;
    let (mut call, mut cproc, mut empty) = (Vec::new(), Vec::new(), Vec::new());
    let f: extern "C" fn(u64) -> u64 = std::hint::black_box(c_procedure);
    // Warm-up, as for the verifier below.
    for_cpu_seconds(0.3, || {
        std::hint::black_box(d.call(nothing, &[]).unwrap());
    });
    for _ in 0..batches {
        let t = cycles();
        for _ in 0..N {
            std::hint::black_box(d.call(nothing, &[]).unwrap());
        }
        call.push((cycles() - t) as f64 / N as f64);
        let t = cycles();
        for i in 0..N {
            std::hint::black_box(f(i));
        }
        cproc.push((cycles() - t) as f64 / N as f64);
        let t = cycles();
        for i in 0..N {
            std::hint::black_box(i);
        }
        empty.push((cycles() - t) as f64 / N as f64);
    }
    emit("sfi.call.roundtrip", "cycles", &call);
    emit("sfi.call.c_procedure", "cycles", &cproc);
    emit("sfi.call.loop_overhead", "cycles", &empty);
    // Pipe round trip: parent writes one byte, child echoes it back.
    unsafe {
        let (mut a, mut b) = ([0i32; 2], [0i32; 2]);
        libc::pipe(a.as_mut_ptr());
        libc::pipe(b.as_mut_ptr());
        let pid = libc::fork();
        if pid == 0 {
            libc::close(a[1]);
            libc::close(b[0]);
            let mut c = 0u8;
            while libc::read(a[0], &mut c as *mut u8 as *mut _, 1) == 1 {
                libc::write(b[1], &c as *const u8 as *const _, 1);
            }
            libc::_exit(0);
        }
        let mut pipe = Vec::new();
        let m = 2000;
        for _ in 0..pipe_batches {
            let t = cycles();
            for _ in 0..m {
                let mut c = 7u8;
                libc::write(a[1], &c as *const u8 as *const _, 1);
                libc::read(b[0], &mut c as *mut u8 as *mut _, 1);
            }
            pipe.push((cycles() - t) as f64 / m as f64);
        }
        libc::close(a[1]);
        libc::close(b[0]);
        libc::waitpid(pid, std::ptr::null_mut(), 0);
        emit("sfi.pipe.roundtrip", "cycles", &pipe);
    }
    // Verifier throughput over the given modules' code.
    let mods: Vec<Vec<u8>> = args.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let code: usize = mods.iter().map(|m| sfi_verify::parse(m).map(|x| x.code.len()).unwrap_or(0)).sum();
    // Warm-up: when the batches followed a sleep directly, the
    // first ran at half speed or less for up to a second (the shared host's
    // vCPU coming back from idle).  Here rather than first: run before the
    // calls, it made them take 30 cycles instead of 25, for a reason not found.
    for_cpu_seconds(1.0, || verify_all(&mods));
    let mut thr = Vec::new();
    for _ in 0..batches {
        let t = cpu_seconds();
        verify_all(&mods);
        thr.push(code as f64 / (1 << 20) as f64 / (cpu_seconds() - t));
    }
    emit("sfi.verify.throughput", "MiB/s", &thr);
    // Load (verify + map + relocate + unmap) throughput, MiB of code per second.
    let mut load = Vec::new();
    for _ in 0..batches {
        let t = cpu_seconds();
        for m in &mods {
            if let Ok(pm) = sfi_verify::parse(m) {
                let mut imp = Imports::new();
                for name in &pm.imports {
                    imp.add(name, host_nop);
                }
                drop(Domain::load(m, &imp, &Config { heap_size: 1 << 20, stack_size: 1 << 16 }).expect("load"));
            }
        }
        load.push(code as f64 / (1 << 20) as f64 / (cpu_seconds() - t));
    }
    emit("sfi.load.throughput", "MiB/s", &load);
    // TSC frequency, to convert cycles to time in the report: measured last,
    // because the first work after a sleep runs slowly.
    let (t0, c0) = (Instant::now(), unsafe { _rdtsc() });
    std::thread::sleep(std::time::Duration::from_millis(200));
    let ghz = (unsafe { _rdtsc() } - c0) as f64 / t0.elapsed().as_nanos() as f64;
    emit("sfi.tsc.ghz", "GHz", &[ghz]);
    eprintln!("sfi-bench: {} modules, {} bytes of code", mods.len(), code);
}
