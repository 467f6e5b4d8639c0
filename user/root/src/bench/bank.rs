//! Space banks and constructors (docs/space-banks.md): an allocation, the
//! destruction of a bank per object it held, and a process from a
//! constructor to its end, against the root task's own loader.  The bank
//! and constructor servers are started once and kept (`Kept`).

use keep_abi::{SELF_ASPACE, slot};
use keep_constructor::Constructor;
use keep_loader::{Grant, Loader, Spec};
use keep_spacebank::Bank;

use super::{BenchResult, RUNS, Runs, Suite, tsc};
use crate::Root;

/// Pages per bank destroyed in `bank.destroy.per_object`.
const OBJECTS: u64 = 64;
/// Operations per sampled run of the allocation.
const ALLOCS: u64 = 64;
/// hello's arg0 that makes it end at once.
const EMPTY: u64 = 5;

/// The kept servers, started on first use; the prime bank has 2048 frames.
fn servers(root: &mut Root) -> BenchResult<(Bank, Constructor)> {
    if root.bench.bank.is_none() {
        let img = root.image.as_ref().ok_or("no boot image")?;
        let elf = |n: &str| img.find(n).map(|e| e.data).ok_or(alloc::format!("no {n} in the boot image"));
        let (bank_elf, ctor_elf, hello) = (elf("spacebank")?, elf("constructor")?, elf("hello")?);
        let b = keep_spacebank::Server::spawn(&mut root.slots, bank_elf, slot::MEMORY, 2048)?;
        let c = keep_constructor::Server::spawn(&mut root.slots, ctor_elf, b.prime.0)?;
        let (scratch, dest) = (root.slots.alloc().ok_or("no slot")?, root.slots.alloc().ok_or("no slot")?);
        let ctor = c.meta.build("hello", hello, &[], scratch, dest).map_err(|e| alloc::format!("{e}"))?;
        root.slots.free(scratch);
        root.bench.bank = Some((b, c, ctor));
    }
    let (b, _, ctor) = root.bench.bank.as_ref().expect("started");
    Ok((b.prime, *ctor))
}

fn err(e: impl core::fmt::Display) -> alloc::string::String {
    alloc::format!("{e}")
}

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
    let (prime, ctor) = servers(root)?;
    let pair = s.pair;
    let (sub_slot, obj) = (root.slots.alloc().ok_or("no slot")?, root.slots.alloc().ok_or("no slot")?);
    let r = (|| {
        if s.wants("bank.alloc.page") {
            // One ALLOC_PAGE call (the server's RETYPE and the reply with
            // the capability); the FREE after each is not counted.
            let sub = prime.create_bank(ALLOCS + 1, sub_slot).map_err(err)?;
            let mut runs = [0u64; RUNS + 1];
            for r in runs.iter_mut() {
                let mut sum = 0;
                for _ in 0..ALLOCS {
                    let t0 = tsc();
                    let h = sub.alloc_page(obj);
                    let t1 = tsc();
                    let h = h.map_err(err)?;
                    sum += (t1 - t0).saturating_sub(pair);
                    sub.free(h).map_err(err)?;
                    SELF_ASPACE.delete_cap(obj).map_err(err)?;
                }
                *r = sum / ALLOCS;
            }
            sub.destroy().map_err(err)?;
            let _ = SELF_ASPACE.delete_cap(sub_slot);
            s.report("bank.alloc.page", "instructions", Runs(runs[1..].try_into().expect("RUNS")));
        }
        if s.wants("bank.destroy.per_object") {
            // DESTROY of a bank holding OBJECTS pages (mapped nowhere:
            // each is one MEMORY.REVOKE that finds no mapping), per page.
            let mut runs = [0u64; RUNS + 1];
            for r in runs.iter_mut() {
                let sub = prime.create_bank(OBJECTS, sub_slot).map_err(err)?;
                for _ in 0..OBJECTS {
                    sub.alloc_page(obj).map_err(err)?;
                    SELF_ASPACE.delete_cap(obj).map_err(err)?;
                }
                let t0 = tsc();
                let d = sub.destroy();
                let t1 = tsc();
                d.map_err(err)?;
                SELF_ASPACE.delete_cap(sub_slot).map_err(err)?;
                *r = (t1 - t0).saturating_sub(pair) / OBJECTS;
            }
            s.report("bank.destroy.per_object", "instructions", Runs(runs[1..].try_into().expect("RUNS")));
        }
        Ok(())
    })();
    let r2 = if r.is_ok() { processes(root, s, prime, ctor, sub_slot, obj) } else { Ok(()) };
    root.slots.free(sub_slot);
    root.slots.free(obj);
    r.and(r2)
}

/// `proc.create.constructor`: INSTANTIATE (a sub-bank, an account, the
/// program loaded page by page from the bank, started), the instance runs
/// to its end (hello's empty mode), WAIT, and its bank destroyed.
/// `proc.create.loader`: the same program loaded by the root task itself
/// (its pool and account), started, waited for and destroyed.
fn processes(root: &mut Root, s: &mut Suite, prime: Bank, ctor: Constructor, p: u64, b: u64) -> BenchResult {
    let pair = s.pair;
    if s.wants("proc.create.constructor") {
        let mut runs = [0u64; RUNS + 1];
        for r in runs.iter_mut() {
            let t0 = tsc();
            let inst = ctor.instantiate(prime, 400, 16, EMPTY, p, b).map_err(err)?;
            let st = inst.reap().map_err(err)?;
            let t1 = tsc();
            if st.code != 0 {
                return Err(alloc::format!("the instance ended {st}"));
            }
            *r = (t1 - t0).saturating_sub(pair);
        }
        s.report("proc.create.constructor", "instructions", Runs(runs[1..].try_into().expect("RUNS")));
    }
    if s.wants("proc.create.loader") {
        let img = root.image.as_ref().ok_or("no boot image")?;
        let hello = img.find("hello").ok_or("no hello")?.data;
        let grants: [Grant; 0] = [];
        let spec = Spec { name: "hello", elf: hello, arg0: EMPTY, arg1: 0, grants: &grants, blob: None };
        let mut runs = [0u64; RUNS + 1];
        for r in runs.iter_mut() {
            let t0 = tsc();
            let mut loader = Loader::new(&mut root.slots);
            let child = loader.load(&spec).map_err(err)?;
            let st = child.process.start().and_then(|_| child.process.wait());
            loader.destroy(child).map_err(err)?;
            let t1 = tsc();
            st.map_err(err)?;
            *r = (t1 - t0).saturating_sub(pair);
        }
        s.report("proc.create.loader", "instructions", Runs(runs[1..].try_into().expect("RUNS")));
    }
    Ok(())
}
