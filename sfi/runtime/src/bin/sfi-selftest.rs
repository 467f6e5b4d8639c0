//! Runtime tests: sfi-selftest STORES_MODULE FULL_MODULE
//! Prints one line per test (PASS/FAIL name) and exits non-zero if any failed.
use sfi_runtime::{abort_call, CallError, Config, Domain, Imports};
use std::cell::RefCell;
use std::time::{Duration, Instant};

unsafe extern "C" fn host_double(x: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    x.wrapping_mul(2)
}
unsafe extern "C" fn host_exit(code: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    abort_call(code as i32)
}
thread_local! { static OTHER: RefCell<Option<Domain>> = const { RefCell::new(None) }; }
unsafe extern "C" fn host_nested(x: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    // Call into a second domain from a host function that the first one called.
    OTHER.with(|o| {
        let o = o.borrow();
        let d = o.as_ref().unwrap();
        d.call(d.entry("add").unwrap(), &[x, 5]).unwrap_or(u64::MAX)
    })
}

include!("../x87_probe.rs");
thread_local! { static X87_IN_HOST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) }; }
unsafe extern "C" fn host_x87(x: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    X87_IN_HOST.with(|c| c.set(x87_empty()));
    x
}

fn imports() -> Imports {
    let mut i = Imports::new();
    i.add("host_double", host_double).add("host_nested", host_nested).add("host_exit", host_exit).add("host_x87", host_x87);
    i
}

struct T {
    passed: u32,
    failed: u32,
}
impl T {
    fn check(&mut self, name: &str, ok: bool, detail: String) {
        if ok {
            self.passed += 1;
            println!("PASS runtime/{}", name);
        } else {
            self.failed += 1;
            println!("FAIL runtime/{}: {}", name, detail);
        }
    }
}

fn fault_sig(r: &Result<u64, CallError>) -> i32 {
    match r {
        Err(CallError::Fault { signal, .. }) => *signal,
        _ => 0,
    }
}

fn run(t: &mut T, path: &str, tag: &str) {
    let bytes = std::fs::read(path).expect("module");
    let cfg = Config { heap_size: 16 << 20, stack_size: 1 << 20 };
    let a = Domain::load(&bytes, &imports(), &cfg).expect("load A");
    let b = Domain::load(&bytes, &imports(), &cfg).expect("load B");
    let e = |d: &Domain, n: &str| d.entry(n).unwrap_or_else(|| panic!("entry {}", n));
    let n = |s: &str| format!("{}/{}", tag, s);
    let alive = |d: &Domain| d.call(e(d, "add"), &[40, 2]) == Ok(42);

    let r = a.call(e(&a, "nothing"), &[]);
    t.check(&n("null_call"), r == Ok(0), format!("{:?}", r));
    // x87 values a domain leaves behind are gone when it returns, faults or calls the host.
    let r = a.call(e(&a, "x87_dirty"), &[]);
    t.check(&n("x87_emptied_on_return"), r == Ok(3) && x87_empty(), format!("{:?} empty {}", r, x87_empty()));
    let r = a.call(e(&a, "x87_dirty_host"), &[9]);
    let host = X87_IN_HOST.with(|c| c.get());
    t.check(&n("x87_emptied_for_host_call"), r == Ok(9) && host && x87_empty(), format!("{:?} in host {}", r, host));
    let r = a.call(e(&a, "x87_dirty_fault"), &[]);
    t.check(&n("x87_emptied_after_fault"), fault_sig(&r) == libc::SIGSEGV && x87_empty(), format!("{:?}", r));
    let r = a.call(e(&a, "sum6"), &[1, 2, 3, 4, 5, 6]);
    t.check(&n("six_arguments"), r == Ok(1 + 4 + 9 + 16 + 25 + 36), format!("{:?}", r));
    let r = a.call(e(&a, "call_host"), &[21]);
    t.check(&n("host_call"), r == Ok(43), format!("{:?}", r));
    let r = a.call(e(&a, "do_exit"), &[7]);
    t.check(&n("exit_through_host"), r == Err(CallError::Exit(7)) && alive(&a), format!("{:?}", r));

    // Isolation: the same store in two domains lands in each one's own memory.
    let heap_a = a.rt().heap.0;
    let off = heap_a - a.base();
    a.call(e(&a, "store_at"), &[heap_a, 1111]).unwrap();
    b.call(e(&b, "store_at"), &[b.base() + off, 2222]).unwrap();
    let (va, vb) = (a.call(e(&a, "load_at"), &[heap_a]), b.call(e(&b, "load_at"), &[b.base() + off]));
    t.check(&n("two_domains_isolated"), va == Ok(1111) && vb == Ok(2222), format!("{:?} {:?}", va, vb));
    // A pointer into domain B given to domain A is confined to A: it writes A's copy of that offset.
    a.call(e(&a, "store_at"), &[b.base() + off, 3333]).unwrap();
    let (va, vb) = (a.call(e(&a, "load_at"), &[heap_a]), b.call(e(&b, "load_at"), &[b.base() + off]));
    t.check(&n("foreign_pointer_confined"), va == Ok(3333) && vb == Ok(2222), format!("{:?} {:?}", va, vb));
    // A host address (a variable on the host stack) cannot be written either.
    let mut host_var: u64 = 77;
    let hp = &mut host_var as *mut u64 as u64;
    let r = a.call(e(&a, "store_at"), &[hp, 99]);
    let seen = unsafe { std::ptr::read_volatile(&host_var) };
    t.check(&n("host_memory_untouched"), seen == 77 && alive(&a), format!("{:?} host_var={}", r, seen));

    // Shared region.
    let r = Domain::share(&a, 0x8000_0000, &b, 0x9000_0000, 1 << 16);
    let ok = r.is_ok() && a.call(e(&a, "store_at"), &[a.base() + 0x8000_0010, 4242]).is_ok()
        && b.call(e(&b, "load_at"), &[b.base() + 0x9000_0010]) == Ok(4242);
    t.check(&n("shared_region"), ok, format!("{:?}", r.err()));

    // Faults end the call with an error; the embedder and the domain carry on.
    let r = a.call(e(&a, "store_null"), &[]);
    t.check(&n("fault_null_store"), fault_sig(&r) == libc::SIGSEGV && alive(&a), format!("{:?}", r));
    let r = a.call(e(&a, "store_code"), &[]);
    t.check(&n("fault_self_modifying_code"), fault_sig(&r) == libc::SIGSEGV && alive(&a), format!("{:?}", r));
    let r = a.call(e(&a, "divide"), &[1, 0]);
    t.check(&n("fault_divide_by_zero"), fault_sig(&r) == libc::SIGFPE && alive(&a), format!("{:?}", r));
    let r = a.call(e(&a, "trap"), &[]);
    t.check(&n("fault_illegal_instruction"), fault_sig(&r) == libc::SIGILL && alive(&a), format!("{:?}", r));
    let r = a.call(e(&a, "recurse"), &[1 << 20]);
    t.check(&n("fault_stack_overflow"), fault_sig(&r) == libc::SIGSEGV && alive(&a), format!("{:?}", r));
    // A function pointer to host code is masked into the domain (and faults there).
    let r = a.call(e(&a, "jump_to"), &[host_double as *const () as u64]);
    t.check(&n("jump_to_host_contained"), r.is_err() && alive(&a), format!("{:?}", r));
    // The bytes after the code, to the end of its last page, are executable: a
    // masked branch to the first bundle there must trap (int3), not run zeros
    // (`00 00` is `add %al,(%rax)`, a store the verifier never saw).
    let code_size = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as u64;
    let tail = a.base() + sfi_verify::CODE_BASE + code_size;
    let want = if code_size % 4096 == 0 { libc::SIGSEGV } else { libc::SIGTRAP };
    let r = a.call(e(&a, "jump_to"), &[tail]);
    t.check(&n("code_tail_traps"), fault_sig(&r) == want && alive(&a), format!("{:?} (code size {})", r, code_size));
    // Loops are stopped.
    let t0 = Instant::now();
    let r = a.call_timeout(e(&a, "loop_forever"), &[], Duration::from_millis(100));
    t.check(&n("timeout_loop"), r == Err(CallError::Timeout) && alive(&a), format!("{:?} after {:?}", r, t0.elapsed()));
    let r = a.call_timeout(e(&a, "loop_calling_host"), &[], Duration::from_millis(100));
    t.check(&n("timeout_loop_calling_host"), r == Err(CallError::Timeout) && alive(&a), format!("{:?}", r));
    // Nested: domain A -> host -> domain B.
    let other = Domain::load(&bytes, &imports(), &cfg).expect("load C");
    OTHER.with(|o| *o.borrow_mut() = Some(other));
    let r = a.call(e(&a, "call_nested"), &[10]);
    t.check(&n("nested_domain_call"), r == Ok(150), format!("{:?}", r));
    // State persists between calls and is per domain.
    let r1 = a.call(e(&a, "bump"), &[]);
    let r2 = a.call(e(&a, "bump"), &[]);
    let r3 = b.call(e(&b, "bump"), &[]);
    t.check(&n("state_per_domain"), r1 == Ok(1) && r2 == Ok(2) && r3 == Ok(1), format!("{:?} {:?} {:?}", r1, r2, r3));
    // Many domains in one process.
    let many: Vec<Domain> = (0..16).map(|_| Domain::load(&bytes, &imports(), &cfg).expect("load")).collect();
    let ok = many.iter().enumerate().all(|(i, d)| d.call(e(d, "add"), &[i as u64, 1]) == Ok(i as u64 + 1));
    t.check(&n("sixteen_domains"), ok, String::new());
    // A module the verifier rejects is never loaded.
    let mut bad = bytes.clone();
    let code_at = 64;
    bad[code_at..code_at + 2].copy_from_slice(&[0x0f, 0x05]); // syscall
    let r = Domain::load(&bad, &imports(), &cfg);
    t.check(&n("load_refuses_rejected_module"), matches!(r, Err(sfi_runtime::LoadError::Rejected(_))), String::new());
    let r = Domain::load(&bytes, &Imports::new(), &cfg);
    t.check(&n("load_refuses_missing_import"), matches!(r, Err(sfi_runtime::LoadError::UnresolvedImport(_))), String::new());
    OTHER.with(|o| *o.borrow_mut() = None);
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut t = T { passed: 0, failed: 0 };
    for (i, p) in args.iter().enumerate() {
        run(&mut t, p, if i == 0 { "stores" } else { "full" });
    }
    std::process::exit(if t.failed == 0 { 0 } else { 1 });
}
