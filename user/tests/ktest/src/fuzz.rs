//! The stateful capability fuzzer.  ktest keeps a pool of slots of its own
//! and fills them with objects it makes (pages, cappages, accounts,
//! address spaces, processes, senders, wrappers, DMA domains) by invoking
//! the kernel's methods with arguments drawn from what the pool holds now
//! and from edge values: each argument of a method (abi/keep.toml) has a
//! kind here, a capability of some type, an empty slot, a virtual address,
//! rights, a count.  It looks at the pool (IDENTIFY_CAP) every few
//! invocations to know which objects exist, calls KERNEL.CHECK_INVARIANTS
//! every CHECK_EVERY invocations and fails on any violation, and at the
//! end destroys everything it made and checks that the memory pool got
//! its frames back.
//!
//! What it invokes is confined to its own objects: the pool's slots,
//! KERNEL's read-only methods and SET_SEAL_KEY (refused: ktest's KERNEL
//! is read-only), MEMORY's RETYPE, FREE, CREATE_ACCOUNT and
//! DONATE (to its own accounts), and slot::MEMORY as the `memory`
//! argument.  A kpager it sets is removed at once (an empty account would
//! call it, and its processes never answer).  Senders are invoked in non-blocking SEND mode only, never
//! wrapped, and PROCESS.WAIT is made only on a process whose STATUS says
//! it has stopped, so nothing blocks ktest.  The processes it starts run
//! from random registers in zeroed memory and fault: that is expected.
//!
//! The guided run (FUZZ0003, the coverage build of the kernel only) makes
//! the same steps as programs: it keeps those that set a bit of the
//! kernel's edge bitmap (KERNEL.COVERAGE) no program set before and
//! mutates them (`guide`).
//!
//! Both take SEED and OPS; the kernel command line words `fuzzseed=X`
//! (hex or decimal), `fuzzops=N` and `fuzzruns=K` replace them (K runs with seeds X, X+1, ...: `make fuzz-long`, part of
//! `make test-long`); `fuzztrace=1` prints every invocation with its
//! result and a summary, `fuzztrace=2` each one before it too (to find an
//! invocation that does not return); `nofuzz` skips FUZZ0001.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{KERNEL, MEMORY, SELF_ASPACE, invoke_raw, layout, method, rights, slot, state, tag, ty};
use keep_rt::println;

use crate::{Ctx, Cx, TestResult};

pub const SEED: u64 = 0x4b45_4550_f022_0001;
pub const OPS: u64 = 20_000;
const CHECK_EVERY: u64 = 500;
const LOOK_EVERY: u64 = 8;
const POOL: usize = 48;
/// Where the fuzzer's address spaces map pages.
const ZONE: u64 = 0x0000_4000_0000_0000;

/// The type the fuzzer gives a slot whose object is gone.
const STALE: u64 = 0xff;

/// The type of the capability at `s`, STALE if its object is gone.
fn kind(s: u64) -> u64 {
    match SELF_ASPACE.identify_cap(s) {
        Ok(c) if c.live => c.ty,
        Ok(c) if c.ty != ty::NULL => STALE,
        _ => ty::NULL,
    }
}

/// How an argument is drawn.
#[derive(Clone, Copy)]
enum A {
    /// A capability of the fuzzer's of this type (sometimes another).
    Cap(u64),
    /// A capability the fuzzer may wrap (no sender, return or wrapper).
    Wrappable,
    /// An empty slot of the pool (sometimes a full one).
    Dest,
    /// slot::MEMORY.
    Mem,
    /// A slot address in the invoked address space's own capability space.
    TSlot,
    VAddr,
    Rights,
    Small,
    Prio,
    Word,
}

use A::*;

type Entry = (u64, u64, &'static [A]);

/// (type, method, argument kinds) for the methods the fuzzer makes on
/// its own objects; the argument names of abi/keep.toml in the comments.
#[rustfmt::skip]
const TABLE: &[Entry] = {
    use method::{account as ac, aspace as asp, dma_domain as dd, process as pr};
    &[
        // ACCOUNT
        (ty::ACCOUNT, ac::INFO, &[]),
        (ty::ACCOUNT, ac::SET_KPAGER, &[Cap(ty::SENDER)]),                     // sender
        (ty::ACCOUNT, ac::CREATE_ASPACE, &[Dest]),                             // dest
        (ty::ACCOUNT, ac::CREATE_PROCESS, &[Cap(ty::ASPACE), Dest]),           // aspace dest
        (ty::ACCOUNT, ac::CREATE_PROCESS, &[Cap(ty::ASPACE), Dest]),
        (ty::ACCOUNT, ac::CREATE_WRAPPER, &[Wrappable, Dest, Rights]),         // cap dest rights
        (ty::ACCOUNT, ac::DESTROY, &[Cap(ty::PROCESS)]),                       // object
        (ty::ACCOUNT, ac::DESTROY, &[Cap(ty::ASPACE)]),
        (ty::ACCOUNT, ac::DESTROY, &[Cap(ty::DMA_DOMAIN)]),
        (ty::ACCOUNT, ac::DESTROY, &[Cap(ty::WRAPPER)]),
        (ty::ACCOUNT, ac::RECLAIM, &[Mem, Small]),                             // memory frames
        (ty::ACCOUNT, ac::DESTROY_ALL, &[Mem]),                                // memory
        (ty::ACCOUNT, ac::REVOKE_TABLE, &[Cap(ty::ASPACE), VAddr, Small, Dest]), // aspace vaddr level dest
        (ty::ACCOUNT, ac::REVOKE_PROCESS, &[Cap(ty::PROCESS), Dest]),          // process dest
        (ty::ACCOUNT, ac::RESTORE_PROCESS, &[Cap(ty::PAGE)]),                  // page
        (ty::ACCOUNT, ac::REVOKE_CAP_TABLE, &[Cap(ty::ASPACE), TSlot, Small, Dest]), // aspace cap_addr level dest
        (ty::ACCOUNT, ac::CREATE_DMA_DOMAIN, &[Dest]),                         // dest
        // ASPACE (never ktest's own)
        (ty::ASPACE, asp::MAP, &[Cap(ty::PAGE), VAddr, Rights, Small]),        // page vaddr rights offset
        (ty::ASPACE, asp::MAP, &[Cap(ty::PAGE), VAddr, Rights, Small]),
        (ty::ASPACE, asp::UNMAP, &[VAddr]),                                    // vaddr
        (ty::ASPACE, asp::LOOKUP, &[VAddr]),                                   // vaddr
        (ty::ASPACE, asp::MAP_CAPPAGE, &[Cap(ty::CAPPAGE), TSlot]),            // cappage cap_addr
        (ty::ASPACE, asp::MAP_CAPPAGE, &[Cap(ty::CAPPAGE), TSlot]),
        (ty::ASPACE, asp::UNMAP_CAPPAGE, &[TSlot]),                            // cap_addr
        (ty::ASPACE, asp::INSERT_CAP, &[Cap(ty::NULL), TSlot, Rights]),        // src dest rights
        (ty::ASPACE, asp::INSERT_CAP, &[Cap(ty::NULL), TSlot, Rights]),
        (ty::ASPACE, asp::EXTRACT_CAP, &[TSlot, Dest, Rights]),                // src dest rights
        (ty::ASPACE, asp::DELETE_CAP, &[TSlot]),                               // slot
        (ty::ASPACE, asp::COPY_CAP, &[TSlot, TSlot, Rights]),                  // src dest rights
        (ty::ASPACE, asp::MOVE_CAP, &[TSlot, TSlot]),                          // src dest
        (ty::ASPACE, asp::IDENTIFY_CAP, &[TSlot]),                             // slot
        (ty::ASPACE, asp::COMPARE_CAP, &[TSlot, TSlot]),                       // a b
        // PROCESS (never ktest's own; WAIT apart)
        (ty::PROCESS, pr::SET_REGS, &[VAddr, VAddr, Word, Word]),              // rip rsp rdi rsi
        (ty::PROCESS, pr::START, &[]),
        (ty::PROCESS, pr::STOP, &[]),
        (ty::PROCESS, pr::STATUS, &[]),
        (ty::PROCESS, pr::EXIT, &[Word]),                                      // code
        (ty::PROCESS, pr::YIELD, &[]),
        (ty::PROCESS, pr::SET_NAME, &[Word, Word]),                            // name_lo name_hi
        (ty::PROCESS, pr::SET_PRIORITY, &[Prio]),                              // priority
        (ty::PROCESS, pr::READ_REGS, &[]),
        (ty::PROCESS, pr::WRITE_REGS, &[]),
        (ty::PROCESS, pr::READ_VECTOR_STATE, &[]),
        (ty::PROCESS, pr::WRITE_VECTOR_STATE, &[]),
        (ty::PROCESS, pr::SET_IPC_BUFFER, &[VAddr]),                           // vaddr
        (ty::PROCESS, pr::SET_FAULT_HANDLER, &[Cap(ty::SENDER)]),              // sender
        (ty::PROCESS, pr::SET_EMULATION, &[Small]),                            // on
        (ty::PROCESS, pr::MINT, &[Dest, Word, Rights]),                        // dest payload rights
        (ty::PROCESS, pr::MINT, &[Dest, Word, Rights]),
        // DMA_DOMAIN (no DEVMEM: ATTACH and DETACH get other types)
        (ty::DMA_DOMAIN, dd::INFO, &[]),
        (ty::DMA_DOMAIN, dd::MAP, &[Cap(ty::PAGE), VAddr, Rights]),            // page dev_addr rights
        (ty::DMA_DOMAIN, dd::UNMAP, &[VAddr]),                                 // dev_addr
        (ty::DMA_DOMAIN, dd::LOOKUP, &[VAddr]),                                // dev_addr
        (ty::DMA_DOMAIN, dd::ATTACH, &[Cap(ty::PAGE), Small]),                 // devmem offset
        (ty::DMA_DOMAIN, dd::DETACH, &[Cap(ty::PAGE), Small]),                 // devmem offset
        (ty::DMA_DOMAIN, dd::SET_FAULT_HANDLER, &[Cap(ty::SENDER)]),           // sender
        (ty::DMA_DOMAIN, dd::FAULTS, &[]),
        (ty::DMA_DOMAIN, dd::HOLD, &[VAddr, Word, Rights]),                    // dev_addr tag rights
        (ty::DMA_DOMAIN, dd::RELEASE, &[Word, Small]),                         // tag count
    ]
};

/// Methods on slot::MEMORY and slot::KERNEL the fuzzer makes.
#[rustfmt::skip]
const GLOBAL: &[(u64, u64, &[A])] = &[
    (slot::MEMORY, method::memory::RETYPE, &[Small, Dest]),                    // type dest
    (slot::MEMORY, method::memory::RETYPE, &[Small, Dest]),
    (slot::MEMORY, method::memory::FREE, &[]),
    (slot::MEMORY, method::memory::CREATE_ACCOUNT, &[Dest]),                   // dest
    (slot::MEMORY, method::memory::DONATE, &[Cap(ty::ACCOUNT), Small]),        // account frames
    (slot::KERNEL, method::kernel::INFO, &[Small]),                            // key
    (slot::KERNEL, method::kernel::MEMMAP, &[Small]),                          // index
    (slot::KERNEL, method::kernel::PROCESS_INFO, &[Word]),                     // index
    (slot::KERNEL, method::kernel::CHECK_PAGING, &[Small]),                    // check
    (slot::KERNEL, method::kernel::INTERRUPT_STATS, &[]),
    (slot::KERNEL, method::kernel::SET_SEAL_KEY, &[Word]),                     // key (NO_RIGHTS)
];

use keep_stress::Rng;

/// Where the fuzzer's choices come from: a generator, or (the guided
/// fuzzer, FUZZ0003) first the recorded draws of an invocation to replay,
/// each draw also recorded when `recording`.  An invocation is then the
/// list of draws its step made: replaying it makes the same choices on
/// the same state, changing one draw changes one choice (an argument, the
/// method, the target).
pub struct Draws {
    rng: Rng,
    replay: Vec<u64>,
    pos: usize,
    rec: Vec<u64>,
    recording: bool,
}

impl Draws {
    fn new(seed: u64) -> Self {
        Draws { rng: Rng(seed | 1), replay: Vec::new(), pos: 0, rec: Vec::new(), recording: false }
    }

    fn next(&mut self) -> u64 {
        let x = match self.replay.get(self.pos) {
            Some(&x) => {
                self.pos += 1;
                x
            }
            None => self.rng.next(),
        };
        if self.recording {
            self.rec.push(x);
        }
        x
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

const EDGE: &[u64] = &[
    0,
    1,
    u64::MAX,
    1 << 47,
    0xffff_8000_0000_0000,
    0xffff_ffff_8000_0000,
    4095,
    4096,
    layout::CAP_SPACE_SLOTS - 1,
    layout::CAP_SPACE_SLOTS,
    0x8000_0000_0000_0000,
];

pub(crate) struct Fuzz {
    rng: Draws,
    pool: [u64; POOL],
    types: [u64; POOL],
    by_err: [u64; 20],
    ops: u64,
    /// Steps since the pool was last reset (looks fall on its multiples
    /// of LOOK_EVERY, so that a program replays with its looks in place).
    steps: u64,
    trace: bool,
    trace_before: bool,
    /// The page of the last process exported (REVOKE_PROCESS).
    last_export: u64,
}

impl Fuzz {
    fn look(&mut self) {
        for i in 0..POOL {
            self.types[i] = kind(self.pool[i]);
        }
        // Keep a few slots empty: take ones whose object is gone, else
        // processes, address spaces, senders, wrappers and DMA domains
        // (their accounts still hold them).
        const SPARE: usize = 8;
        for _ in 0..POOL {
            if self.count_of(&[ty::NULL]) >= SPARE {
                break;
            }
            let s = match self.of_type(STALE) {
                Some(s) => s,
                None => match self.of_types(&[ty::PROCESS, ty::ASPACE, ty::SENDER, ty::WRAPPER, ty::DMA_DOMAIN]) {
                    Some(s) => s,
                    None => break,
                },
            };
            let _ = SELF_ASPACE.delete_cap(s);
            for i in 0..POOL {
                if self.pool[i] == s {
                    self.types[i] = ty::NULL;
                }
            }
        }
    }

    fn count_of(&self, ts: &[u64]) -> usize {
        self.types.iter().filter(|t| ts.contains(t)).count()
    }

    fn of_types(&mut self, ts: &[u64]) -> Option<u64> {
        let n = self.count_of(ts) as u64;
        if n == 0 {
            return None;
        }
        let k = self.rng.below(n) as usize;
        let i = (0..POOL).filter(|&i| ts.contains(&self.types[i])).nth(k)?;
        Some(self.pool[i])
    }

    /// A pool slot holding an object with methods (sometimes any slot).
    fn target(&mut self) -> u64 {
        const ACTIVE: &[u64] = &[ty::ACCOUNT, ty::ASPACE, ty::PROCESS, ty::DMA_DOMAIN, ty::SENDER, ty::WRAPPER];
        if self.rng.chance(90) {
            // A type first, then an object of it: copies of one type do
            // not crowd out the others.
            let present: Vec<u64> = ACTIVE.iter().copied().filter(|t| self.types.contains(t)).collect();
            if !present.is_empty() {
                let t = self.rng.pick(&present);
                if let Some(s) = self.of_type(t) {
                    return s;
                }
            }
        }
        self.any_slot()
    }

    /// The fuzzer's own capability space, pool slots only: take a
    /// page or cappage back (MEMORY.REVOKE or RECLAIM), delete, copy or
    /// move a capability.  The last capabilities of pages, cappages and
    /// accounts stay in the pool (the clean-up gives their frames back
    /// through them): those are copied, never deleted.
    fn own_space(&mut self) {
        let s = self.any_slot();
        let d = self.dest();
        let (e, _) = match (kind(s), self.rng.below(4)) {
            (ty::PAGE | ty::CAPPAGE, 0) => self.call(slot::MEMORY, method::memory::RECLAIM, [s, 0, 0, 0]),
            (ty::PAGE | ty::CAPPAGE, 1) => self.call(slot::MEMORY, method::memory::REVOKE, [s, 0, 0, 0]),
            (ty::PAGE | ty::CAPPAGE | ty::ACCOUNT, _) | (_, 2) if self.count_of(&[ty::NULL]) < 4 => (0, [0; 4]),
            (ty::PAGE | ty::CAPPAGE | ty::ACCOUNT, _) | (_, 2) => {
                let r = self.arg(Rights);
                self.call(slot::SELF_ASPACE, method::aspace::COPY_CAP, [s, d, r, 0])
            }
            (_, 3) => self.call(slot::SELF_ASPACE, method::aspace::MOVE_CAP, [s, d, 0, 0]),
            _ => self.call(slot::SELF_ASPACE, method::aspace::DELETE_CAP, [s, 0, 0, 0]),
        };
        self.count(e);
    }

    fn of_type(&mut self, t: u64) -> Option<u64> {
        self.of_types(&[t])
    }

    fn any_slot(&mut self) -> u64 {
        self.pool[self.rng.below(POOL as u64) as usize]
    }

    fn cap(&mut self, t: u64) -> u64 {
        match self.rng.below(100) {
            0..=79 if t != ty::NULL => self.of_type(t).unwrap_or_else(|| self.any_slot()),
            0..=89 => self.any_slot(),
            _ => self.rng.pick(&[0, layout::CAP_SPACE_SLOTS - 1, layout::CAP_SPACE_SLOTS, u64::MAX]),
        }
    }

    fn wrappable(&mut self) -> u64 {
        for _ in 0..4 {
            let s = self.any_slot();
            // Not a notification either: its WAIT through a wrapper would block.
            if !matches!(kind(s), ty::SENDER | ty::RETURN | ty::WRAPPER | ty::NOTIFICATION | STALE) {
                return s;
            }
        }
        self.of_type(ty::PAGE).unwrap_or(0)
    }

    fn dest(&mut self) -> u64 {
        if self.rng.chance(85) {
            if let Some(s) = self.of_type(ty::NULL) {
                return s;
            }
            // None empty: empty a slot whose object is gone.
            if let Some(s) = self.of_type(STALE) {
                let _ = SELF_ASPACE.delete_cap(s);
                self.types.iter_mut().zip(self.pool.iter()).filter(|(_, p)| **p == s).for_each(|(t, _)| *t = ty::NULL);
                return s;
            }
        }
        self.any_slot()
    }

    fn word(&mut self) -> u64 {
        match self.rng.below(10) {
            0..=3 => self.rng.below(16),
            4..=6 => self.rng.pick(EDGE),
            _ => self.rng.next(),
        }
    }

    fn arg(&mut self, a: A) -> u64 {
        match a {
            Cap(t) => self.cap(t),
            Wrappable => self.wrappable(),
            Dest => self.dest(),
            Mem => slot::MEMORY,
            TSlot => match self.rng.below(10) {
                0..=5 => self.rng.below(32),
                6..=7 => self.rng.below(4) * layout::CAPPAGE_SLOTS + self.rng.below(8),
                _ => self.rng.pick(EDGE),
            },
            VAddr => match self.rng.below(10) {
                0..=6 => ZONE + self.rng.below(16) * 4096,
                7 => ZONE + self.rng.below(4) * 0x20_0000 + self.rng.below(2) * 8,
                _ => self.rng.pick(EDGE),
            },
            Rights => match self.rng.below(10) {
                0..=6 => self.rng.below(rights::ALL + 1),
                7 => rights::ALL | rights::WEAK,
                _ => self.word(),
            },
            Small => {
                if self.rng.chance(85) {
                    self.rng.below(8)
                } else {
                    self.rng.pick(EDGE)
                }
            }
            Prio => {
                if self.rng.chance(85) {
                    1 + self.rng.below(12)
                } else {
                    self.rng.pick(&[0, 255, 256, u64::MAX])
                }
            }
            Word => self.word(),
        }
    }

    /// A loose invocation may take any word for a destination slot of
    /// ktest's: every word that names an empty slot of ktest's outside
    /// the pool becomes a pool slot, so that nothing lands there.
    fn confine(&mut self, w: &mut [u64; 4]) {
        for x in w.iter_mut() {
            if *x < layout::CAP_SPACE_SLOTS && !self.pool.contains(x) && kind(*x) == ty::NULL {
                *x = self.any_slot();
            }
        }
    }

    /// One invocation (printed with its result with fuzztrace=1, also
    /// before it with fuzztrace=2).
    fn call(&mut self, cap: u64, m: u64, w: [u64; 4]) -> (u64, [u64; 4]) {
        let k = if self.trace { kind(cap) } else { 0 };
        if self.trace_before {
            println!("fuzz: #{} {cap:#x} {} {m} {w:x?} ...", self.ops, keep_abi::type_name(k));
        }
        let r = invoke_raw(cap, m, w);
        if self.trace {
            println!("fuzz: #{} {cap:#x} {} {m} {w:x?} -> {}", self.ops, keep_abi::type_name(k), keep_abi::error_name(r.0));
        }
        r
    }

    fn count(&mut self, e: u64) {
        self.by_err[(e as usize).min(19)] += 1;
    }

    /// One invocation.
    fn step(&mut self) {
        if self.steps % LOOK_EVERY == 0 {
            self.look();
        }
        self.steps += 1;
        self.ops += 1;
        if self.rng.chance(12) {
            let (target, m, args) = self.rng.pick(GLOBAL);
            let mut w = [0u64; 4];
            for (i, &a) in args.iter().enumerate() {
                w[i] = self.arg(a);
            }
            if m == method::memory::RETYPE && self.rng.chance(90) {
                w[0] = self.rng.pick(&[ty::PAGE, ty::PAGE, ty::CAPPAGE]);
            }
            // At most 16 pages and cappages and 4 accounts: past that,
            // REVOKE a page instead, or skip.
            if m == method::memory::RETYPE && self.count_of(&[ty::PAGE, ty::CAPPAGE]) >= 16 {
                if let Some(p) = self.of_types(&[ty::PAGE, ty::CAPPAGE]) {
                    let (e, _) = self.call(slot::MEMORY, method::memory::REVOKE, [p, 0, 0, 0]);
                    self.count(e);
                    return;
                }
            }
            if m == method::memory::CREATE_ACCOUNT && self.count_of(&[ty::ACCOUNT]) >= 4 {
                return;
            }
            let (e, _) = self.call(target, m, w);
            self.count(e);
            return;
        }
        if self.rng.chance(6) {
            self.own_space();
            return;
        }
        if self.rng.chance(1) {
            // Let the processes it started run (and fault).
            let _ = keep_abi::TIMER.sleep(1);
            return;
        }
        let s = self.target();
        let t = kind(s);
        match t {
            ty::SENDER => {
                // Non-blocking SEND: a label, words and no capabilities.
                let label = self.rng.below(32);
                let t = keep_abi::Tag::new(label).with_mode(tag::MODE_SEND);
                let t = keep_abi::Tag(t.0 | tag::SEND_NONBLOCK);
                let w = [self.word(), self.word(), self.word(), self.word()];
                if self.trace {
                    println!("fuzz: #{} send {s:#x} tag {:#x} {w:x?}", self.ops, t.0);
                }
                let (e, _, _, _) = keep_abi::syscall(s, t.0, w, 0);
                self.count(e);
                return;
            }
            ty::PROCESS if self.rng.chance(5) => {
                // WAIT only on a process that has stopped for good.
                let (e, r) = invoke_raw(s, method::process::STATUS, [0; 4]);
                if e == 0 && matches!(r[0], state::EXITED | state::FAULTED) {
                    let (e, _) = self.call(s, method::process::WAIT, [0; 4]);
                    self.count(e);
                }
                return;
            }
            _ => {}
        }
        // A method of the slot's type; for a wrapper, an empty slot or a
        // page or cappage (which have no methods), of any type.
        let entries: Vec<&Entry> = TABLE.iter().filter(|e| e.0 == t).collect();
        // Loose: arguments made for another method (a wrapper's wrapped
        // type is not known), an edge value in place of one, a random
        // method number.
        let mut loose = entries.is_empty() || self.rng.chance(5);
        let (_, m, args) = if loose {
            self.rng.pick(TABLE)
        } else {
            *self.rng.pick(&entries)
        };
        let mut w = [0u64; 4];
        for (i, &a) in args.iter().enumerate() {
            w[i] = self.arg(a);
        }
        if self.rng.chance(3) {
            w[self.rng.below(4) as usize] = self.rng.pick(EDGE);
            loose = true;
        }
        let m = if self.rng.chance(2) {
            loose = true;
            self.rng.below(20)
        } else {
            m
        };
        if m == method::account::RESTORE_PROCESS && self.last_export != 0 && !loose && self.rng.chance(60) {
            w[0] = self.last_export;
        }
        if loose {
            self.confine(&mut w);
        }
        if matches!(t, ty::NOTIFICATION | ty::WRAPPER) && m == method::notification::WAIT {
            return; // blocks until a signal no one sends (a wrapper may stand for a notification)
        }
        if m == method::process::WAIT && t != ty::ACCOUNT && t != ty::ASPACE && t != ty::DMA_DOMAIN {
            return; // WAIT blocks until the process stops (the STATUS path above)
        }
        if m == method::account::DESTROY_ALL && t == ty::ACCOUNT && self.rng.chance(75) {
            return; // now and then: it takes every object of the account
        }
        let (e, _) = self.call(s, m, w);
        self.count(e);
        if m == method::account::REVOKE_PROCESS && e == 0 && !loose {
            self.last_export = w[1];
        }
        if m == method::account::SET_KPAGER && e == 0 && w[0] != 0 {
            // No kpager stays: an operation on an empty account would
            // call it, and the fuzzer's processes never answer.
            let (e, _) = self.call(s, m, [0; 4]);
            self.count(e);
        }
    }

    /// Destroys what the fuzzer made: every account's objects, then the
    /// accounts' frames go back to the pool and the slots are emptied.
    fn clean(&mut self) {
        self.look();
        for i in 0..POOL {
            if self.types[i] == ty::ACCOUNT {
                let a = self.pool[i];
                let _ = invoke_raw(a, method::account::DESTROY_ALL, [slot::MEMORY, 0, 0, 0]);
                if let Ok(r) = keep_abi::invoke(a, method::account::INFO, [0; 4]) {
                    let _ = invoke_raw(a, method::account::RECLAIM, [slot::MEMORY, r[0], 0, 0]);
                }
            }
        }
        // Every page and cappage the fuzzer made has a capability in the
        // pool (it never deletes the last one): REVOKE gives them back.
        for i in 0..POOL {
            if matches!(self.types[i], ty::PAGE | ty::CAPPAGE) {
                let _ = invoke_raw(slot::MEMORY, method::memory::REVOKE, [self.pool[i], 0, 0, 0]);
            }
        }
        for i in 0..POOL {
            if self.types[i] != ty::NULL {
                let _ = SELF_ASPACE.delete_cap(self.pool[i]);
                self.types[i] = ty::NULL;
            }
        }
        self.last_export = 0;
    }

    /// The guided fuzzer's starting state for every program: the pool
    /// emptied (as `clean`), then one object of each kind made in fixed
    /// slots (an account with frames, an address space, a process, two
    /// pages, a cappage, a sender, a wrapper, a DMA domain), so that a
    /// program replays on the same objects wherever it came from.
    fn reset(&mut self) {
        use method::account as ac;
        self.clean();
        let p = self.pool;
        let mem = slot::MEMORY;
        let _ = invoke_raw(mem, method::memory::CREATE_ACCOUNT, [p[0], 0, 0, 0]);
        let _ = invoke_raw(mem, method::memory::DONATE, [p[0], 64, 0, 0]);
        let _ = invoke_raw(p[0], ac::CREATE_ASPACE, [p[1], 0, 0, 0]);
        let _ = invoke_raw(p[0], ac::CREATE_PROCESS, [p[1], p[2], 0, 0]);
        let _ = invoke_raw(mem, method::memory::RETYPE, [ty::PAGE, p[3], 0, 0]);
        let _ = invoke_raw(mem, method::memory::RETYPE, [ty::PAGE, p[4], 0, 0]);
        let _ = invoke_raw(mem, method::memory::RETYPE, [ty::CAPPAGE, p[5], 0, 0]);
        let _ = invoke_raw(p[2], method::process::MINT, [p[6], 1, rights::ALL, 0]);
        let _ = invoke_raw(p[0], ac::CREATE_WRAPPER, [p[3], p[7], rights::ALL, 0]);
        let _ = invoke_raw(p[0], ac::CREATE_DMA_DOMAIN, [p[8], 0, 0, 0]);
        self.look();
        self.steps = 1;
    }
}

fn invariants(when: &str) -> TestResult {
    let (violations, checked) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(
        violations == 0 && checked > 0,
        "{when}: {violations} invariant violations in {checked} items"
    );
    Ok(())
}

/// Words of the coverage build's edge bitmap (KERNEL.COVERAGE's `bytes` / 8).
const MAP_WORDS: usize = 1024;

/// KERNEL.COVERAGE's scopes: the whole kernel, ktest's own system calls.
const WHOLE: u64 = 0;
const OWN: u64 = 1;

/// The kernel's edge bitmap into `map` (and emptied), its count of edges,
/// recording `scope` from then on; None in the default build (BAD_STATE).
fn coverage_take(map: &mut [u64], scope: u64) -> Result<Option<u64>, String> {
    match KERNEL.coverage(map.as_mut_ptr() as u64, (map.len() * 8) as u64, 1, scope) {
        Ok((edges, _)) => Ok(Some(edges)),
        Err(e) if e == keep_abi::Error::BAD_STATE => Ok(None),
        Err(e) => Err(format!("KERNEL.COVERAGE failed: {e}")),
    }
}

/// One run: `ops` invocations from `seed`, blind (FUZZ0001) or guided by
/// the coverage build's bitmap (FUZZ0003).  In the coverage build either
/// prints the kernel edges its invocations reached, recording only its
/// own system calls (scope OWN), and leaves the scope WHOLE.
pub fn run(cx: &mut Cx, seed: u64, ops: u64) -> TestResult {
    run_as(cx, seed, ops, false)
}

fn run_as(cx: &mut Cx, seed: u64, ops: u64, guided: bool) -> TestResult {
    let name = if guided { "fuzz-guided" } else { "fuzz" };
    println!("{name}: seed {seed:#x}, {ops} invocations");
    let mut map = alloc::vec![0u64; MAP_WORDS];
    let covered = coverage_take(&mut map, OWN)?.is_some();
    let free_before = MEMORY.free().ctx("FREE")?;
    let mut pool = [0u64; POOL];
    for p in pool.iter_mut() {
        *p = cx.slot()?;
    }
    let mut f = Fuzz {
        rng: Draws::new(seed),
        pool,
        types: [ty::NULL; POOL],
        by_err: [0; 20],
        ops: 0,
        steps: 0,
        trace: cmdline_word("fuzztrace=").is_some_and(|t| t > 0),
        trace_before: cmdline_word("fuzztrace=") == Some(2),
        last_export: 0,
    };
    let r = (|| -> TestResult {
        if guided {
            return guide(&mut f, seed, ops, &mut map);
        }
        while f.ops < ops {
            f.step();
            if f.ops % CHECK_EVERY == 0 {
                invariants(&format!("seed {seed:#x} after {} invocations", f.ops))?;
            }
        }
        if covered {
            let edges = coverage_take(&mut map, OWN)?.unwrap_or(0);
            println!("fuzz: seed {seed:#x}: {edges} kernel edges reached");
        }
        Ok(())
    })();
    f.clean();
    cx.drop_slots(&pool);
    if covered {
        KERNEL.coverage(0, 0, 0, WHOLE).ctx("COVERAGE(scope WHOLE)")?;
    }
    r?;
    invariants(&format!("seed {seed:#x} after the clean-up"))?;
    if f.trace {
        let ok: u64 = f.by_err[0];
        println!("fuzz: seed {seed:#x}: {ops} invocations, {ok} succeeded, errors by code {:?}", &f.by_err[1..]);
    }
    let free_after = MEMORY.free().ctx("FREE")?;
    ensure!(
        free_after == free_before,
        "seed {seed:#x}: the pool had {free_before} free frames before and {free_after} after the clean-up"
    );
    Ok(())
}

/// The guided fuzzer's programs: at most PROG_CALLS invocations, each the
/// draws of one step (Draws); at most CORPUS of them kept.
const PROG_CALLS: usize = 12;
const CORPUS: usize = 64;
/// Percent of fresh programs.
const FRESH: u64 = 33;
type Prog = Vec<Vec<u64>>;

impl Fuzz {
    /// One step from recorded draws (fresh ones past their end); the draws
    /// it made.
    fn replay(&mut self, draws: &[u64]) -> Vec<u64> {
        self.rng.replay.clear();
        self.rng.replay.extend_from_slice(draws);
        self.rng.pos = 0;
        self.rng.rec.clear();
        self.rng.recording = true;
        self.step();
        self.rng.recording = false;
        self.rng.replay.clear();
        core::mem::take(&mut self.rng.rec)
    }
}

/// A kept program and the edges its run set (bit numbers of the bitmap).
struct Kept {
    prog: Prog,
    edges: Vec<u16>,
}

/// How often the rarest edge of `k` has been set by the programs run:
/// the fewer, the more a program near it may find.
fn rarity(k: &Kept, hits: &[u32]) -> u32 {
    k.edges.iter().map(|&e| hits[e as usize]).min().unwrap_or(u32::MAX).max(1)
}

/// A program from the corpus, mutated one to three times: a draw changed
/// (to a random word or a neighbouring choice), an invocation inserted
/// (fresh draws), deleted or swapped with another, or the tail of another
/// program spliced on.  Now and then, or while the corpus is empty, a
/// fresh program.  The program mutated is drawn with a weight of one over
/// the number of programs that set its rarest edge.
fn next_prog(m: &mut Rng, corpus: &[Kept], hits: &[u32]) -> Prog {
    if corpus.is_empty() || m.chance(FRESH) {
        return alloc::vec![Vec::new(); 1 + m.below(PROG_CALLS as u64) as usize];
    }
    let w: Vec<u64> = corpus.iter().map(|k| (1u64 << 32) / rarity(k, hits) as u64).collect();
    let mut x = m.below(w.iter().sum::<u64>().max(1));
    let mut i = 0;
    while i + 1 < w.len() && x >= w[i] {
        x -= w[i];
        i += 1;
    }
    let mut p = corpus[i].prog.clone();
    for _ in 0..1 + m.below(3) {
        let n = p.len() as u64;
        match m.below(6) {
            0 | 1 => {
                let c = &mut p[m.below(n) as usize];
                if !c.is_empty() {
                    let j = m.below(c.len() as u64) as usize;
                    c[j] = if m.chance(50) { m.next() } else { c[j].wrapping_add(1 + m.below(3)) };
                }
            }
            2 if p.len() < PROG_CALLS => p.insert(m.below(n + 1) as usize, Vec::new()),
            3 if p.len() > 1 => {
                p.remove(m.below(n) as usize);
            }
            4 => p.swap(m.below(n) as usize, m.below(n) as usize),
            5 => {
                let o = &corpus[m.below(corpus.len() as u64) as usize].prog;
                p.truncate(m.below(n + 1) as usize);
                let from = m.below(o.len() as u64) as usize;
                p.extend(o[from..].iter().cloned());
                p.truncate(PROG_CALLS);
                if p.is_empty() {
                    p.push(Vec::new());
                }
            }
            _ => {}
        }
    }
    // Then fresh invocations on the state it leaves.
    for _ in 0..m.below(4) {
        if p.len() < PROG_CALLS {
            p.push(Vec::new());
        }
    }
    p
}

/// The guided loop: put the pool in its starting state (`reset`; not
/// with `fuzzreset=0`), run a program, take the bitmap of ktest's own
/// system calls (emptying it), keep the program (the draws it made) if it
/// set a bit no program set before.  The bitmap of the reset is thrown
/// away.  A full corpus drops the program whose rarest edge is the most
/// common.  Fails if the kernel has no bitmap.
fn guide(f: &mut Fuzz, seed: u64, ops: u64, map: &mut [u64]) -> TestResult {
    let mut m = Rng((seed ^ 0x6775_6964_6564_0003) | 1);
    let reset = cmdline_word("fuzzreset=") != Some(0);
    let mut corpus: Vec<Kept> = Vec::new();
    let mut seen = alloc::vec![0u64; MAP_WORDS];
    let mut hits = alloc::vec![0u32; MAP_WORDS * 64];
    let (mut programs, mut kept) = (0u64, 0u64);
    ensure!(coverage_take(map, OWN)?.is_some(), "KERNEL.COVERAGE: BAD_STATE, this is not the coverage build");
    while f.ops < ops {
        let prog = next_prog(&mut m, &corpus, &hits);
        if reset {
            f.reset();
            coverage_take(map, OWN)?;
        }
        let mut ran: Prog = Vec::new();
        for call in &prog {
            if f.ops >= ops {
                break;
            }
            ran.push(f.replay(call));
            if f.ops % CHECK_EVERY == 0 {
                invariants(&format!("seed {seed:#x} after {} invocations", f.ops))?;
            }
        }
        programs += 1;
        coverage_take(map, OWN)?;
        let mut new = 0;
        let mut edges: Vec<u16> = Vec::new();
        for (i, (s, &b)) in seen.iter_mut().zip(map.iter()).enumerate() {
            new += (b & !*s).count_ones();
            *s |= b;
            let mut x = b;
            while x != 0 {
                let e = i * 64 + x.trailing_zeros() as usize;
                hits[e] = hits[e].saturating_add(1);
                edges.push(e as u16);
                x &= x - 1;
            }
        }
        if new > 0 {
            kept += 1;
            if corpus.len() == CORPUS {
                let r: Vec<u32> = corpus.iter().map(|k| rarity(k, &hits)).collect();
                let worst = (0..r.len()).max_by_key(|&i| (r[i], core::cmp::Reverse(i))).unwrap_or(0);
                corpus.remove(worst);
            }
            corpus.push(Kept { prog: ran, edges });
        }
    }
    let edges: u32 = seen.iter().map(|w| w.count_ones()).sum();
    println!(
        "fuzz-guided: seed {seed:#x}: {programs} programs, {kept} kept (corpus {}), {edges} kernel edges reached",
        corpus.len()
    );
    Ok(())
}

/// FUZZ0003: the guided fuzzer, SEED and OPS or the command line's
/// fuzzseed=, fuzzops=, fuzzruns= (as FUZZ0001).  In the default build it
/// says so and passes (it needs the coverage build: make fuzz-guided).
pub fn fuzz_guided(cx: &mut Cx) -> TestResult {
    let mut map = alloc::vec![0u64; MAP_WORDS];
    if coverage_take(&mut map, WHOLE)?.is_none() {
        println!("fuzz-guided: skipped (not the coverage build of the kernel: make fuzz-guided)");
        return Ok(());
    }
    let seed = cmdline_word("fuzzseed=").unwrap_or(SEED);
    let ops = cmdline_word("fuzzops=").unwrap_or(OPS);
    let runs = cmdline_word("fuzzruns=").unwrap_or(1);
    for k in 0..runs {
        run_as(cx, seed.wrapping_add(k), ops, true).map_err(|e| String::from(e))?;
    }
    Ok(())
}

/// FUZZ0002: KERNEL.COVERAGE.  The default build answers BAD_STATE to
/// every call and writes nothing; the coverage build's bitmap grows when a
/// path runs that had not run since it was emptied, its copy has at most
/// as many bits as it reports, `clear` empties it, and a bad `clear`,
/// `scope` or buffer is refused without emptying it.  In scope OWN it
/// records ktest's own system calls and not the timer interrupts that
/// come while ktest spins in user mode.
pub fn coverage_method(_cx: &mut Cx) -> TestResult {
    use keep_abi::Error;
    let mut map = alloc::vec![0u64; MAP_WORDS];
    let p = map.as_mut_ptr() as u64;
    let bytes = (MAP_WORDS * 8) as u64;
    match KERNEL.coverage(0, 0, 0, WHOLE) {
        Err(e) if e == Error::BAD_STATE => {
            crate::expect_err(KERNEL.coverage(p, bytes, 1, OWN), Error::BAD_STATE, "COVERAGE(map, 1, OWN)")?;
            ensure!(map.iter().all(|&w| w == 0), "the default build wrote into the buffer");
            println!("fuzz: KERNEL.COVERAGE is BAD_STATE (the default build)");
            return Ok(());
        }
        Err(e) => return Err(format!("COVERAGE(0, 0, 0, 0): {e}, want OK or BAD_STATE")),
        Ok(_) => {}
    }
    let r = coverage_scopes(p, bytes, &map);
    KERNEL.coverage(0, 0, 0, WHOLE).ctx("COVERAGE(scope WHOLE)")?;
    r
}

fn coverage_scopes(p: u64, bytes: u64, map: &[u64]) -> TestResult {
    use keep_abi::Error;
    KERNEL.coverage(0, 0, 1, WHOLE).ctx("COVERAGE(clear)")?;
    let (c0, _) = KERNEL.coverage(0, 0, 0, WHOLE).ctx("COVERAGE")?;
    let (c1, _) = KERNEL.coverage(0, 0, 0, WHOLE).ctx("COVERAGE")?;
    ensure!(c0 > 0 && c1 >= c0, "edges after the clear: {c0}, then {c1}");
    // A path the calls above do not take: MEMORY.FREE.
    MEMORY.free().ctx("FREE")?;
    let (c2, n) = KERNEL.coverage(p, bytes, 0, WHOLE).ctx("COVERAGE(map)")?;
    ensure!(n == bytes, "COVERAGE says the bitmap has {n} bytes, want {bytes}");
    ensure!(c2 > c1, "MEMORY.FREE added no edge: {c1} before, {c2} after");
    let bits: u64 = map.iter().map(|w| w.count_ones() as u64).sum();
    ensure!(bits > c1 && bits <= c2, "the copy has {bits} bits; {c1} edges before FREE, {c2} after");
    // Refused: clear 2, scope 2, a buffer not mapped; none empties the bitmap.
    crate::expect_err(KERNEL.coverage(0, 0, 2, WHOLE), Error::INVALID_ARG, "COVERAGE(clear 2)")?;
    crate::expect_err(KERNEL.coverage(0, 0, 1, 2), Error::INVALID_ARG, "COVERAGE(clear 1, scope 2)")?;
    crate::expect_err(KERNEL.coverage(8, 8, 1, WHOLE), Error::FAULT, "COVERAGE(unmapped buffer, clear 1)")?;
    let (c3, _) = KERNEL.coverage(0, 0, 1, WHOLE).ctx("COVERAGE(clear)")?;
    ensure!(c3 >= c2, "a refused call emptied the bitmap: {c2} edges before, {c3} after");
    let (c4, _) = KERNEL.coverage(0, 0, 0, WHOLE).ctx("COVERAGE")?;
    ensure!(c4 < c2, "after the clear {c4} edges, before it {c2}");

    // Scope OWN.  Each system call's edges start afresh at its entry, so
    // a second COVERAGE call of the same kind adds none; neither do the
    // timer's interrupts of ktest spinning in user mode for 100 ms of TSC
    // (about ten ticks; in scope WHOLE each tick runs the trap path, whose
    // edges no system call sets).  MEMORY.FREE, a path of ktest's own not
    // taken since the clear, still adds some.
    let hz = KERNEL.info(keep_abi::info::TSC_HZ).ctx("INFO(TSC_HZ)")?.max(1_000_000);
    KERNEL.coverage(0, 0, 1, OWN).ctx("COVERAGE(clear, OWN)")?;
    KERNEL.coverage(0, 0, 0, OWN).ctx("COVERAGE(OWN)")?;
    let (o1, _) = KERNEL.coverage(0, 0, 0, OWN).ctx("COVERAGE(OWN)")?;
    // SAFETY: rdtsc has no side effects.
    let until = unsafe { core::arch::x86_64::_rdtsc() } + hz / 10;
    // SAFETY: as above.
    while unsafe { core::arch::x86_64::_rdtsc() } < until {
        core::hint::spin_loop();
    }
    let (o2, _) = KERNEL.coverage(0, 0, 0, OWN).ctx("COVERAGE(OWN)")?;
    ensure!(o2 == o1, "scope OWN: {o1} edges before ktest spun, {o2} after (the timer's interrupts were recorded)");
    MEMORY.free().ctx("FREE")?;
    let (o3, _) = KERNEL.coverage(0, 0, 0, OWN).ctx("COVERAGE(OWN)")?;
    ensure!(o3 > o2, "scope OWN: MEMORY.FREE added no edge ({o2} before, {o3} after)");
    Ok(())
}

/// A word of the kernel command line `key=VALUE` (hex with 0x, or decimal);
/// the server fuzzers read theirs with it too.
pub(crate) fn cmdline_word(key: &str) -> Option<u64> {
    let mut buf = [0u8; 512];
    let len = KERNEL.cmdline(&mut buf).unwrap_or(0).min(buf.len());
    let line = core::str::from_utf8(&buf[..len]).unwrap_or("");
    let v = line.split_whitespace().find_map(|w| w.strip_prefix(key))?;
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// FUZZ0001: SEED and OPS, or the command line's fuzzseed=, fuzzops=,
/// fuzzruns=; `nofuzz` skips it (`make kcov` measures the suite without it).
pub fn fuzz(cx: &mut Cx) -> TestResult {
    let mut buf = [0u8; 512];
    let len = KERNEL.cmdline(&mut buf).unwrap_or(0).min(buf.len());
    if core::str::from_utf8(&buf[..len]).unwrap_or("").split_whitespace().any(|w| w == "nofuzz") {
        println!("fuzz: skipped (nofuzz)");
        return Ok(());
    }
    let seed = cmdline_word("fuzzseed=").unwrap_or(SEED);
    let ops = cmdline_word("fuzzops=").unwrap_or(OPS);
    let runs = cmdline_word("fuzzruns=").unwrap_or(1);
    for k in 0..runs {
        run(cx, seed.wrapping_add(k), ops).map_err(|e| String::from(e))?;
    }
    Ok(())
}
