//! Capability lookup in a sparse against a dense capability space.
//!
//! COUNT copies of the kernel capability are placed twice in the root
//! task's capability space: *sparse*, each in a cappage of its own mapped
//! (MAP_CAPPAGE) at a pseudo-random cappage-aligned address in
//! [SPARSE_LOW, 2^32) and at a pseudo-random slot within it; and *dense*,
//! packed into consecutive slots from DENSE_BASE.  One batch invokes
//! KERNEL.INFO(VERSION) through all COUNT copies in the same fixed
//! pseudo-random order for both, so both touch the same number of
//! capabilities, cappages aside.  The layout is built once and kept for
//! later runs of the shell's `bench`.

use alloc::collections::BTreeSet;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, Error, MEMORY, SELF_ASPACE, info, invoke_raw, layout, method, slot, ty};
use keep_rt::println;

use super::{BenchResult, Ctx, Suite};
use crate::Root;

/// Capabilities in each layout.
pub const COUNT: usize = 10_000;
/// The first slot of the dense layout.
const DENSE_BASE: u64 = 0x0200_0000;
/// Slots that hold the capabilities of the sparse layout's cappages.
const HOLD_BASE: u64 = 0x0300_0000;
/// The sparse cappages lie at or above this address (clear of the slot
/// pool, the dense layout and the holding slots).
const SPARSE_LOW: u64 = 0x0400_0000;
const CAPPAGE: u64 = layout::CAPPAGE_SLOTS;

/// The two layouts, each as the capability addresses in visiting order.
pub struct LookupSpace {
    sparse: Vec<u64>,
    dense: Vec<u64>,
}

/// xorshift64: a fixed pseudo-random sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Runs `f`; when it fails with NO_MEMORY, gives the root's account more
/// frames from the pool and tries once more (the segment's page tables come
/// from the account).
fn with_kmem(mut f: impl FnMut() -> keep_abi::Result<()>) -> keep_abi::Result<()> {
    match f() {
        Err(Error::NO_MEMORY) => {
            MEMORY.donate(slot::ACCOUNT, 1024)?;
            f()
        }
        r => r,
    }
}

/// Maps `n` fresh cappages at `base`, `base + 256`, ..., their own
/// capabilities in slots of the root's pool.
fn map_region(root: &mut Root, base: u64, n: u64) -> BenchResult {
    for i in 0..n {
        let cp = root.slots.alloc().ok_or("no free slot")?;
        MEMORY.retype(ty::CAPPAGE, cp).ctx("RETYPE CAPPAGE")?;
        with_kmem(|| SELF_ASPACE.map_cappage(cp, base + i * CAPPAGE)).ctx("MAP_CAPPAGE")?;
    }
    Ok(())
}

fn build(root: &mut Root) -> BenchResult<LookupSpace> {
    let pages = (COUNT as u64).div_ceil(CAPPAGE);
    map_region(root, DENSE_BASE, pages)?;
    map_region(root, HOLD_BASE, pages)?;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let lowest = SPARSE_LOW / CAPPAGE;
    let span = layout::CAP_SPACE_SLOTS / CAPPAGE - lowest;
    let mut used = BTreeSet::new();
    let mut sparse = Vec::with_capacity(COUNT);
    let mut dense = Vec::with_capacity(COUNT);
    for i in 0..COUNT as u64 {
        let page = loop {
            let p = (lowest + rng.below(span)) * CAPPAGE;
            if used.insert(p) {
                break p;
            }
        };
        let hold = HOLD_BASE + i;
        MEMORY.retype(ty::CAPPAGE, hold).ctx("RETYPE CAPPAGE")?;
        with_kmem(|| SELF_ASPACE.map_cappage(hold, page)).ctx("MAP_CAPPAGE (sparse)")?;
        let at = page + rng.below(CAPPAGE);
        SELF_ASPACE.copy_cap(slot::KERNEL, at, 0).ctx("COPY_CAP (sparse)")?;
        sparse.push(at);
        SELF_ASPACE
            .copy_cap(slot::KERNEL, DENSE_BASE + i, 0)
            .ctx("COPY_CAP (dense)")?;
        dense.push(DENSE_BASE + i);
    }
    // One fixed visiting order (Fisher-Yates), the same for both.
    let mut order: Vec<usize> = (0..COUNT).collect();
    for i in (1..COUNT).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Ok(LookupSpace {
        sparse: order.iter().map(|&i| sparse[i]).collect(),
        dense: order.iter().map(|&i| dense[i]).collect(),
    })
}

pub fn run(root: &mut Root, s: &mut Suite) {
    if !s.wants_any("cap.lookup") {
        return;
    }
    if root.bench.lookup.is_none() {
        let (acct0, _) = ACCOUNT.info().unwrap_or((0, 0));
        let pool0 = MEMORY.free().unwrap_or(0);
        println!("bench: building the sparse and dense capability layouts ({COUNT} each)");
        match build(root) {
            Ok(l) => root.bench.lookup = Some(l),
            Err(e) => {
                s.fail("cap.lookup", &e);
                return;
            }
        }
        let (acct1, _) = ACCOUNT.info().unwrap_or((0, 0));
        let pool1 = MEMORY.free().unwrap_or(0);
        println!(
            "bench: layouts built: {} frames from the pool, account free {acct0} -> {acct1}",
            pool0.saturating_sub(pool1)
        );
    }
    let l = root.bench.lookup.as_ref().unwrap();
    for (name, addrs) in [("cap.lookup.sparse", &l.sparse), ("cap.lookup.dense", &l.dense)] {
        if !s.wants(name) {
            continue;
        }
        if let Some(&a) = addrs.iter().find(|&&a| info_via(a) != 0) {
            s.fail(name, &alloc::format!("invoking slot {a:#x} failed"));
            continue;
        }
        // One operation of the batch is one pass over all COUNT: the
        // figure is divided by COUNT below.
        let runs = s.measure(1, || {
            for &a in addrs.iter() {
                core::hint::black_box(info_via(a));
            }
        });
        let empty = s.measure(1, || {
            for &a in addrs.iter() {
                core::hint::black_box(a);
            }
        });
        let loop_cost = empty.median();
        let mut per = runs;
        for r in per.0.iter_mut() {
            *r = r.saturating_sub(loop_cost) / COUNT as u64;
        }
        s.report(name, "instructions", per);
    }
}

/// KERNEL.INFO(VERSION) through the capability at `a`; the error code.
#[inline(always)]
fn info_via(a: u64) -> u64 {
    invoke_raw(a, method::kernel::INFO, [info::VERSION, 0, 0, 0]).0
}
