//! Software fault isolation inside Keep (docs/sfi.md, "Inside Keep"): the
//! packet-filter server `pfilter` verifies client-supplied filter modules,
//! runs them in fault domains and survives the ones that fault or loop; the
//! runtime (keep-sfi-rt) also runs in ktest's own process.  The modules are
//! in the boot image as pf-*.sfi (built by sfi-cc, see the Makefile).

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use keep_abi::{Aspace, Process};
use keep_loader::Child;
use keep_pfilter::{self as pf, Client, Reply, Server};
use keep_sfi_rt::{CallError, Config, Domain, HostFn, Runtime};

use crate::{Ctx, Cx, TestResult};

/// The server the tests share (started by the first, stopped by the last):
/// process, address space, sender slots (0 = none).
static SERVER: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

fn module(cx: &Cx, name: &str) -> Result<&'static [u8], String> {
    let img = cx.image.as_ref().ok_or("no boot image")?;
    Ok(img.find(name).ok_or_else(|| alloc::format!("no '{name}' in the boot image"))?.data)
}

fn server(cx: &mut Cx) -> Result<Server, String> {
    if SERVER[0].load(Ordering::Relaxed) == 0 {
        let img = cx.image.ok_or("no boot image")?;
        let s = Server::spawn(&mut cx.slots, &img)?;
        SERVER[0].store(s.child.process.0, Ordering::Relaxed);
        SERVER[1].store(s.child.aspace.0, Ordering::Relaxed);
        SERVER[2].store(s.sender, Ordering::Relaxed);
    }
    Ok(Server {
        child: Child {
            process: Process(SERVER[0].load(Ordering::Relaxed)),
            aspace: Aspace(SERVER[1].load(Ordering::Relaxed)),
        },
        sender: SERVER[2].load(Ordering::Relaxed),
    })
}

fn client(cx: &mut Cx) -> Result<Client, String> {
    Ok(server(cx)?.client())
}

/// An IPv4 packet of `len` bytes with protocol `proto` and destination
/// port `port` (header length `ihl` words).
fn packet(ihl: u8, proto: u8, port: u16, len: usize) -> Vec<u8> {
    let mut p = vec![0u8; len];
    let h = ihl as usize * 4;
    if len > 0 {
        p[0] = 0x40 | ihl;
    }
    if len > 9 {
        p[9] = proto;
    }
    if len > h + 3 {
        p[h + 2..h + 4].copy_from_slice(&port.to_be_bytes());
    }
    p
}

fn load(c: &Client, m: &[u8]) -> Result<u64, String> {
    c.load(m).map_err(|(s, why, _)| alloc::format!("LOAD: {} ({why})", pf::status_name(s)))
}

fn expect_verdict(c: &Client, id: u64, p: &[u8], want: u64, what: &str) -> TestResult {
    let r = c.run(id, p);
    ensure!(
        r == Reply { status: pf::OK, words: [want, 0, 0] },
        "{what}: got {} {:x?}, want verdict {want}",
        pf::status_name(r.status),
        r.words
    );
    Ok(())
}

/// The DNS filter's verdicts on one packet of each kind.
fn check_udp53(c: &Client, id: u64) -> TestResult {
    expect_verdict(c, id, &packet(5, 17, 53, 64), 1, "UDP to port 53")?;
    expect_verdict(c, id, &packet(6, 17, 53, 64), 1, "UDP to port 53 with IP options")?;
    expect_verdict(c, id, &packet(5, 6, 53, 64), 0, "TCP to port 53")?;
    expect_verdict(c, id, &packet(5, 17, 80, 64), 0, "UDP to port 80")?;
    expect_verdict(c, id, &packet(5, 17, 53, 27), 0, "a 27-byte packet")?;
    expect_verdict(c, id, &packet(5, 17, 53, 1501), 0, "a packet over the MTU")?;
    let mut v6 = packet(5, 17, 53, 64);
    v6[0] = 0x65;
    expect_verdict(c, id, &v6, 0, "an IPv6 packet")?;
    expect_verdict(c, id, &[], 0, "an empty packet")
}

pub fn verdicts(cx: &mut Cx) -> TestResult {
    let m = module(cx, "pf-udp53.sfi")?;
    let c = client(cx)?;
    let id = load(&c, m)?;
    let r = check_udp53(&c, id);
    ensure!(c.unload(id) == pf::OK, "UNLOAD failed");
    r
}

fn expect_rejected(cx: &mut Cx, name: &str, status: u64, reason: &str, offset: Option<u64>) -> TestResult {
    let m = module(cx, name)?;
    let c = client(cx)?;
    match c.load(m) {
        Ok(id) => {
            c.unload(id);
            Err(alloc::format!("{name} was accepted"))
        }
        Err((s, why, off)) => {
            ensure!(
                s == status && why == reason && off == offset.unwrap_or(pf::NO_OFFSET),
                "{name}: got {} '{why}' at {off:#x}, want {} '{reason}' at {offset:x?}",
                pf::status_name(s),
                pf::status_name(status)
            );
            Ok(())
        }
    }
}

pub fn reject_store(cx: &mut Cx) -> TestResult {
    expect_rejected(cx, "pf-store_unsandboxed.sfi", pf::REJECTED, "unsandboxed store", Some(0))
}

pub fn reject_syscall(cx: &mut Cx) -> TestResult {
    expect_rejected(cx, "pf-syscall.sfi", pf::REJECTED, "system call or interrupt", Some(0))
}

pub fn reject_other(cx: &mut Cx) -> TestResult {
    expect_rejected(cx, "pf-nofilter.sfi", pf::NO_FILTER_ENTRY, "no entry 'filter'", None)?;
    expect_rejected(cx, "pf-bigbss.sfi", pf::LOAD_FAILED, "data, heap or stack too large", None)?;
    let c = client(cx)?;
    // Not a module at all; then a module cut short.
    match c.load(b"this is not a module") {
        Err((pf::REJECTED, why, pf::NO_OFFSET)) if why == "bad magic" => {}
        r => return Err(alloc::format!("garbage: {r:?}")),
    }
    let m = module(cx, "pf-udp53.sfi")?;
    match c.load(&m[..m.len() - 3]) {
        Err((pf::REJECTED, why, pf::NO_OFFSET)) if why == "truncated module" => Ok(()),
        r => Err(alloc::format!("truncated module: {r:?}")),
    }
}

pub fn bad_requests(cx: &mut Cx) -> TestResult {
    let c = client(cx)?;
    let r = c.run(999, b"x");
    ensure!(r.status == pf::NO_SUCH_FILTER, "RUN of filter 999: {}", pf::status_name(r.status));
    ensure!(c.unload(999) == pf::NO_SUCH_FILTER, "UNLOAD of filter 999 succeeded");
    let m = c.server.call(keep_abi::Tag::new(77), [0; 4]);
    ensure!(m.err == 0 && m.words[0] == pf::BAD_REQUEST, "label 77: err {} status {}", m.err, m.words[0]);
    let m = c.server.call(keep_abi::Tag::new(pf::LOAD_PART), [u64::MAX - 2, 0, 0, 0]);
    ensure!(m.err == 0 && m.words[0] == pf::TOO_BIG, "LOAD_PART at 2^64-3: status {}", m.words[0]);
    let m = c.server.call(keep_abi::Tag::new(pf::LOAD), [1 << 40, 0, 0, 0]);
    ensure!(m.err == 0 && m.words[0] == pf::BAD_REQUEST, "LOAD of 2^40 bytes: status {}", m.words[0]);
    Ok(())
}

pub fn faults(cx: &mut Cx) -> TestResult {
    let m = module(cx, "pf-fault.sfi")?;
    let good = module(cx, "pf-udp53.sfi")?;
    let c = client(cx)?;
    let id = load(&c, m)?;
    let dns = load(&c, good)?;
    let r = (|| {
        let code = 0x2_0000..0x2_0000 + 0x1000;
        // Store through a null pointer: a page fault in the null guard.
        let r = c.run(id, &[1, 0]);
        ensure!(
            r.status == pf::FAULT && r.words[0] == 14 && r.words[1] & 0xffff_ffff == 0 && code.contains(&r.words[2]),
            "null store: {} {:x?}",
            pf::status_name(r.status),
            r.words
        );
        let r = c.run(id, &[2]);
        ensure!(r.status == pf::FAULT && r.words[0] == 6 && code.contains(&r.words[2]), "ud2: {} {:x?}", pf::status_name(r.status), r.words);
        // int3 is #BP (3), reported after the instruction.
        let r = c.run(id, &[3]);
        ensure!(r.status == pf::FAULT && r.words[0] == 3 && code.contains(&r.words[2]), "int3: {} {:x?}", pf::status_name(r.status), r.words);
        // The same domain still runs, and so does another.
        expect_verdict(&c, id, &[4], 1, "the faulting filter's normal path")?;
        check_udp53(&c, dns)
    })();
    c.unload(id);
    c.unload(dns);
    r
}

pub fn timeout(cx: &mut Cx) -> TestResult {
    let m = module(cx, "pf-loop.sfi")?;
    let good = module(cx, "pf-udp53.sfi")?;
    let c = client(cx)?;
    let id = load(&c, m)?;
    let dns = load(&c, good)?;
    let r = (|| {
        let t0 = keep_abi::TIMER.now_ms().ctx("NOW")?;
        let r = c.run(id, b"spin");
        let ms = keep_abi::TIMER.now_ms().ctx("NOW")? - t0;
        ensure!(r.status == pf::TIMEOUT, "looping filter: {} {:x?}", pf::status_name(r.status), r.words);
        ensure!(ms >= pf::TIMEOUT_MS, "stopped after {ms} ms, before the {} ms limit", pf::TIMEOUT_MS);
        check_udp53(&c, dns)?;
        let r = c.run(id, b"again");
        ensure!(r.status == pf::TIMEOUT, "second run: {}", pf::status_name(r.status));
        Ok(())
    })();
    c.unload(id);
    c.unload(dns);
    r
}

pub fn several(cx: &mut Cx) -> TestResult {
    let m = module(cx, "pf-udp53.sfi")?;
    let f = module(cx, "pf-fault.sfi")?;
    let c = client(cx)?;
    let mut ids = Vec::new();
    let r = (|| {
        for _ in 0..8 {
            ids.push(load(&c, m)?);
            ids.push(load(&c, f)?);
        }
        let mut sorted = ids.clone();
        sorted.sort_unstable();
        sorted.dedup();
        ensure!(sorted.len() == ids.len(), "filter ids repeat: {ids:?}");
        for pair in ids.chunks(2) {
            check_udp53(&c, pair[0])?;
            let r = c.run(pair[1], &[2]);
            ensure!(r.status == pf::FAULT && r.words[0] == 6, "fault in filter {}: {}", pair[1], pf::status_name(r.status));
        }
        Ok(())
    })();
    for id in ids {
        ensure!(c.unload(id) == pf::OK, "UNLOAD {id}");
    }
    r
}

extern "C" fn mtu(_: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    1500
}

include!("../../../../sfi/runtime/src/x87_probe.rs");

/// The runtime in ktest's own process: null calls, a host call, a fault,
/// the separate data of two domains, and an emptied x87 stack.
pub fn in_process(cx: &mut Cx) -> TestResult {
    let m = module(cx, "pf-udp53.sfi")?;
    let fm = module(cx, "pf-fault.sfi")?;
    let rt = Runtime::start(&mut cx.slots, 11)?;
    let imports: [(&str, HostFn); 1] = [("pf_mtu", mtu)];
    let cfg = Config { heap_size: 4096, ..Config::default() };
    let r = (|| {
        let a = Domain::load(&mut cx.slots, m, &imports, &cfg).map_err(|e| alloc::format!("load: {e}"))?;
        let b = match Domain::load(&mut cx.slots, m, &imports, &cfg) {
            Ok(b) => b,
            Err(e) => {
                a.unload(&mut cx.slots);
                return Err(alloc::format!("second load: {e}"));
            }
        };
        let r = (|| {
            ensure!(a.base() != b.base() && a.base() % (1 << 32) == 0, "bases {:#x} {:#x}", a.base(), b.base());
            let nop = a.entry("pf_nop").ok_or("no pf_nop")?;
            for x in [0u64, 42, u64::MAX] {
                ensure!(a.call(nop, &[x]) == Ok(x), "pf_nop({x}) = {:?}", a.call(nop, &[x]));
            }
            // Run the filter three times in a, once in b; each counts its own.
            let (fa, fb) = (a.entry("filter").ok_or("no filter")?, b.entry("filter").ok_or("no filter")?);
            let p = packet(5, 17, 53, 64);
            let heap = a.heap().0;
            // SAFETY: a's heap is mapped read+write, 4096 bytes.
            unsafe { core::ptr::copy_nonoverlapping(p.as_ptr(), heap as *mut u8, p.len()) };
            for _ in 0..3 {
                ensure!(a.call(fa, &[heap, 64]) == Ok(1), "filter in a: {:?}", a.call(fa, &[heap, 64]));
            }
            ensure!(b.call(fb, &[b.heap().0, 0]) == Ok(0), "filter in b");
            let (sa, sb) = (a.entry("pf_seen").ok_or("no pf_seen")?, b.entry("pf_seen").ok_or("no pf_seen")?);
            ensure!(a.call(sa, &[]) == Ok(3) && b.call(sb, &[]) == Ok(1), "seen: a {:?}, b {:?}", a.call(sa, &[]), b.call(sb, &[]));
            Ok(())
        })();
        a.unload(&mut cx.slots);
        b.unload(&mut cx.slots);
        r?;
        // A fault in a domain of this process ends the call, and this process goes on.
        let f = Domain::load(&mut cx.slots, fm, &[], &cfg).map_err(|e| alloc::format!("load fault: {e}"))?;
        let r = (|| {
            let e = f.entry("filter").ok_or("no filter")?;
            let heap = f.heap().0;
            // SAFETY: as above.
            unsafe { (heap as *mut u8).write(2) };
            let before = rt.ended();
            let got = f.call(e, &[heap, 1]);
            ensure!(
                matches!(got, Err(CallError::Fault { vector: 6, .. })) && rt.ended() == before + 1,
                "ud2 in the domain: {got:?}"
            );
            ensure!(f.call(e, &[heap, 0]) == Ok(1), "the call after the fault");
            // x87 values the domain leaves are gone when it returns or faults.
            // SAFETY: as above.
            unsafe { (heap as *mut u8).write(5) };
            ensure!(f.call(e, &[heap, 1]) == Ok(1) && x87_empty(), "x87 after a return: empty {}", x87_empty());
            // SAFETY: as above.
            unsafe { (heap as *mut [u8; 2]).write([6, 0]) };
            let got = f.call(e, &[heap, 2]);
            ensure!(matches!(got, Err(CallError::Fault { vector: 14, .. })) && x87_empty(), "x87 after a fault: {got:?}, empty {}", x87_empty());
            // The rest of the last code page is int3: a masked call to the
            // first bundle after the code traps there (#BP, just past it)
            // instead of running zeros (`00 00` = `add %al,(%rax)`).
            let code_size = u32::from_le_bytes(fm[12..16].try_into().unwrap()) as u64;
            let tail = f.base() + keep_sfi_rt::CODE_BASE + code_size;
            ensure!(code_size % 4096 != 0, "pf-fault's code fills its last page: nothing to test");
            let mut pkt = [0u8; 16];
            pkt[0] = 7;
            pkt[8..].copy_from_slice(&tail.to_le_bytes());
            // SAFETY: as above.
            unsafe { (heap as *mut [u8; 16]).write(pkt) };
            let got = f.call(e, &[heap, 16]);
            let past = keep_sfi_rt::CODE_BASE + code_size + 1;
            ensure!(matches!(got, Err(CallError::Fault { vector: 3, offset, .. }) if offset == past), "call past the code (size {code_size}): {got:?}");
            Ok(())
        })();
        f.unload(&mut cx.slots);
        r
    })();
    rt.stop(&mut cx.slots);
    r
}

/// Two threads set different %gs bases and yield to each other many
/// times: each keeps its own (the kernel switches the bases).
pub fn gs_per_process(cx: &mut Cx) -> TestResult {
    if !keep_sfi_rt::fsgsbase() {
        return Err("the CPU has no FSGSBASE".into());
    }
    fn body(a: &keep_loader::thread::Args) -> u64 {
        let mine = a.words[0];
        // SAFETY: wrgsbase/rdgsbase only touch this thread's gs base.
        unsafe { core::arch::asm!("wrgsbase {}", in(reg) mine) };
        for _ in 0..50 {
            let _ = a.process.yield_now();
            let now: u64;
            unsafe { core::arch::asm!("rdgsbase {}", out(reg) now) };
            if now != mine {
                return 1;
            }
        }
        0
    }
    let t1 = keep_loader::thread::spawn(&mut cx.slots, "gs-a", 10, body, &[0x1111_0000_0000])?;
    let t2 = match keep_loader::thread::spawn(&mut cx.slots, "gs-b", 10, body, &[0x2222_0000_0000]) {
        Ok(t) => t,
        Err(e) => {
            t1.kill(&mut cx.slots);
            return Err(e);
        }
    };
    let s1 = t1.join(&mut cx.slots)?;
    let s2 = t2.join(&mut cx.slots)?;
    let mine: u64;
    unsafe { core::arch::asm!("rdgsbase {}", out(reg) mine) };
    ensure!(s1.code == 0 && s2.code == 0, "threads saw another gs base: {s1}, {s2}");
    ensure!(mine == 0, "ktest's own gs base became {mine:#x}");
    Ok(())
}

pub fn quit(cx: &mut Cx) -> TestResult {
    let s = server(cx)?;
    // One more DNS check before it goes.
    let c = s.client();
    let id = load(&c, module(cx, "pf-udp53.sfi")?)?;
    check_udp53(&c, id)?;
    for a in &SERVER {
        a.store(0, Ordering::Relaxed);
    }
    let code = s.stop(&mut cx.slots)?;
    ensure!(code == 0, "pfilter exited with {code}");
    Ok(())
}
