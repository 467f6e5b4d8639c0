//! Faults: a page fault resolved by a user-level pager, an exception
//! delivered to a fault handler and resumed, a kernel-memory fault resolved
//! by a kpager, and heap growth by a page.
//!
//! For the first two a thread of the root task (same address space, same
//! priority) takes the faults and times each one itself, from just before
//! the faulting instruction to just after its successful retry; the root
//! task is its fault handler.  The thread keeps its figures in `SAMPLES`
//! and reports the end of its runs with a `DONE` call to the handler.

use core::hint::black_box;
use core::sync::atomic::{AtomicU64, Ordering::SeqCst};

use keep_abi::{
    Account, MEMORY, Msg, Return, SELF_ASPACE, Sender, Tag, label, recv, reply, rights, slot, ty,
};

use super::ipc::PRIORITY;
use keep_loader::thread::{self, Args};
use super::{BenchResult, Ctx, RUNS, Runs, Suite, tsc};
use crate::Root;

/// The label of the faulting thread's final call.
pub(super) const DONE: u64 = 0xD0E;
/// Faults per batch.
pub(super) const FAULTS: u64 = 64;
/// Where the page-fault benchmark's page comes and goes.
const PF_VADDR: u64 = 0x0000_5100_0000_0000;
/// Where the heap-growth benchmark maps its pages.
const HEAP_VADDR: u64 = 0x0000_5200_0000_0000;
/// Pages per heap-growth batch.
const HEAP_PAGES: u64 = 32;
/// Kernel-memory faults per batch.
const KMEM_OPS: u64 = 32;

/// Per-operation figures of the warm-up batch (index 0) and RUNS batches.
pub(super) static SAMPLES: [AtomicU64; RUNS + 1] = [const { AtomicU64::new(0) }; RUNS + 1];
/// The divisor of the exception benchmark: 0 faults, the handler sets 1.
static DIVISOR: AtomicU64 = AtomicU64::new(0);

/// The faulting side of the page-fault benchmark: words[0] is the SENDER
/// to the handler, words[1] the cost of an empty rdtsc pair.
fn page_faulter(a: &Args) -> u64 {
    let pair = a.words[1];
    let mut code = 0;
    'runs: for s in SAMPLES.iter() {
        let mut sum = 0;
        for _ in 0..FAULTS {
            let t0 = tsc();
            // SAFETY: PF_VADDR is unmapped; the pager maps a page there and
            // the write is retried.  Nothing else uses that address.
            unsafe { core::ptr::write_volatile(PF_VADDR as *mut u64, 1) };
            let t1 = tsc();
            sum += (t1 - t0).saturating_sub(pair);
            if SELF_ASPACE.unmap(PF_VADDR).is_err() {
                code = 1;
                break 'runs;
            }
        }
        s.store(sum / FAULTS, SeqCst);
    }
    Sender(a.words[0]).call(Tag::new(DONE), [code, 0, 0, 0]);
    code
}

/// The faulting side of the exception benchmark: a divide by DIVISOR,
/// which is 0 (#DE) until the handler makes it 1.
fn divide_faulter(a: &Args) -> u64 {
    let pair = a.words[1];
    for s in SAMPLES.iter() {
        let mut sum = 0;
        for _ in 0..FAULTS {
            DIVISOR.store(0, SeqCst);
            let t0 = tsc();
            // SAFETY: divides rdx:rax = 1 by the word at DIVISOR (a valid
            // static); a zero divisor raises #DE, which the handler answers
            // by making it 1 so that the retried instruction succeeds.
            unsafe {
                core::arch::asm!(
                    "div qword ptr [{p}]",
                    p = in(reg) DIVISOR.as_ptr(),
                    inout("rax") 1u64 => _,
                    inout("rdx") 0u64 => _,
                    options(nostack)
                );
            }
            let t1 = tsc();
            sum += (t1 - t0).saturating_sub(pair);
        }
        s.store(sum / FAULTS, SeqCst);
    }
    Sender(a.words[0]).call(Tag::new(DONE), [0; 4]);
    0
}

/// Runs `body` in a thread whose fault handler is the root task and
/// answers its faults with `on_fault` then RESUME, through
/// reply-and-receive, until the thread's DONE call.  Returns the thread's
/// figures.
pub(super) fn handled(
    root: &mut Root,
    s: &Suite,
    body: thread::Body,
    mut on_fault: impl FnMut(&Msg) -> BenchResult,
) -> BenchResult<Runs> {
    let snd = root.slots.alloc().ok_or("no free slot")?;
    let ret = match root.slots.alloc() {
        Some(r) => r,
        None => {
            root.slots.free(snd);
            return Err("no free slot".into());
        }
    };
    let r = (|| {
        keep_abi::SELF_PROCESS.mint(snd, 0xFA17, 0).ctx("MINT")?;
        let t = thread::create(&mut root.slots, "bench-faulter", PRIORITY, body, &[snd, s.pair])?;
        let r = (|| {
            t.process.set_fault_handler(snd).ctx("SET_FAULT_HANDLER")?;
            let buf = keep_rt::ipc_buffer();
            buf.set_recv_slots(&[ret]);
            t.process.start().ctx("START")?;
            let next = Tag::new(0).with_slots(1);
            let mut m = recv(next, 0);
            loop {
                m.result().ctx("receiving a fault")?;
                match m.tag.label() {
                    label::EXCEPTION => {
                        if let Err(e) = on_fault(&m) {
                            let _ = Return(ret).reply(Tag::new(reply::STOP), [0; 4]);
                            return Err(e);
                        }
                        m = Return(ret).reply_recv(Tag::new(reply::RESUME).with_slots(1), [0; 4], 0);
                    }
                    DONE => {
                        let code = m.words[0];
                        Return(ret).reply(Tag::new(0), [0; 4]).ctx("answering DONE")?;
                        if code != 0 {
                            return Err(alloc::format!("the faulting thread failed ({code})"));
                        }
                        break;
                    }
                    l => return Err(alloc::format!("unexpected message label {l:#x}")),
                }
            }
            let mut runs = [0u64; RUNS];
            for (r, v) in runs.iter_mut().zip(SAMPLES[1..].iter()) {
                *r = v.load(SeqCst);
            }
            Ok(Runs(runs))
        })();
        t.kill(&mut root.slots);
        r
    })();
    for x in [snd, ret] {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    r
}

fn page_fault(root: &mut Root, s: &mut Suite) -> BenchResult {
    let page = root.slots.alloc().ok_or("no free slot")?;
    let r = MEMORY.retype(ty::PAGE, page).ctx("RETYPE").and_then(|_| {
        handled(root, s, page_faulter, |m| {
            if m.words[0] != 14 || m.words[2] != PF_VADDR {
                return Err(alloc::format!("unexpected fault {:#x?}", m.words));
            }
            SELF_ASPACE
                .map(page, PF_VADDR, rights::READ | rights::WRITE)
                .ctx("MAP")
        })
    });
    let _ = SELF_ASPACE.unmap(PF_VADDR);
    let _ = MEMORY.reclaim(page);
    let _ = SELF_ASPACE.delete_cap(page);
    root.slots.free(page);
    s.report("fault.page.user_pager", "instructions", r?);
    Ok(())
}

fn exception(root: &mut Root, s: &mut Suite) -> BenchResult {
    let runs = handled(root, s, divide_faulter, |m| {
        if m.words[0] != 0 {
            return Err(alloc::format!("unexpected exception {:#x?}", m.words));
        }
        DIVISOR.store(1, SeqCst);
        Ok(())
    })?;
    s.report("fault.exception.handler", "instructions", runs);
    Ok(())
}

/// The kpager: answers KMEM calls by donating the frames asked for to the
/// account at words[1]; words[0] is its receive slot.
fn kpager(a: &Args) -> u64 {
    let [ret, account, ..] = a.words;
    a.buf().set_recv_slots(&[ret]);
    let next = Tag::new(0).with_slots(1);
    let mut m = recv(next, 0);
    loop {
        if m.err != 0 || m.tag.label() != label::KMEM {
            m = recv(next, 0);
            continue;
        }
        let _ = MEMORY.donate(account, m.words[0].max(1));
        m = Return(ret).reply_recv(next, [0; 4], 0);
    }
}

/// CREATE_WRAPPER on an account with a frame to spare, against the same on
/// an empty account whose kpager donates the frame.  Between timed
/// operations (untimed): the wrapper is destroyed, its slot emptied, and
/// for the fault case the frame reclaimed so that the account is dry again.
fn kmem(root: &mut Root, s: &mut Suite) -> BenchResult {
    let mut sl = [0u64; 4];
    for (i, x) in sl.iter_mut().enumerate() {
        *x = match root.slots.alloc() {
            Some(v) => v,
            None => {
                for &y in &sl[..i] {
                    root.slots.free(y);
                }
                return Err("no free slot".into());
            }
        };
    }
    let [acct, ret, snd, dest] = sl;
    let a = Account(acct);
    let r = (|| -> BenchResult<_> {
        MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        let t = thread::spawn(&mut root.slots, "bench-kpager", PRIORITY, kpager, &[ret, acct])?;
        let r = (|| {
            t.process.mint(snd, 0x4b4d, 0).ctx("MINT")?;
            a.set_kpager(snd).ctx("SET_KPAGER")?;
            let pair = s.pair;
            let op = |dry: bool| -> BenchResult<u64> {
                if dry {
                    let (free, _) = a.info().ctx("ACCOUNT.INFO")?;
                    if free > 0 {
                        a.reclaim(slot::MEMORY, free).ctx("RECLAIM")?;
                    }
                } else if a.info().ctx("ACCOUNT.INFO")?.0 == 0 {
                    MEMORY.donate(acct, 1).ctx("DONATE")?;
                }
                let t0 = tsc();
                let e = black_box(a.create_wrapper(slot::TIMER, dest, rights::READ));
                let t1 = tsc();
                e.ctx("CREATE_WRAPPER")?;
                a.destroy(dest).ctx("DESTROY")?;
                SELF_ASPACE.delete_cap(dest).ctx("DELETE_CAP")?;
                Ok((t1 - t0).saturating_sub(pair))
            };
            let batch = |dry: bool| -> BenchResult<u64> {
                let mut sum = 0;
                for _ in 0..KMEM_OPS {
                    sum += op(dry)?;
                }
                Ok(sum / KMEM_OPS)
            };
            batch(false)?;
            batch(true)?;
            let (mut base, mut total, mut diff) = ([0; RUNS], [0; RUNS], [0; RUNS]);
            for i in 0..RUNS {
                base[i] = batch(false)?;
                total[i] = batch(true)?;
                diff[i] = total[i].saturating_sub(base[i]);
            }
            let _ = a.set_kpager(0);
            Ok((base, total, diff))
        })();
        t.kill(&mut root.slots);
        if let Ok((free, _)) = a.info() {
            if free > 0 {
                let _ = a.reclaim(slot::MEMORY, free);
            }
        }
        r
    })();
    for x in sl {
        let _ = SELF_ASPACE.delete_cap(x);
        root.slots.free(x);
    }
    let (base, total, diff) = r?;
    s.report("kmem.fault.baseline", "instructions", Runs(base));
    s.report("kmem.fault.total", "instructions", Runs(total));
    s.report("kmem.fault", "instructions", Runs(diff));
    Ok(())
}

/// Growing a heap by one page: RETYPE a page, MAP it read-write at the next
/// address and write to it.  After each batch (untimed) the pages are
/// unmapped and given back to the pool (MEMORY.RECLAIM) and the same
/// addresses used again, so the page tables exist after the warm-up.
fn heap_grow(root: &mut Root, s: &mut Suite) -> BenchResult {
    let mut slots = [0u64; HEAP_PAGES as usize];
    for i in 0..slots.len() {
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
    let pair = s.pair;
    let batch = || -> BenchResult<u64> {
        let mut sum = 0;
        let mut r = Ok(());
        for (i, &sl) in slots.iter().enumerate() {
            let va = HEAP_VADDR + i as u64 * 4096;
            let t0 = tsc();
            let e = MEMORY
                .retype(ty::PAGE, sl)
                .and_then(|_| SELF_ASPACE.map(sl, va, rights::READ | rights::WRITE));
            if e.is_ok() {
                // SAFETY: just mapped read-write at va; nothing else uses
                // this range.
                unsafe { core::ptr::write_volatile(va as *mut u64, i as u64) };
            }
            let t1 = tsc();
            sum += (t1 - t0).saturating_sub(pair);
            if e.is_err() {
                r = e.ctx("RETYPE and MAP");
                break;
            }
        }
        for (i, &sl) in slots.iter().enumerate() {
            let _ = SELF_ASPACE.unmap(HEAP_VADDR + i as u64 * 4096);
            let _ = MEMORY.reclaim(sl);
            let _ = SELF_ASPACE.delete_cap(sl);
        }
        r.map(|_| sum / HEAP_PAGES)
    };
    let r = (|| -> BenchResult<Runs> {
        batch()?;
        let mut runs = [0u64; RUNS];
        for r in runs.iter_mut() {
            *r = batch()?;
        }
        Ok(Runs(runs))
    })();
    for x in slots {
        root.slots.free(x);
    }
    s.report("mem.heap_grow", "instructions", r?);
    Ok(())
}

pub fn run(root: &mut Root, s: &mut Suite) {
    super::run_parts(root, s, &[
        ("fault.page.user_pager", page_fault),
        ("fault.exception.handler", exception),
        ("kmem.fault", kmem),
        ("mem.heap_grow", heap_grow),
    ]);
}
