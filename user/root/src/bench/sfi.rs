//! Software fault isolation inside Keep (docs/sfi.md, "Inside Keep"):
//!
//! * `sfi.keep.call.roundtrip`: the null cross-domain call, `pf_nop(0)`
//!   of the DNS filter module loaded into a domain of the root task itself
//!   (entry stub, the domain's function and its masked return, the way back);
//! * `sfi.keep.filter.call`: the DNS filter on a 64-byte packet in that
//!   domain (one host call to `pf_mtu` inside);
//! * `sfi.keep.filter.packet`: one packet through the `pfilter` server:
//!   the client's call with the packet as IPC string, the copy into the
//!   domain, the filter, the reply.
//!
//! Set next to `ipc.call_reply.cross_as`, the IPC round trip between two
//! address spaces (tools/bench.py records the ratio).

use keep_pfilter::{self as pf, Server};
use keep_rt::println;
use keep_sfi_rt::{Config, Domain, HostFn, Runtime};

use super::{BenchResult, ITERATIONS, Suite};
use crate::Root;

/// Packets per batch of the server benchmark.
const PACKETS: u64 = 200;

extern "C" fn mtu(_: u64, _: u64, _: u64, _: u64, _: u64, _: u64) -> u64 {
    1500
}

/// A 64-byte IPv4 UDP packet to port 53 (the filter accepts it).
fn dns_packet() -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0] = 0x45;
    p[9] = 17;
    p[23] = 53;
    p
}

pub fn run(root: &mut Root, s: &mut Suite) {
    if !s.wants_any("sfi.keep") {
        return;
    }
    if let Err(e) = in_process(root, s) {
        s.fail("sfi.keep.call", &e);
    }
    if s.wants("sfi.keep.filter.packet") {
        if let Err(e) = server(root, s) {
            s.fail("sfi.keep.filter.packet", &e);
        }
    }
    for (a, b) in [
        ("ipc.call_reply.cross_as", "sfi.keep.call.roundtrip"),
        ("sfi.keep.filter.packet", "ipc.call_reply.cross_as"),
    ] {
        if let (Some(x), Some(y)) = (s.lookup(a), s.lookup(b)) {
            if y > 0 {
                let milli = x * 1000 / y;
                println!("bench: ratio {a} / {b} = {}.{:03}", milli / 1000, milli % 1000);
            }
        }
    }
}

fn module(root: &Root, name: &str) -> BenchResult<&'static [u8]> {
    let img = root.image.as_ref().ok_or("no boot image")?;
    Ok(img.find(name).ok_or("no filter module in the boot image")?.data)
}

fn in_process(root: &mut Root, s: &mut Suite) -> BenchResult {
    if !s.wants_any("sfi.keep.call") && !s.wants("sfi.keep.filter.call") {
        return Ok(());
    }
    let m = module(root, "pf-udp53.sfi")?;
    let rt = Runtime::start(&mut root.slots, super::ipc::PRIORITY + 1)?;
    let imports: [(&str, HostFn); 1] = [("pf_mtu", mtu)];
    let cfg = Config { heap_size: 4096, ..Config::default() };
    let r = match Domain::load(&mut root.slots, m, &imports, &cfg) {
        Ok(d) => {
            let r = (|| {
                let nop = d.entry("pf_nop").ok_or("no pf_nop")?;
                let filter = d.entry("filter").ok_or("no filter")?;
                let heap = d.heap().0;
                let p = dns_packet();
                // SAFETY: the domain's heap is mapped read+write, 4096 bytes.
                unsafe { core::ptr::copy_nonoverlapping(p.as_ptr(), heap as *mut u8, p.len()) };
                if d.call(filter, &[heap, 64]) != Ok(1) || d.call(nop, &[7]) != Ok(7) {
                    return Err("the domain gives wrong answers".into());
                }
                s.bench("sfi.keep.call.roundtrip", ITERATIONS, || d.call(nop, &[0]));
                s.bench("sfi.keep.filter.call", ITERATIONS, || d.call(filter, &[heap, 64]));
                Ok(())
            })();
            d.unload(&mut root.slots);
            r
        }
        Err(e) => Err(alloc::format!("loading the filter: {e}")),
    };
    rt.stop(&mut root.slots);
    r
}

fn server(root: &mut Root, s: &mut Suite) -> BenchResult {
    let m = module(root, "pf-udp53.sfi")?;
    let img = root.image.ok_or("no boot image")?;
    let srv = Server::spawn(&mut root.slots, &img)?;
    let c = srv.client();
    let r = (|| {
        let id = c.load(m).map_err(|(st, why, _)| alloc::format!("LOAD: {} {why}", pf::status_name(st)))?;
        let p = dns_packet();
        let ok = pf::Reply { status: pf::OK, words: [1, 0, 0] };
        if c.run(id, &p) != ok {
            return Err("the server gives a wrong verdict".into());
        }
        let mut bad = 0u64;
        s.bench("sfi.keep.filter.packet", PACKETS, || {
            if c.run(id, &p) != ok {
                bad += 1;
            }
        });
        if bad != 0 {
            return Err(alloc::format!("{bad} wrong verdicts while measuring"));
        }
        Ok(())
    })();
    let stopped = srv.stop(&mut root.slots);
    r?;
    stopped.map(drop)
}
