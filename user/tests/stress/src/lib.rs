//! Random invocations against the kernel, from an unprivileged process.
//!
//! The process is expected to hold only its own process and address space,
//! a small kernel-memory account, the timer, the console (for progress
//! lines) and a few pages and cappages at slots 16-21; no KERNEL and no
//! MEMORY capability.  It makes `count` invocations with random capability
//! addresses (small, large, beyond the space), random labels, modes,
//! counts and tag bits, random argument words and random IPC buffer
//! contents, from a deterministic seed.  The kernel must answer every one
//! with an error code or a result and never crash.
//!
//! A few invocations would end or wedge the stress process itself rather
//! than test the kernel; those are steered away from after a look at the
//! target (IDENTIFY_CAP, COMPARE_CAP): exiting or stopping itself, changing
//! its own IPC buffer, handler or emulation, unmapping its own memory or
//! cappage 0, deleting its well-known slots, writing to the console,
//! waiting for a process, sleeping long, blocking receives and sends
//! (always non-blocking or with a 1-2 ms time-out), naming a kpager, taking
//! back its own page tables outside its zone, and wrapping any of those
//! capabilities.  Processes it makes run below its
//! own priority; at the end it destroys what it can still find.

#![no_std]

use keep_abi::{ACCOUNT, IpcBuffer, SELF_ASPACE, Tag, layout, method, slot, syscall, tag, ty};
use keep_rt::println;

pub const DEFAULT_SEED: u64 = 0x5eed_cafe_f00d_1234;
pub const DEFAULT_COUNT: u64 = 100_000;
const PROGRESS_EVERY: u64 = 20_000;
/// Where the stress process maps pages in its own space.
const ZONE: u64 = 0x0000_5000_0000_0000;
const ZONE_PAGES: u64 = 64;
/// Its own priority (the default); what it makes runs below it.
const OWN_PRIORITY: u64 = 10;

/// xorshift64*: small and deterministic (ktest's fuzzer draws from it too).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }

    /// A capability address: mostly where capabilities are, sometimes far.
    fn cap_addr(&mut self) -> u64 {
        match self.below(100) {
            0..=44 => self.below(32),
            45..=64 => self.below(256),
            65..=74 => self.below(layout::CAP_SPACE_SLOTS),
            75..=79 => (self.below(16) << 28) | self.below(512),
            80..=89 => self.next(),
            _ => [
                0,
                layout::CAP_SPACE_SLOTS - 1,
                layout::CAP_SPACE_SLOTS,
                u64::MAX,
                0x8000_0000,
                0x0100_0000,
            ][self.below(6) as usize],
        }
    }

    /// A slot that may be overwritten: never the well-known ones.
    fn scratch_slot(&mut self) -> u64 {
        if self.chance(80) {
            16 + self.below(48)
        } else {
            16 + self.below(layout::CAP_SPACE_SLOTS - 16)
        }
    }

    fn word(&mut self) -> u64 {
        match self.below(100) {
            0..=29 => self.below(8),
            30..=49 => self.cap_addr(),
            50..=64 => ZONE + self.below(ZONE_PAGES) * 4096,
            65..=74 => self.below(0x20),
            75..=84 => self.next(),
            85..=89 => self.next() & 0x0000_7fff_ffff_f000,
            _ => [
                u64::MAX,
                1 << 47,
                0xffff_8000_0000_0000,
                4096,
                4097,
                65536,
                65537,
                0x400000,
            ][self.below(8) as usize],
        }
    }
}

/// Type of the capability at `a`, and whether it is the stress process's
/// own process or address space (or a sender to itself, which counts as
/// the same object as its process).
fn look(a: u64) -> (u64, bool) {
    if a >= layout::CAP_SPACE_SLOTS {
        return (ty::NULL, false);
    }
    let t = match SELF_ASPACE.identify_cap(a) {
        Ok(i) => i.ty,
        Err(_) => return (ty::NULL, false),
    };
    let own = |s| SELF_ASPACE.compare_cap(a, s).map(|r| r.0).unwrap_or(false);
    let is_self = match t {
        ty::PROCESS => own(slot::SELF_PROCESS),
        ty::ASPACE => own(slot::SELF_ASPACE),
        _ => false,
    };
    (t, is_self)
}

/// Whether a wrapper may be built around the capability at `a`: only
/// around objects whose every method is harmless to the stress process.
fn wrappable(a: u64) -> bool {
    let (t, is_self) = look(a);
    match t {
        ty::NULL | ty::PAGE | ty::CAPPAGE | ty::SENDER | ty::RETURN | ty::WRAPPER => true,
        ty::ASPACE => !is_self,
        _ => a >= layout::CAP_SPACE_SLOTS,
    }
}

/// Adjusts or refuses (None) an invocation of `target` with `label` and
/// `words` so that it cannot end or wedge the stress process.
fn steer(target: u64, mode: u64, label: u64, w: &mut [u64; 4]) -> Option<u64> {
    if mode != tag::MODE_CALL {
        return Some(target);
    }
    let (t, is_self) = look(target);
    use method::{account, aspace, console, notification, process, timer};
    let ok = match (t, label) {
        (ty::CONSOLE, console::WRITE) => false,
        (ty::CONSOLE, console::READ) => {
            w[2] = 1;
            true
        }
        (ty::TIMER, timer::SLEEP) => {
            w[0] %= 3;
            true
        }
        // A deadline in the next few million TSC ticks (a few ms), or one
        // already past: never one far ahead, which would stop the run.
        (ty::TIMER, timer::SLEEP_UNTIL) => {
            // SAFETY: rdtsc only reads the time-stamp counter.
            let now = unsafe { core::arch::x86_64::_rdtsc() };
            w[0] = (now + w[0] % 3_000_000).wrapping_sub(w[1] % 2 * 1_000_000);
            true
        }
        (ty::PROCESS, process::WAIT) => false,
        (ty::NOTIFICATION, notification::WAIT) => false,
        (ty::PROCESS, process::STOP | process::EXIT) => !is_self,
        (ty::PROCESS, process::SET_IPC_BUFFER | process::SET_FAULT_HANDLER) => !is_self,
        (ty::PROCESS, process::SET_EMULATION) => !is_self,
        (ty::PROCESS, process::SET_PRIORITY) => {
            w[0] %= OWN_PRIORITY;
            !is_self
        }
        (ty::ASPACE, aspace::MAP | aspace::UNMAP) if is_self => {
            let v = if label == aspace::MAP { 1 } else { 0 };
            w[v] = ZONE + (w[v] % ZONE_PAGES) * 4096;
            true
        }
        (ty::ASPACE, aspace::UNMAP_CAPPAGE) if is_self => w[0] >= layout::CAPPAGE_SLOTS,
        (ty::ASPACE, aspace::DELETE_CAP | aspace::MOVE_CAP) if is_self => w[0] >= 16,
        (ty::ACCOUNT, account::SET_KPAGER) => false,
        // Its own page tables only in the zone: without a pager for its
        // code and stack, taking those back would end it (its segment
        // tables rebuild themselves, so those may go anywhere).
        (ty::ACCOUNT, account::REVOKE_TABLE) => {
            if look(w[0]).1 {
                w[1] = ZONE + (w[1] % ZONE_PAGES) * 4096;
            }
            true
        }
        (ty::ACCOUNT, account::CREATE_WRAPPER) => wrappable(w[0]),
        _ => true,
    };
    ok.then_some(target)
}

fn randomize_buffer(rng: &mut Rng, buf: &mut IpcBuffer) {
    for e in buf.send_caps.iter_mut() {
        *e = (rng.cap_addr() & 0xffff_ffff) | (rng.below(0x40) << 32);
        if rng.chance(5) {
            *e = rng.next();
        }
    }
    for s in buf.recv_slots.iter_mut() {
        *s = rng.scratch_slot();
    }
    buf.send_len = match rng.below(4) {
        0 => 0,
        1 => rng.below(65),
        2 => rng.below(4097),
        _ => rng.below(6000),
    };
    let n = rng.below(64) as usize;
    for i in 0..n {
        buf.string[i] = rng.next() as u8;
    }
    // Now and then a register block for WRITE_REGS.
    if rng.chance(20) {
        let mut regs = [0u64; keep_abi::reg::COUNT as usize];
        for r in regs.iter_mut() {
            *r = rng.word();
        }
        buf.set_regs(&regs);
    }
}

/// Destroys every process, then every address space and wrapper, found
/// in the stress process's first cappage (made from its account or not:
/// DESTROY refuses the others).
fn sweep() -> u64 {
    let mut n = 0;
    for kind in [ty::PROCESS, ty::ASPACE, ty::WRAPPER] {
        for s in 16..layout::CAPPAGE_SLOTS {
            let (t, is_self) = look(s);
            if t == kind && !is_self && ACCOUNT.destroy(s).is_ok() {
                n += 1;
            }
        }
    }
    n
}

/// Occupied and empty slots among 0..64, refreshed now and then, so that
/// many invocations name real capabilities and free destinations.
struct Slots {
    live: [u64; 64],
    nlive: usize,
    empty: [u64; 64],
    nempty: usize,
}

impl Slots {
    fn scan(&mut self) {
        self.nlive = 0;
        self.nempty = 0;
        for s in 0..64 {
            match SELF_ASPACE.identify_cap(s) {
                Ok(i) if i.ty != ty::NULL => {
                    self.live[self.nlive] = s;
                    self.nlive += 1;
                }
                Ok(_) if s >= 16 => {
                    self.empty[self.nempty] = s;
                    self.nempty += 1;
                }
                _ => {}
            }
        }
    }

    fn live(&self, rng: &mut Rng) -> u64 {
        if self.nlive == 0 {
            rng.cap_addr()
        } else {
            self.live[rng.below(self.nlive as u64) as usize]
        }
    }

    fn empty(&self, rng: &mut Rng) -> u64 {
        if self.nempty == 0 {
            rng.scratch_slot()
        } else {
            self.empty[rng.below(self.nempty as u64) as usize]
        }
    }
}

/// Runs the stress; 0 when every invocation returned.
pub fn run(seed: u64, count: u64) -> i32 {
    let seed = if seed == 0 { DEFAULT_SEED } else { seed };
    let count = if count == 0 { DEFAULT_COUNT } else { count };
    let mut rng = Rng(seed | 1);
    let buf = keep_rt::ipc_buffer();
    let mut by_error = [0u64; 17];
    let mut steered = 0u64;
    println!("stress: seed {seed:#x}, {count} invocations");
    let mut done = 0u64;
    let mut slots = Slots {
        live: [0; 64],
        nlive: 0,
        empty: [0; 64],
        nempty: 0,
    };
    while done < count {
        if done % 256 == 0 {
            slots.scan();
        }
        if rng.chance(10) {
            randomize_buffer(&mut rng, buf);
        }
        let mut target = if rng.chance(60) {
            slots.live(&mut rng)
        } else {
            rng.cap_addr()
        };
        let label = match rng.below(10) {
            0..=6 => rng.below(17),
            7 => 0xff00 + rng.below(3),
            _ => rng.below(0x10000),
        };
        let mode = if rng.chance(70) {
            tag::MODE_CALL
        } else {
            rng.below(4)
        };
        let caps_max = if rng.chance(90) { 5 } else { 8 };
        let slots_max = if rng.chance(90) { 6 } else { 8 };
        let mut t = Tag::new(label).with_mode(mode);
        if mode != tag::MODE_CALL || rng.chance(30) {
            t = t
                .with_caps(rng.below(caps_max))
                .with_slots(rng.below(slots_max));
            if rng.chance(30) {
                t = t.with_string();
            }
        }
        let mut w = [0u64; 4];
        for x in w.iter_mut() {
            *x = match rng.below(10) {
                0..=2 => slots.live(&mut rng),
                3..=4 => slots.empty(&mut rng),
                _ => rng.word(),
            };
        }
        let (tt, _) = look(target);
        // Sends never wait; receives wait at most 2 ms.
        let mut timeout = 0;
        let ipc_target = matches!(tt, ty::SENDER | ty::RETURN | ty::WRAPPER);
        if ipc_target || mode != tag::MODE_CALL || rng.chance(10) {
            t = t.send_nonblocking();
            if rng.chance(80) {
                t = t.recv_nonblocking();
            } else {
                timeout = 1 + rng.below(2);
            }
        }
        if rng.chance(1) {
            // A reserved bit.
            let bit = [23, 28, 29, 31, 40, 63][rng.below(6) as usize];
            t = Tag(t.0 | 1 << bit);
        }
        match steer(target, mode, label, &mut w) {
            Some(a) => target = a,
            None => {
                steered += 1;
                continue;
            }
        }
        // A wrapper may forward to anything it was allowed to wrap; its
        // kernel-object methods run in CALL mode without blocking.
        let (e, _, _, _) = syscall(target, t.0, w, timeout);
        by_error[(e as usize).min(16)] += 1;
        done += 1;
        if done % PROGRESS_EVERY == 0 {
            println!("stress: {done} invocations");
        }
    }
    let swept = sweep();
    keep_rt::print!("stress: done, {steered} steered away; errors:");
    for (code, n) in by_error.iter().enumerate() {
        if *n > 0 {
            keep_rt::print!(" {}={n}", keep_abi::error_name(code as u64));
        }
    }
    println!("; {swept} objects destroyed");
    0
}
