//! IPC round trips (call and reply, with capabilities and strings), the
//! non-blocking send that fails, and the switch between two processes that
//! yield to each other.
//!
//! The server of the cross-address-space benchmarks is the `benchsrv`
//! program of the boot image, loaded into an address space of its own (once,
//! and kept for later runs: the loader cannot give a program's pages
//! back); the
//! server of `same_as` is a thread in the root task's address space running
//! the same loop.  Both answer every call with an empty reply through
//! reply-and-receive (SEND_RECV on the return capability), at the root
//! task's priority, so each call and each reply switches directly.

use keep_abi::{
    ACCOUNT, IpcBuffer, KERNEL, Return, SELF_ASPACE, SELF_PROCESS, Sender, Tag, info, recv, slot,
    tag,
};
use keep_rt::println;
use keep_loader::{Child, Grant, Loader, Spec};

use keep_loader::thread::{self, Args};
use super::{BenchResult, Ctx, RUNS, Suite};
use crate::Root;

/// The label of a configuration call (benchsrv's CONFIG).
const CONFIG: u64 = 0xC0F;
/// The label of a benchmark call.
const PING: u64 = 1;
/// Round trips per batch.
const CALLS: u64 = 200;
/// The priority of every partner process: the root task's (PRIO_DEFAULT).
pub const PRIORITY: u64 = 10;

/// Loads `benchsrv` from the boot image with mode `mode` and starts it.
pub fn spawn_benchsrv(root: &mut Root, mode: u64) -> BenchResult<Child> {
    let img = root.image.as_ref().ok_or("no boot image")?;
    let entry = img.find("benchsrv").ok_or("no program 'benchsrv' in the boot image")?;
    let grants = [Grant {
        src: slot::CONSOLE,
        dest: slot::CONSOLE,
        rights: 0,
    }];
    let spec = Spec {
        name: "benchsrv",
        elf: entry.data,
        arg0: mode,
        arg1: 0,
        grants: &grants,
        blob: None,
    };
    let mut loader = Loader::new(&mut root.slots);
    let child = loader
        .load(&spec)
        .map_err(|e| alloc::format!("loading benchsrv: {e}"))?;
    let started = child
        .process
        .set_priority(PRIORITY)
        .and_then(|_| child.process.start());
    if let Err(e) = started {
        let _ = loader.destroy(child);
        return Err(alloc::format!("starting benchsrv: {e}"));
    }
    Ok(child)
}

/// The benchsrv child in `kept`, loaded and started on first use.
fn benchsrv(root: &mut Root, mode: u64) -> BenchResult<Child> {
    let kept = if mode == 0 { root.bench.server } else { root.bench.yielder };
    if let Some(c) = kept {
        return Ok(c);
    }
    let c = spawn_benchsrv(root, mode)?;
    if mode == 0 {
        root.bench.server = Some(c);
    } else {
        root.bench.yielder = Some(c);
    }
    Ok(c)
}

/// The same-address-space server: words[0..5] are its receive slots.
fn server(a: &Args) -> u64 {
    let slots: [u64; 5] = [a.words[0], a.words[1], a.words[2], a.words[3], a.words[4]];
    a.buf().set_recv_slots(&slots);
    let mut n = 1;
    let mut m = recv(Tag::new(0).with_slots(n), 0);
    loop {
        if m.err != 0 {
            m = recv(Tag::new(0).with_slots(n), 0);
            continue;
        }
        if m.tag.label() == CONFIG {
            n = m.words[0].clamp(1, 5);
        }
        m = Return(slots[0]).reply_recv(Tag::new(0).with_slots(n), [0; 4], 0);
    }
}

/// One round trip to `to` with `t` (CALL mode); the error code.
#[inline(always)]
fn call(to: Sender, t: Tag) -> u64 {
    to.call(t, [0; 4]).err
}

/// Sets the server's receive slots for the next calls.
fn configure(to: Sender, slots: u64) -> BenchResult {
    keep_abi::Error::check(to.call(Tag::new(CONFIG), [slots, 0, 0, 0]).err).ctx("CONFIG call")
}

/// Runs `f` (one benchmark of round trips) and says how many of the
/// kernel's calls and reply-and-receives in it took the IPC fast path
/// (KERNEL.INFO(FASTPATH_IPC)): warm-up and 21 batches of CALLS round
/// trips, two fast-path candidates each.
fn counting(s: &mut Suite, name: &'static str, f: impl FnOnce(&mut Suite)) {
    if !s.wants(name) {
        return;
    }
    let before = KERNEL.info(info::FASTPATH_IPC).unwrap_or(0);
    f(s);
    let after = KERNEL.info(info::FASTPATH_IPC).unwrap_or(0);
    let trips = CALLS * (RUNS as u64 + 1);
    println!(
        "bench: {name}: {} of {} calls and replies took the fast path",
        after.saturating_sub(before),
        2 * trips
    );
}

/// The round-trip benchmarks against the server behind `to`.
fn round_trips(s: &mut Suite, to: Sender, names: &Names) -> BenchResult {
    let buf: &mut IpcBuffer = keep_rt::ipc_buffer();
    configure(to, 1)?;
    let null = Tag::new(PING);
    keep_abi::Error::check(call(to, null)).ctx("first call")?;
    counting(s, names.null, |s| s.bench(names.null, CALLS, || call(to, null)));
    let Some(caps) = names.caps else { return Ok(()) };
    // Capabilities to send: four copies of the timer capability.
    for (i, name) in caps.iter().enumerate() {
        if !s.wants(name) {
            continue;
        }
        let n = i as u64 + 1;
        buf.set_send_caps(&[(slot::TIMER, 0); 4]);
        configure(to, 1 + n)?;
        let t = Tag::new(PING).with_caps(n);
        keep_abi::Error::check(call(to, t)).ctx("call with capabilities")?;
        counting(s, name, |s| s.bench(name, CALLS, || call(to, t)));
    }
    configure(to, 1)?;
    for &(name, len) in names.strings {
        if !s.wants(name) {
            continue;
        }
        buf.send_len = len;
        let t = Tag::new(PING).with_string();
        keep_abi::Error::check(call(to, t)).ctx("call with a string")?;
        counting(s, name, |s| s.bench(name, CALLS, || call(to, t)));
        buf.send_len = 0;
    }
    Ok(())
}

struct Names {
    null: &'static str,
    caps: Option<[&'static str; 4]>,
    strings: &'static [(&'static str, u64)],
}

const CROSS: Names = Names {
    null: "ipc.call_reply.cross_as",
    caps: Some([
        "ipc.call_reply.cross_as.cap1",
        "ipc.call_reply.cross_as.cap2",
        "ipc.call_reply.cross_as.cap3",
        "ipc.call_reply.cross_as.cap4",
    ]),
    strings: &[
        ("ipc.call_reply.cross_as.string64", 64),
        ("ipc.call_reply.cross_as.string4k", 4096),
    ],
};

const SAME: Names = Names {
    null: "ipc.call_reply.same_as",
    caps: None,
    strings: &[],
};

/// A SENDER to `process` in a fresh slot.
fn mint(root: &mut Root, process: keep_abi::Process) -> BenchResult<Sender> {
    let snd = root.slots.alloc().ok_or("no free slot")?;
    if let Err(e) = process.mint(snd, 0x5e4d, 0) {
        root.slots.free(snd);
        return Err(alloc::format!("MINT: {e}"));
    }
    Ok(Sender(snd))
}

fn drop_slot(root: &mut Root, s: u64) {
    let _ = SELF_ASPACE.delete_cap(s);
    root.slots.free(s);
}

fn cross_as(root: &mut Root, s: &mut Suite) -> BenchResult {
    let child = benchsrv(root, 0)?;
    let to = mint(root, child.process)?;
    let r = round_trips(s, to, &CROSS);
    drop_slot(root, to.0);
    r
}

/// `ipc.call_reply.cross_as` to a benchsrv with a budget (all of every
/// longest period: never spent, so never parked): what charging a budgeted
/// process costs a call and its reply, which the kernel then takes on the
/// general path.  The budget is removed after.
fn budget_switch(root: &mut Root, s: &mut Suite) -> BenchResult {
    const NAME: &str = "sched.budget_switch";
    if !s.wants(NAME) {
        return Ok(());
    }
    let child = benchsrv(root, 0)?;
    let to = mint(root, child.process)?;
    let max = keep_abi::layout::BUDGET_MAX_PERIOD_US;
    let r = (|| -> BenchResult {
        child.process.set_budget(max, max).ctx("SET_BUDGET")?;
        configure(to, 1)?;
        let null = Tag::new(PING);
        keep_abi::Error::check(call(to, null)).ctx("first call")?;
        counting(s, NAME, |s| s.bench(NAME, CALLS, || call(to, null)));
        Ok(())
    })();
    let _ = child.process.set_budget(0, 0);
    drop_slot(root, to.0);
    r
}

const PRESSURE: Names = Names {
    null: "ipc.call_reply.cross_as.kmem_pressure",
    caps: None,
    strings: &[],
};

/// A neighbour that hammers its exhausted account (no kpager): every
/// CREATE_ASPACE fails with NO_MEMORY, forever, at the partners' priority.
fn hammer(a: &Args) -> u64 {
    let [account, dest, ..] = a.words;
    loop {
        let _ = keep_abi::Account(account).create_aspace(dest);
    }
}

/// The cross-address-space null round trip while a neighbour hammers its
/// empty account: the same figure is the target (no task's kernel-memory
/// faults may slow another's IPC).
fn cross_as_pressure(root: &mut Root, s: &mut Suite) -> BenchResult {
    if !s.wants(PRESSURE.null) {
        return Ok(());
    }
    let child = benchsrv(root, 0)?;
    let to = mint(root, child.process)?;
    let (acct, dest) = match (root.slots.alloc(), root.slots.alloc()) {
        (Some(a), Some(d)) => (a, d),
        _ => return Err("no free slot".into()),
    };
    let r = (|| -> BenchResult {
        keep_abi::MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        let t = thread::spawn(&mut root.slots, "bench-hammer", PRIORITY, hammer, &[acct, dest])?;
        let r = round_trips(s, to, &PRESSURE);
        t.kill(&mut root.slots);
        r
    })();
    let _ = keep_abi::Account(acct).destroy_all(slot::MEMORY);
    drop_slot(root, acct);
    drop_slot(root, dest);
    drop_slot(root, to.0);
    r
}

fn same_as(root: &mut Root, s: &mut Suite) -> BenchResult {
    let mut slots = [0u64; 8];
    for i in 0..5 {
        match root.slots.alloc() {
            Some(x) => slots[i] = x,
            None => {
                for &x in &slots[..i] {
                    root.slots.free(x);
                }
                return Err("no free slot".into());
            }
        }
    }
    let r = thread::spawn(&mut root.slots, "bench-server", PRIORITY, server, &slots).and_then(|t| {
        let r = mint(root, t.process).and_then(|to| {
            let r = round_trips(s, to, &SAME);
            drop_slot(root, to.0);
            r
        });
        t.kill(&mut root.slots);
        r
    });
    for &x in &slots[..5] {
        drop_slot(root, x);
    }
    r
}

/// A non-blocking send to a process that never receives (it is made and
/// never started): WOULD_BLOCK, with nothing changed.
fn nonblocking_fail(root: &mut Root, s: &mut Suite) -> BenchResult {
    let p = root.slots.alloc().ok_or("no free slot")?;
    let r = ACCOUNT
        .create_process(slot::SELF_ASPACE, p)
        .ctx("CREATE_PROCESS")
        .and_then(|_| {
            let to = mint(root, keep_abi::Process(p))?;
            let t = Tag::new(PING).with_mode(tag::MODE_SEND).send_nonblocking();
            let e = keep_abi::ipc(to.0, t, [0; 4], 0).err;
            let r = if e == keep_abi::err::WOULD_BLOCK {
                s.bench("ipc.send.nonblocking_fail", 1000, || {
                    keep_abi::ipc(to.0, t, [0; 4], 0).err
                });
                Ok(())
            } else {
                Err(alloc::format!("the send gave error {e}, not WOULD_BLOCK"))
            };
            drop_slot(root, to.0);
            r
        });
    let _ = ACCOUNT.destroy(p);
    drop_slot(root, p);
    r
}

/// Two processes in different address spaces at the same priority, each
/// yielding to the other: one YIELD of the root task is two switches.
/// The partner is stopped between runs so that it does not spin.
fn yield_switch(root: &mut Root, s: &mut Suite) -> BenchResult {
    let fresh = root.bench.yielder.is_none();
    let child = benchsrv(root, 1)?;
    if !fresh {
        child.process.start().ctx("START of the yield partner")?;
    }
    let runs = s.measure(CALLS, || SELF_PROCESS.yield_now());
    child.process.stop().ctx("STOP of the yield partner")?;
    let mut halves = runs;
    for r in halves.0.iter_mut() {
        *r /= 2;
    }
    s.report("sched.yield_switch", "instructions", halves);
    Ok(())
}

pub fn run(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[
        ("ipc.call_reply.cross_as", cross_as),
        ("ipc.call_reply.cross_as.kmem_pressure", cross_as_pressure),
        ("ipc.call_reply.same_as", same_as),
        ("ipc.send.nonblocking_fail", nonblocking_fail),
        ("sched.yield_switch", yield_switch),
        ("sched.budget_switch", budget_switch),
    ]);
}
