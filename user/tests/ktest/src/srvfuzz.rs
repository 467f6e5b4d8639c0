//! The server fuzzers (docs/fuzzing.md): one per user-level server, each
//! driven from the server's interface definition (srvfuzz_table.rs, which
//! tools/idlgen.py generates from abi/services/*.toml).  A fuzzing client
//! sends requests built from the table, with argument words mixed with edge
//! values of each argument's kind, wrong and missing capabilities, strings
//! of wrong lengths, random labels and labels of other interfaces; every
//! reply must come within REPLY_MS and carry a status the definition lists
//! for the request (BAD_REQUEST for a label that is none).  Every HONEST_EVERY
//! requests a second, honest client does a known-good operation and checks
//! its result; at the end the fuzzer's resources must come back and
//! KERNEL.CHECK_INVARIANTS must be clean.
//!
//! Seeds and counts: SEED and OPS by default, or the kernel command-line
//! words `srvfuzzseed=X` and `srvfuzzops=N` (`make srvfuzz-long`).  Each
//! server prints `srvfuzz: SERVER seed X, N requests`.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{ACCOUNT, KERNEL, SELF_ASPACE, Sender, TIMER, Tag, err, slot, tag, ty};
use keep_rt::println;

use crate::srvfuzz_table::{self as table, Kind, Request};
use crate::fuzz::cmdline_word;
use crate::{Ctx, Cx, TestResult};

/// The default seed and requests per server of a `make test` run.
const SEED: u64 = 0x5e4f_0001;
const OPS: u64 = 3000;
/// A reply later than this is a hang.
const REPLY_MS: u64 = 20_000;
/// The honest client's turn comes every this many requests.
const HONEST_EVERY: u64 = 50;
/// The rig renews what the fuzzer may have destroyed or used up (its bank,
/// its dataspace) every this many requests.
const RENEW_EVERY: u64 = 400;
/// The time-out of a request the definition says `waits` (answered only
/// when something happens): its time-out is no hang.
const WAIT_MS: u64 = 10;


fn seed_ops() -> (u64, u64) {
    (cmdline_word("srvfuzzseed=").unwrap_or(SEED), cmdline_word("srvfuzzops=").unwrap_or(OPS))
}

/// splitmix64: small, and a seed reproduces a run (the ring fuzzer,
/// blkring.rs, draws from it too).
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub(crate) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

/// What a server's rig gives the engine.
trait Rig {
    /// The fuzzing client's capability: a client's, never the administrator's.
    fn cap(&self) -> u64;
    /// Capabilities to send where a request takes some: the right kind and
    /// wrong ones.
    fn offer(&self) -> Vec<u64>;
    /// The honest client's known-good operation, checked; `n` counts turns.
    fn honest(&mut self, cx: &mut Cx, n: u64) -> TestResult;
    /// Gives the fuzzer fresh resources (what it destroyed or used up).
    fn renew(&mut self, cx: &mut Cx) -> TestResult;
    /// The status that says the fuzzer's capability is dead (its bank or
    /// dataspace destroyed): after STALE_RUN of them in a row the rig renews.
    fn stale(&self) -> Option<u64> {
        None
    }
    /// The status of a label that is no request (the definition's
    /// `unknown`): BAD_REQUEST unless the service says otherwise.
    fn unknown(&self) -> u64 {
        BAD_REQUEST
    }
    /// Whether a request of the definition may answer BAD_REQUEST (a
    /// malformed argument) besides the statuses it lists.
    fn bad_request(&self) -> bool {
        true
    }
    /// A label outside the table's requests that the service answers (a
    /// range of labels), drawn instead of one that is no request; None
    /// (the default, drawing nothing) when the service has none.
    fn extra_label(&self, _: &mut Rng) -> Option<u64> {
        None
    }
    /// The request a label outside the table stands for, if any.
    fn extra(&self, _: u64) -> Option<Request> {
        None
    }
}

const BAD_REQUEST: u64 = 1;

const STALE_RUN: u64 = 4;
/// Requests printed before a failure.
const TRACE: usize = 48;

/// A server that did not answer in time cannot be asked to QUIT: the
/// fuzzer's test then leaves it (and what it holds) and fails.
static HUNG: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

fn hung() -> bool {
    HUNG.load(core::sync::atomic::Ordering::SeqCst)
}

/// The statuses any label may get besides its own and BAD_REQUEST: those
/// every request of one of the client's interfaces may answer (the
/// capability's state, which a server checks before the label: STALE).
fn any_label_statuses(requests: &[Request]) -> Vec<u64> {
    let mut out = Vec::new();
    for r in requests.iter().filter(|r| r.payload != "ADMIN") {
        let same: Vec<&Request> = requests.iter().filter(|q| q.interface == r.interface).collect();
        for &st in r.statuses {
            if same.iter().all(|q| q.statuses.contains(&st)) && !out.contains(&st) {
                out.push(st);
            }
        }
    }
    out
}

/// Edge values of an argument of `kind`, or a random word.
fn value(rng: &mut Rng, kind: Kind, seen: &[u64]) -> u64 {
    if !seen.is_empty() && rng.chance(20) {
        return rng.pick(seen);
    }
    if rng.chance(15) {
        return rng.next();
    }
    let r = rng.next();
    match kind {
        Kind::Count => rng.pick(&[0, 1, 2, 3, 7, 8, 9, 16, 128, 129, 255, 256, 257, 512, 513, 4096, 1 << 20,
                                  1 << 32, u64::MAX >> 1, u64::MAX - 1, u64::MAX, r % 64]),
        Kind::Offset => rng.pick(&[0, 1, 8, 511, 512, 513, 4095, 4096, 4097, 8192, 511 * 4096, 512 * 4096,
                                   1 << 20, 1 << 32, 1 << 47, 1 << 63, u64::MAX - 511, u64::MAX, r % (1 << 21)]),
        Kind::Handle => rng.pick(&[0, 1, 2, 3, 4, 63, 64, 255, 256, 1 << 16, 1 << 32, u64::MAX, r % 16]),
        Kind::Rights => rng.pick(&[0, 1, 2, 3, 4, 7, 8, 0x1f, 0xff, u64::MAX, r % 16]),
        Kind::Word => rng.pick(&[0, 1, 2, u64::MAX, 1 << 63, 1 << 62, 1 << 61, r % (1 << 16)]),
    }
}

/// One server's run: `ops` requests from `seed` through `rig`.
fn run(cx: &mut Cx, server: &str, requests: &'static [Request], rig: &mut dyn Rig, seed: u64, ops: u64) -> TestResult {
    println!("srvfuzz: {server} seed {seed:#x}, {ops} requests");
    let mut rng = Rng(seed);
    let recv = cx.slots::<4>()?;
    // SENDERs to the same server the fuzzer received (builders, sessions,
    // shares, sub-banks): further targets.
    let kept = cx.slots::<4>()?;
    let mut live = [false; 4];
    let mut seen: Vec<u64> = Vec::new();
    let start = TIMER.now_ms().unwrap_or(0);
    let (mut ok, mut refused, mut turns, mut done, mut stale_run, mut waited) = (0u64, 0u64, 0u64, 0u64, 0u64, 0u64);
    let anyst = any_label_statuses(requests);
    // The last requests (op, label, words, caps, status), printed with a
    // failure: what led up to it.
    let mut last = [(0u64, 0u64, [0u64; 4], 0u64, 0u64); TRACE];
    let r = (|| {
        for op in 0..ops {
            done = op;
            if op % RENEW_EVERY == RENEW_EVERY - 1 || stale_run >= STALE_RUN {
                stale_run = 0;
                rig.renew(cx).map_err(|e| format!("{server}: renewing after request {op}: {e}"))?;
            }
            if op % HONEST_EVERY == HONEST_EVERY - 1 {
                rig.honest(cx, turns).map_err(|e| format!("{server}: the honest client after request {op} (seed {seed:#x}): {e}"))?;
                turns += 1;
            }
            // The request: one of the definition (any interface), or a
            // label that is none.
            let known = rng.chance(90);
            let req = rng.pick(requests);
            let label = if known {
                req.label
            } else if let Some(l) = rig.extra_label(&mut rng) {
                l
            } else if rng.chance(50) {
                rng.below(64)
            } else {
                rng.next() & tag::LABEL_MASK
            };
            let req = requests.iter().find(|r| r.label == label).copied().or_else(|| rig.extra(label));
            let mut words = [0u64; 4];
            for (i, w) in words.iter_mut().enumerate() {
                *w = match req.and_then(|r| r.args.get(i)) {
                    Some(a) => value(&mut rng, a.kind, &seen),
                    None if rng.chance(10) => rng.next(),
                    None => 0,
                };
            }
            let b = keep_rt::ipc_buffer();
            let (want_caps, want_string, want_recv) = req.map_or((0, false, 0), |r| (r.send_caps, r.send_string, r.reply_caps));
            let offer = rig.offer();
            let ncaps = if rng.chance(15) { rng.below(3) } else { want_caps as u64 };
            let mut caps = [(0u64, 0u64); 4];
            for c in caps.iter_mut().take(ncaps as usize) {
                let targets = kept.iter().zip(live).filter(|&(_, l)| l).map(|(&s, _)| s);
                let pool: Vec<u64> = offer.iter().copied().chain(targets).collect();
                *c = (rng.pick(&pool), if rng.chance(10) { rng.below(0x20) } else { 0 });
            }
            let mut t = Tag::new(label).with_caps(b.set_send_caps(&caps[..ncaps as usize]));
            if want_string || rng.chance(5) {
                let any = rng.below(4097) as usize;
                let len = rng.pick(&[0usize, 1, 15, 16, 17, 511, 512, 513, 1024, 4095, 4096, any]);
                for i in 0..len {
                    b.string[i] = rng.next() as u8;
                }
                b.send_len = len as u64;
                t = t.with_string();
            }
            let nrecv = if rng.chance(10) { rng.below(5) } else { want_recv as u64 };
            t = t.with_slots(b.set_recv_slots(&recv[..nrecv as usize]));
            // Through the client's capability, or one kept from a reply.
            let through = match kept.iter().zip(live).filter(|&(_, l)| l).map(|(&s, _)| s).nth(rng.below(8) as usize) {
                Some(k) if rng.chance(40) => k,
                _ => rig.cap(),
            };
            let waits = req.is_some_and(|r| r.waits);
            let m = keep_abi::ipc(through, t.with_mode(tag::MODE_CALL), words, if waits { WAIT_MS } else { REPLY_MS });
            let what = || format!("{server} request {op} (seed {seed:#x}): label {label} ({}) words {words:x?}, {ncaps} caps",
                                  req.map_or("no request", |r| r.name));
            if m.err == err::TIMEOUT && waits {
                // Nothing happened for it: the server keeps it (a later one
                // of the same kind answers it), which is no hang.
                waited += 1;
                continue;
            }
            if m.err == err::TIMEOUT {
                HUNG.store(true, core::sync::atomic::Ordering::SeqCst);
                return Err(format!("{}: no reply within {REPLY_MS} ms", what()));
            }
            ensure!(m.err == err::OK, "{}: the call failed ({})", what(), keep_abi::Error(m.err));
            let st = m.words[0];
            last[(op % TRACE as u64) as usize] = (op, label, words, ncaps, st);
            match req {
                Some(r) => {
                    ensure!(st == 0 || (st == BAD_REQUEST && rig.bad_request()) || r.statuses.contains(&st) || anyst.contains(&st),
                            "{}: status {st}, not one {} may answer", what(), r.name);
                    // The fuzzer holds no administrator's capability.
                    ensure!(!(st == 0 && r.payload == "ADMIN"), "{}: an administrator's request answered OK", what());
                    ensure!(m.tag.caps() <= r.reply_caps as u64, "{}: {} capabilities in the reply", what(), m.tag.caps());
                }
                None => ensure!(st == rig.unknown() || anyst.contains(&st), "{}: status {st} for a label that is no request, want {}", what(), rig.unknown()),
            }
            if through == rig.cap() && Some(st) == rig.stale() {
                stale_run += 1;
            } else if through == rig.cap() {
                stale_run = 0;
            }
            if st == 0 {
                ok += 1;
                // Results may be handles, buffers, indexes: later arguments.
                for &w in &m.words[1..] {
                    if seen.len() < 32 {
                        seen.push(w);
                    } else {
                        let i = rng.below(32) as usize;
                        seen[i] = w;
                    }
                }
            } else {
                refused += 1;
            }
            for &s in recv.iter().take(m.tag.caps() as usize) {
                let same = SELF_ASPACE.identify_cap(s).is_ok_and(|i| i.ty == ty::SENDER)
                    && SELF_ASPACE.compare_cap(s, rig.cap()).is_ok_and(|(same, _)| same);
                if same && rng.chance(50) {
                    let k = rng.below(4) as usize;
                    let _ = SELF_ASPACE.delete_cap(kept[k]);
                    live[k] = SELF_ASPACE.move_cap(s, kept[k]).is_ok();
                }
                let _ = SELF_ASPACE.delete_cap(s);
            }
        }
        done = ops;
        rig.honest(cx, turns)
    })();
    for s in recv.iter().chain(&kept) {
        let _ = SELF_ASPACE.delete_cap(*s);
    }
    cx.drop_slots(&recv);
    cx.drop_slots(&kept);
    if let Err(e) = &r {
        println!("srvfuzz: {server}: {e}");
        let mut before: Vec<_> = last.iter().filter(|l| l.0 + TRACE as u64 >= done && l.0 < done).collect();
        before.sort_by_key(|l| l.0);
        for (op, label, words, ncaps, st) in before {
            println!("srvfuzz: {server}: before it, request {op}: label {label} words {words:x?}, {ncaps} caps: status {st}");
        }
    }
    let ms = TIMER.now_ms().unwrap_or(0).saturating_sub(start).max(1);
    println!("srvfuzz: {server} {done} requests ({ok} OK, {refused} refused, {waited} left waiting), {turns} honest turns, {ms} ms, {} requests/s",
             done * 1000 / ms);
    r
}

fn invariants() -> TestResult {
    let (bad, _) = KERNEL.check_invariants().ctx("CHECK_INVARIANTS")?;
    ensure!(bad == 0, "{bad} kernel invariant violations");
    Ok(())
}

// ---- the wall clock ------------------------------------------------------

const Y2020: u64 = 1_577_836_800;
const Y2100: u64 = 4_102_444_800;

struct RtcRig {
    client: u64,
    honest: u64,
    last: u64,
    page: u64,
}

impl Rig for RtcRig {
    fn cap(&self) -> u64 {
        self.client
    }
    fn offer(&self) -> Vec<u64> {
        alloc::vec![self.client, self.page, slot::CONSOLE]
    }
    fn honest(&mut self, _: &mut Cx, _: u64) -> TestResult {
        let t = keep_rtc::Client(Sender(self.honest)).now().map_err(|e| format!("NOW: {}", keep_rtc::status_name(e)))?;
        ensure!((Y2020..Y2100).contains(&t) && t >= self.last, "NOW answered {t} (before: {})", self.last);
        self.last = t;
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        Ok(())
    }
}

/// SRVFUZZ0001: the wall clock, fuzzed through a described client's
/// capability; the honest client (another client) reads a sane time that
/// never goes back.
pub fn rtc(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    let ports = cx.slot()?;
    keep_abi::IOPORT.restrict(0x70, 2, ports).ctx("RESTRICT")?;
    let grants = [keep_loader::Grant { src: ports, dest: slot::IOPORT, rights: 0 }];
    let r = crate::drivers::start_with(cx, "rtc", &grants, 0);
    cx.drop_slot(ports);
    let r = r?;
    let [client, honest] = cx.slots::<2>()?;
    let page = cx.retype(ty::PAGE)?;
    let res = (|| {
        // Described clients' payloads (keep_system::names::CLIENT | place).
        r.child.process.mint(client, (1 << 62) | 3, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
        r.child.process.mint(honest, (1 << 62) | 4, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
        let mut rig = RtcRig { client, honest, last: 0, page };
        run(cx, "rtc", table::rtc::REQUESTS, &mut rig, seed, ops)
    })();
    if hung() {
        return res;
    }
    cx.drop_slots(&[client, honest, page]);
    let stopped = crate::drivers::stop(cx, r, |s| {
        let m = s.call(Tag::new(keep_rtc::QUIT), [0; 4]);
        ensure!(m.err == 0 && m.words[0] == 0, "QUIT answered {} {}", m.err, m.words[0]);
        Ok(())
    });
    res?;
    stopped?;
    invariants()
}

// ---- the space bank --------------------------------------------------------

use keep_spacebank::Bank;

struct BankRig {
    prime: Bank,
    fuzz: u64,
    honest: Bank,
    page: u64,
    scratch: u64,
    charges: [Option<u64>; 3],
}

const FUZZ_LIMIT: u64 = 64;

impl Rig for BankRig {
    fn cap(&self) -> u64 {
        self.fuzz
    }
    fn offer(&self) -> Vec<u64> {
        alloc::vec![self.fuzz, self.page, slot::CONSOLE]
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // A page, a run of pages or a cappage; all charged, then freed.
        let h = match n % 3 {
            0 => self.honest.alloc_page(self.scratch),
            1 => self.honest.alloc_pages(4, self.scratch),
            _ => self.honest.alloc_cappage(self.scratch),
        }
        .ctx("ALLOC")?;
        // Each kind's charge is what it was the first time.
        let info = self.honest.info().ctx("INFO")?;
        let want = *self.charges[(n % 3) as usize].get_or_insert(info.used);
        ensure!(info.used == want && want > 0 && info.objects == 1, "INFO after an allocation: {info:?}, want {want} used");
        self.honest.free(h).ctx("FREE")?;
        let _ = SELF_ASPACE.delete_cap(self.scratch);
        let info = self.honest.info().ctx("INFO")?;
        ensure!(info.used == 0 && info.objects == 0, "INFO after FREE: {info:?}");
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        // The fuzzer's bank may be destroyed already (STALE).
        let _ = Bank(self.fuzz).destroy();
        let _ = SELF_ASPACE.delete_cap(self.fuzz);
        self.prime.create_bank(FUZZ_LIMIT, self.fuzz).ctx("CREATE_BANK the fuzzer's")?;
        Ok(())
    }
    fn stale(&self) -> Option<u64> {
        Some(keep_spacebank::status::STALE)
    }
}

/// SRVFUZZ0002: the space bank, fuzzed through a sub-bank of its own (a
/// client's bank, renewed every RENEW_EVERY requests); the honest client
/// allocates and frees from a bank beside it and finds its charges exact;
/// the prime bank's charge comes back at the end.
pub fn spacebank(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    ensure!(!hung(), "a server hung before");
    crate::bank::with_server(cx, |cx, prime| {
        let used0 = prime.info().ctx("INFO")?.used;
        let [fuzz, hb, scratch] = cx.slots::<3>()?;
        let page = cx.retype(ty::PAGE)?;
        if hung() {
            return Err("a server hung before".into());
        }
        let r = (|| {
            let honest = prime.create_bank(16, hb).ctx("CREATE_BANK the honest client's")?;
            prime.create_bank(FUZZ_LIMIT, fuzz).ctx("CREATE_BANK the fuzzer's")?;
            let mut rig = BankRig { prime, fuzz, honest, page, scratch, charges: [None; 3] };
            run(cx, "spacebank", table::spacebank::REQUESTS, &mut rig, seed, ops)?;
            let _ = Bank(fuzz).destroy();
            honest.destroy().ctx("DESTROY the honest bank")?;
            let used = prime.info().ctx("INFO")?.used;
            ensure!(used == used0, "the prime bank has {used} frames charged after the run, {used0} before");
            Ok(())
        })();
        for s in [fuzz, hb, scratch] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        cx.drop_slots(&[fuzz, hb, scratch, page]);
        r
    })?;
    invariants()
}

// ---- the dataspace manager -------------------------------------------------

use keep_dataspace::{Dataspace, Manager};

const HONEST_VA: u64 = 0x0000_5b00_0000_0000;
const FUZZ_PAGES: u64 = 8;

struct DsRig {
    m: Manager,
    bank: u64,
    fuzz: u64,
    honest: u64,
    aspace: u64,
    domain: u64,
    page: u64,
}

impl Rig for DsRig {
    fn cap(&self) -> u64 {
        self.fuzz
    }
    fn offer(&self) -> Vec<u64> {
        // An address space and a DMA domain of the fuzzer's own (never
        // ktest's), the manager, a bank, a page, the console.
        alloc::vec![self.aspace, self.domain, self.m.0.0, self.bank, self.page, self.fuzz, slot::CONSOLE]
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // Map a page of its own dataspace, write, unmap; map again and read
        // back what it wrote the turn before and this one.
        let d = Dataspace(Sender(self.honest));
        let (pages, _, _) = d.info().map_err(|e| format!("INFO: {e}"))?;
        ensure!(pages == 2, "INFO answered {pages} pages, want 2");
        let rw = keep_abi::rights::READ | keep_abi::rights::WRITE;
        let va = HONEST_VA + (n % 2) * 4096;
        let map = d.map(slot::SELF_ASPACE, va, n % 2, 1, rw).map_err(|e| format!("MAP: {e}"))?;
        let p = va as *mut u64;
        // SAFETY: the manager just mapped the page at va read-write for us.
        let before = unsafe { core::ptr::read_volatile(p) };
        let want = if n >= 2 { 0xd5_0000 + n - 2 } else { 0 };
        // SAFETY: as above.
        unsafe { core::ptr::write_volatile(p, 0xd5_0000 + n) };
        d.unmap(map).map_err(|e| format!("UNMAP: {e}"))?;
        ensure!(before == want, "page {} held {before:#x}, want {want:#x}", n % 2);
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        let _ = Dataspace(Sender(self.fuzz)).destroy();
        let _ = SELF_ASPACE.delete_cap(self.fuzz);
        self.m.create(FUZZ_PAGES, self.bank, self.fuzz).map_err(|e| format!("CREATE the fuzzer's: {e}"))?;
        Ok(())
    }
    fn stale(&self) -> Option<u64> {
        Some(keep_dataspace::STALE)
    }
}

/// SRVFUZZ0003: the dataspace manager, fuzzed through a dataspace
/// capability (renewed every RENEW_EVERY requests) with an address space
/// and a DMA domain of its own to map and pin into; the honest client maps
/// its own dataspace and reads back what it wrote; the manager's counts
/// and the bank's charge come back at the end.
pub fn dataspace(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    let d = crate::ds::start_ds(cx)?;
    let m = Manager(Sender(d.srv.cap));
    let [fuzz, honest, aspace, domain] = match cx.slots::<4>() {
        Ok(s) => s,
        Err(e) => return Err(e),
    };
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        let stats0 = m.stats().map_err(|e| format!("STATS: {e}"))?;
        let used0 = d.clients.info().ctx("INFO")?.used;
        ACCOUNT.create_aspace(aspace).ctx("CREATE_ASPACE")?;
        ACCOUNT.create_dma_domain(domain).ctx("CREATE_DMA_DOMAIN")?;
        m.create(2, d.clients.0, honest).map_err(|e| format!("CREATE the honest: {e}"))?;
        m.create(FUZZ_PAGES, d.clients.0, fuzz).map_err(|e| format!("CREATE the fuzzer's: {e}"))?;
        let mut rig = DsRig { m, bank: d.clients.0, fuzz, honest, aspace, domain, page };
        run(cx, "dataspace", table::dataspace::REQUESTS, &mut rig, seed, ops)?;
        let _ = Dataspace(Sender(fuzz)).destroy();
        Dataspace(Sender(honest)).destroy().map_err(|e| format!("DESTROY the honest: {e}"))?;
        let stats = m.stats().map_err(|e| format!("STATS: {e}"))?;
        ensure!(stats.0 == stats0.0 && stats.1 == stats0.1, "manager STATS {stats:?} after the run, {stats0:?} before");
        let used = d.clients.info().ctx("INFO")?.used;
        ensure!(used == used0, "the clients' bank has {used} frames charged after the run, {used0} before");
        Ok(())
    })();
    if hung() {
        return r;
    }
    for s in [fuzz, honest] {
        let _ = SELF_ASPACE.delete_cap(s);
    }
    let _ = ACCOUNT.destroy(aspace);
    let _ = ACCOUNT.destroy(domain);
    for s in [aspace, domain] {
        let _ = SELF_ASPACE.delete_cap(s);
    }
    cx.drop_slots(&[fuzz, honest, aspace, domain, page]);
    let stopped = crate::ds::stop_ds(cx, d);
    r?;
    stopped?;
    invariants()
}

// ---- the PCI server and the block server ----------------------------------

use keep_blk::{Admin, Client, SECTOR};

/// The fuzzer's sectors and the honest client's (disjoint).
const FUZZ_FIRST: u64 = 4096;
const FUZZ_SECTORS: u64 = 256;
const HONEST_FIRST: u64 = 4352;
const HONEST_SECTORS: u64 = 64;

struct BlkRig {
    admin: Admin,
    fuzz: u64,
    honest: u64,
    offer: Vec<u64>,
}

fn pattern(n: u64) -> [u8; SECTOR] {
    let mut b = [0u8; SECTOR];
    for (i, x) in b.iter_mut().enumerate() {
        *x = (n as u8).wrapping_mul(31).wrapping_add(i as u8) ^ (n >> 8) as u8;
    }
    b
}

impl Rig for BlkRig {
    fn cap(&self) -> u64 {
        self.fuzz
    }
    fn offer(&self) -> Vec<u64> {
        self.offer.clone()
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // Read back the sector written the turn before, write this turn's.
        let c = Client(Sender(self.honest));
        let (sectors, _) = c.info().map_err(|e| format!("INFO: {e:?}"))?;
        ensure!(sectors == HONEST_SECTORS, "INFO answered {sectors} sectors");
        if n > 0 {
            let mut got = [0u8; SECTOR];
            c.read((n - 1) % HONEST_SECTORS, &mut got).map_err(|e| format!("READ: {e:?}"))?;
            ensure!(got == pattern(n - 1), "sector {} does not hold what it wrote", (n - 1) % HONEST_SECTORS);
        }
        c.write(n % HONEST_SECTORS, &pattern(n)).map_err(|e| format!("WRITE: {e:?}"))?;
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        // The server's counts still answer.
        self.admin.stats().map_err(|e| format!("STATS: {e:?}"))?;
        Ok(())
    }
}

struct PciRig {
    public: u64,
    honest: keep_pci::Pci,
    first: (u64, u64),
    page: u64,
}

impl Rig for PciRig {
    fn cap(&self) -> u64 {
        self.public
    }
    fn offer(&self) -> Vec<u64> {
        alloc::vec![self.public, self.page, slot::CONSOLE]
    }
    fn honest(&mut self, _: &mut Cx, _: u64) -> TestResult {
        let (f, next) = self.honest.list(0).map_err(|e| format!("LIST 0: {e:?}"))?;
        ensure!((f.sid, next) == self.first, "LIST 0 answered sid {:#x} next {next}, before {:?}", f.sid, self.first);
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        Ok(())
    }
}

/// SRVFUZZ0004: the PCI server's public interface and the block server's
/// client interface, each fuzzed through a client's capability, while the
/// PCI server serves the block server: the honest PCI client lists the
/// first function as before; the honest block client (sectors beside the
/// fuzzer's) reads back each sector it wrote; every dataspace the fuzzer
/// could attach goes back with the manager's counts.
pub fn pci_blk(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    let pci = crate::drivers::start_pci(cx)?;
    let r = (|| {
        let ds = crate::ds::start_ds(cx)?;
        let r = (|| {
            let blk = crate::drivers::start_blk_ds(cx, &pci, &ds.srv)?;
            let r = fuzz_pci_blk(cx, &pci, Admin(Sender(blk.cap)), Manager(Sender(ds.srv.cap)), ds.clients.0, seed, ops);
            if hung() {
                return r;
            }
            let stopped = crate::drivers::stop(cx, blk, |s| Admin(s).quit().map_err(|e| format!("blk QUIT: {e:?}")));
            r?;
            stopped
        })();
        if hung() {
            return r;
        }
        let stopped = crate::ds::stop_ds(cx, ds);
        r?;
        stopped
    })();
    if hung() {
        return r;
    }
    let stopped = crate::drivers::stop(cx, pci, crate::drivers::quit_pci);
    r?;
    stopped?;
    invariants()
}

fn fuzz_pci_blk(cx: &mut Cx, pci: &crate::drivers::Running, admin: Admin, m: Manager, bank: u64, seed: u64, ops: u64) -> TestResult {
    let [public, honest_pci, fuzz, honest, ds_a, ds_b] = cx.slots::<6>()?;
    let page = cx.retype(ty::PAGE)?;
    let r = (|| {
        let w = keep_abi::rights::WRITE | keep_abi::rights::CALL;
        // Described clients' payloads (keep_system::names::CLIENT | place):
        // the public interface's.
        pci.child.process.mint(public, (1 << 62) | 5, w).ctx("MINT")?;
        pci.child.process.mint(honest_pci, (1 << 62) | 6, w).ctx("MINT")?;
        let hp = keep_pci::Pci(Sender(honest_pci));
        let (f, next) = hp.list(0).map_err(|e| format!("LIST 0: {e:?}"))?;
        let mut rig = PciRig { public, honest: hp, first: (f.sid, next), page };
        run(cx, "pci", table::pci::REQUESTS, &mut rig, seed, ops)?;

        let stats0 = m.stats().map_err(|e| format!("STATS: {e}"))?;
        let rw = keep_abi::rights::READ | keep_abi::rights::WRITE;
        admin.add_client(FUZZ_FIRST, FUZZ_SECTORS, rw, fuzz).map_err(|e| format!("ADD_CLIENT: {e:?}"))?;
        admin.add_client(HONEST_FIRST, HONEST_SECTORS, rw, honest).map_err(|e| format!("ADD_CLIENT: {e:?}"))?;
        m.create(4, bank, ds_a).map_err(|e| format!("CREATE: {e}"))?;
        m.create(600, bank, ds_b).map_err(|e| format!("CREATE: {e}"))?;
        // Dataspaces (one too big to attach), the manager itself, a page,
        // the console, the fuzzer's own capability.
        let offer = alloc::vec![ds_a, ds_a, ds_b, m.0.0, page, slot::CONSOLE, fuzz];
        let mut rig = BlkRig { admin, fuzz, honest, offer };
        run(cx, "blk", table::blk::REQUESTS, &mut rig, seed ^ 1, ops)?;
        // Let go of every buffer the fuzzer attached, then its dataspaces.
        for b in 0..64 {
            let _ = Client(Sender(fuzz)).detach(b);
        }
        for s in [ds_a, ds_b] {
            Dataspace(Sender(s)).destroy().map_err(|e| format!("DESTROY: {e}"))?;
        }
        let stats = m.stats().map_err(|e| format!("STATS: {e}"))?;
        ensure!(stats.0 == stats0.0 && stats.2 == stats0.2, "manager STATS {stats:?} after the run, {stats0:?} before");
        let (_, _, buffers) = admin.queue_stats().map_err(|e| format!("QUEUE_STATS: {e:?}"))?;
        ensure!(buffers == 0, "{buffers} buffers still attached");
        Ok(())
    })();
    for s in [public, honest_pci, fuzz, honest, ds_a, ds_b] {
        let _ = SELF_ASPACE.delete_cap(s);
    }
    cx.drop_slots(&[public, honest_pci, fuzz, honest, ds_a, ds_b, page]);
    r
}

// ---- the constructor ---------------------------------------------------------

use keep_constructor::{Constructor, Meta};

struct CtorRig {
    meta: Meta,
    probe: Constructor,
    confined: (bool, u64),
    offer: Vec<u64>,
}

impl Rig for CtorRig {
    fn cap(&self) -> u64 {
        self.meta.0
    }
    fn offer(&self) -> Vec<u64> {
        self.offer.clone()
    }
    fn honest(&mut self, _: &mut Cx, _: u64) -> TestResult {
        let got = self.probe.is_confined(&[]).map_err(|e| format!("IS_CONFINED: {e:?}"))?;
        ensure!(got == self.confined, "IS_CONFINED answered {got:?}, before {:?}", self.confined);
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        Ok(())
    }
}

/// SRVFUZZ0005: the constructor, fuzzed through the metaconstructor and the
/// builders and constructors it hands the fuzzer (kept as further targets),
/// on a bank of its own; the honest client's constructor (built before the
/// run) still answers IS_CONFINED as it did.
pub fn constructor(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    crate::bank::with_server(cx, |cx, prime| {
        let [cb, fb, probe] = cx.slots::<3>()?;
        let page = cx.retype(ty::PAGE)?;
        let r = (|| {
            let ctor_bank = prime.create_bank(1500, cb).ctx("CREATE_BANK the constructor's")?;
            let fuzz_bank = prime.create_bank(200, fb).ctx("CREATE_BANK the fuzzer's")?;
            let elf = crate::bank::elf(cx, "constructor")?;
            let server = keep_constructor::Server::spawn(&mut cx.slots, elf, ctor_bank.0).map_err(String::from)?;
            let r = (|| {
                let image = crate::bank::elf(cx, "confined-probe")?;
                let scratch = cx.slot()?;
                let built = server.meta.build("probe", image, &[], scratch, probe);
                cx.slots.free(scratch);
                let c = built.map_err(|e| format!("build a constructor: {e:?}"))?;
                let confined = c.is_confined(&[]).map_err(|e| format!("IS_CONFINED: {e:?}"))?;
                // A bank to pay instances, a constructor, a page, the
                // metaconstructor, the console.
                let offer = alloc::vec![fuzz_bank.0, probe, page, server.meta.0, slot::CONSOLE];
                let mut rig = CtorRig { meta: server.meta, probe: c, confined, offer };
                if hung() {
                    return Err(String::from("a server hung before"));
                }
                run(cx, "constructor", table::constructor::REQUESTS, &mut rig, seed, ops)
            })();
            if hung() {
                return r;
            }
            let stopped = server.stop(&mut cx.slots).map_err(String::from);
            let _ = fuzz_bank.destroy();
            let _ = ctor_bank.destroy();
            r?;
            stopped
        })();
        for s in [cb, fb, probe] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        cx.drop_slots(&[cb, fb, probe, page]);
        r
    })?;
    invariants()
}

// ---- the network server ----------------------------------------------------------

use keep_net::Stack;

const NET_FUZZ_IP: u64 = keep_net::ipv4(10, 0, 2, 40);
const NET_HONEST_IP: u64 = keep_net::ipv4(10, 0, 2, 41);

struct NetRig {
    admin: keep_net::Admin,
    fuzz: u64,
    honest: Stack,
    mac: [u8; 6],
    offer: Vec<u64>,
}

impl Rig for NetRig {
    fn cap(&self) -> u64 {
        self.fuzz
    }
    fn offer(&self) -> Vec<u64> {
        self.offer.clone()
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // A frame to its own address comes back to it whole, and its
        // counters count exactly its own frames: the fuzzer's reach no one.
        let (mac, ip, _) = self.honest.info().map_err(|e| format!("INFO: {e}"))?;
        ensure!(keep_net::mac_bytes(mac) == self.mac && ip == NET_HONEST_IP, "INFO answered MAC {mac:#x} address {}", keep_net::Ip(ip));
        let frame = crate::net::ipv4_frame(self.mac, NET_HONEST_IP, NET_HONEST_IP, 60 + (n as usize * 37) % 1400, n as u8);
        self.honest.send(&frame).map_err(|e| format!("SEND: {e}"))?;
        let mut buf = alloc::vec![0u8; keep_net::MAX_FRAME];
        let got = self.honest.recv(&mut buf).map_err(|e| format!("RECV: {e}"))?;
        let (len, left) = got.ok_or("RECV: no frame came back")?;
        ensure!(buf[..len] == frame[..] && left == 0, "RECV answered {len} bytes ({} frames left), not the {} it sent", left, frame.len());
        let (delivered, sent, dropped) = self.honest.counters().map_err(|e| format!("COUNTERS: {e}"))?;
        ensure!((delivered, sent, dropped) == (n + 1, n + 1, 0), "COUNTERS answered {delivered} delivered, {sent} sent, {dropped} dropped after {} turns", n + 1);
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        // The administrator's counts still answer.
        self.admin.stats().map_err(|e| format!("STATS: {e}"))?;
        Ok(())
    }
}

/// SRVFUZZ0006: the network server, fuzzed through a stack's capability
/// (ADD_STACK's), with a ring's dataspace shared read-write and read-only,
/// one too small, a notification and wrong capabilities to send; the
/// honest stack beside it sends a frame to its own address and gets that
/// frame back, its counters counting only its own; at the end the
/// fuzzer's stack is removed, and the manager's dataspaces, handles,
/// mappings and pins are back where they were.
pub fn net(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    crate::net::with_net_process(cx, "SRVFUZZ0006", |cx, admin, dsm, _| {
        let [fuzz, honest, ring, rw, ro, small, note] = cx.slots::<7>()?;
        let page = cx.retype(ty::PAGE)?;
        let r = (|| {
            let stats0 = dsm.m.stats().map_err(|e| format!("STATS: {e}"))?;
            let nf = admin.add_stack(NET_FUZZ_IP, fuzz).map_err(|e| format!("ADD_STACK the fuzzer's: {e}"))?;
            admin.add_stack(NET_HONEST_IP, honest).map_err(|e| format!("ADD_STACK the honest: {e}"))?;
            let hs = Stack(Sender(honest));
            let mac = keep_net::mac_bytes(hs.info().map_err(|e| format!("INFO: {e}"))?.0);
            let rwr = keep_abi::rights::READ | keep_abi::rights::WRITE;
            dsm.m.create(keep_net::ring::RING_PAGES, dsm.bank, ring).map_err(|e| format!("CREATE: {e}"))?;
            Dataspace(Sender(ring)).share(rwr, rw).map_err(|e| format!("SHARE: {e}"))?;
            Dataspace(Sender(ring)).share(keep_abi::rights::READ, ro).map_err(|e| format!("SHARE: {e}"))?;
            dsm.m.create(1, dsm.bank, small).map_err(|e| format!("CREATE: {e}"))?;
            ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
            let stats1 = dsm.m.stats().map_err(|e| format!("STATS: {e}"))?;
            // A ring to attach (twice as likely), one read-only, one too
            // small, the manager itself, a notification, a page, the
            // console, the fuzzer's own capability.
            let offer = alloc::vec![rw, rw, ro, small, dsm.m.0.0, note, page, slot::CONSOLE, fuzz];
            let mut rig = NetRig { admin, fuzz, honest: hs, mac, offer };
            run(cx, "net", table::net::REQUESTS, &mut rig, seed, ops)?;
            // Its registration ends: its ring and notification are let go of.
            admin.remove_stack(nf).map_err(|e| format!("REMOVE_STACK: {e}"))?;
            let st = Stack(Sender(fuzz)).info();
            ensure!(st == Err(keep_net::Error::Status(keep_net::NOT_REGISTERED)), "INFO of the removed stack answered {st:?}");
            let stats = dsm.m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(stats == stats1, "manager STATS (dataspaces, handles, mappings, pins) {stats:?} after the run, {stats1:?} before");
            for s in [ring, small] {
                Dataspace(Sender(s)).destroy().map_err(|e| format!("DESTROY: {e}"))?;
            }
            let stats = dsm.m.stats().map_err(|e| format!("STATS: {e}"))?;
            ensure!(stats == stats0, "manager STATS {stats:?} after the dataspaces went, {stats0:?} before");
            Ok(())
        })();
        if hung() {
            return r;
        }
        let _ = ACCOUNT.destroy(note);
        for s in [fuzz, honest, ring, rw, ro, small, note] {
            let _ = SELF_ASPACE.delete_cap(s);
        }
        cx.drop_slots(&[fuzz, honest, ring, rw, ro, small, note, page]);
        r
    })?;
    invariants()
}

// ---- the name service and init's administrator interface -------------------

use keep_system::init as init_proto;
use keep_system::names;

/// The description SRVFUZZ0007 gives its init: the counter as a server,
/// and two programs that may use it, whose name-service capabilities ktest
/// holds (the fuzzer's: entry 1; the honest client's: entry 2).  The
/// fuzzer's line grants it nothing else.
const NAMES_DESC: &str = "bank services limit=1000\n\
                          server counter program=counter bank=services limit=300\n\
                          program fuzzer program=hello bank=services limit=300 uses=counter\n\
                          program honest program=hello bank=services limit=300 uses=counter\n";
const NAMES_FUZZER: u64 = 1;
const NAMES_HONEST: u64 = 2;

struct NamesRig {
    fuzz: u64,
    honest: u64,
    control: u64,
    counter: u64,
    offer: Vec<u64>,
    /// The honest client's counter so far.
    value: u64,
}

impl Rig for NamesRig {
    fn cap(&self) -> u64 {
        self.fuzz
    }
    fn offer(&self) -> Vec<u64> {
        self.offer.clone()
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // LOOKUP finds the counter for it; its count goes on exactly.
        let _ = SELF_ASPACE.delete_cap(self.counter);
        names::lookup_at(self.honest, "counter", self.counter, keep_rt::ipc_buffer()).map_err(|e| format!("LOOKUP counter: {}", names::status::name(e)))?;
        let v = keep_counter::Stub(Sender(self.counter)).add(n + 1).map_err(|e| format!("ADD: {e:?}"))?;
        ensure!(v == self.value + n + 1, "ADD answered {v}, want {}", self.value + n + 1);
        self.value = v;
        // The administrator sees the counter running, never restarted.
        let st = init_proto::entry_status(self.control, keep_rt::ipc_buffer()).map_err(|e| format!("STATUS: {e:#x}"))?;
        ensure!(st.len() == 3 && st[0].phase == init_proto::phase::RUNNING && st[0].restarts == 0, "STATUS answered {st:?}");
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        Ok(())
    }
}

/// SRVFUZZ0007: the name service (LOOKUP, GRANT, TAKE_GONE) and init's
/// own requests, fuzzed through a described program's name-service
/// capability of an init that ktest starts on a description of its own
/// (a counter server, the fuzzer's and the honest client's program
/// lines); the honest client finds the counter by name and counts on;
/// init's STATUS sees the counter running, never restarted; the banks'
/// charges come back.
pub fn names(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    crate::bank::with_server(cx, |cx, prime| {
        let [cb, sb, ib, acct, ctor, fuzz, honest, control, counter, scratch, bscratch] = cx.slots::<11>()?;
        let page = cx.retype(ty::PAGE)?;
        let r = (|| {
            let ctor_bank = prime.create_bank(1500, cb).ctx("CREATE_BANK the constructor's")?;
            let services = prime.create_bank(1000, sb).ctx("CREATE_BANK the servers'")?;
            let elf = crate::bank::elf(cx, "constructor")?;
            let server = keep_constructor::Server::spawn(&mut cx.slots, elf, ctor_bank.0).map_err(String::from)?;
            let r = (|| {
                // init on a bank of its own, as the root task loads it: its
                // process, its threads and their account go with the bank.
                let init_bank = prime.create_bank(1024, ib).ctx("CREATE_BANK init's")?;
                init_bank.alloc_account(66, acct).ctx("ALLOC_ACCOUNT init's")?;
                let grants = [
                    keep_loader::Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
                    keep_loader::Grant { src: slot::TIMER, dest: slot::TIMER, rights: keep_abi::rights::READ },
                    keep_loader::Grant { src: acct, dest: slot::ACCOUNT, rights: 0 },
                ];
                let blob = Some(keep_loader::Blob { vaddr: init_proto::DESC_VADDR, data: NAMES_DESC.as_bytes() });
                let spec = keep_loader::Spec { name: "init", elf: crate::bank::elf(cx, "init")?, arg0: NAMES_DESC.len() as u64, arg1: 0, grants: &grants, blob };
                let mut frames = keep_spacebank::BankFrames(init_bank);
                let loaded = keep_loader::Loader::with_source(&mut cx.slots, keep_abi::Account(acct), &mut frames).load(&spec);
                let child = match loaded {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = init_bank.destroy();
                        return Err(format!("load init: {e}"));
                    }
                };
                let r = (|| {
                    // init's per-entry slots (keep_system::init::slot).
                    for c in 0..init_proto::slot::CAPPAGES {
                        let _ = SELF_ASPACE.delete_cap(scratch);
                        init_bank.alloc_cappage(scratch).ctx("ALLOC_CAPPAGE")?;
                        child.aspace.map_cappage(scratch, init_proto::slot::BASE + c * keep_abi::layout::CAPPAGE_SLOTS).ctx("MAP_CAPPAGE")?;
                    }
                    let _ = SELF_ASPACE.delete_cap(scratch);
                    child.process.mint(control, init_proto::CONTROL, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT control")?;
                    // The counter's constructor (entry 0), its name-service
                    // capability (payload 0) in NAMES_SLOT.
                    child.process.mint(scratch, 0, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
                    let elf = crate::bank::elf(cx, "counter")?;
                    let built = server.meta.build("counter", elf, &[(scratch, names::NAMES_SLOT)], bscratch, ctor);
                    let _ = SELF_ASPACE.delete_cap(scratch);
                    built.map_err(|e| format!("build the counter's constructor: {e:?}"))?;
                    child.aspace.insert_cap(ctor, init_proto::slot::CTOR, 0).ctx("INSERT_CAP the constructor")?;
                    child.aspace.insert_cap(services.0, init_proto::slot::BANK, 0).ctx("INSERT_CAP the bank")?;
                    child.process.mint(fuzz, NAMES_FUZZER, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
                    child.process.mint(honest, NAMES_HONEST, keep_abi::rights::WRITE | keep_abi::rights::CALL).ctx("MINT")?;
                    child.process.start().ctx("START init")?;
                    // Bounded: an init that refused the description has ended.
                    let m = keep_abi::ipc(control, Tag::new(init_proto::req::START).with_mode(tag::MODE_CALL), [0; 4], REPLY_MS);
                    ensure!(m.err == err::OK && m.words[0] == init_proto::status::OK, "START: error {} status {}", keep_abi::Error(m.err), m.words[0]);
                    // Capabilities to send where a request takes some: a
                    // page, the console, init's own capabilities (the
                    // fuzzer's, the control one), a bank.
                    let offer = alloc::vec![fuzz, control, services.0, page, slot::CONSOLE];
                    let mut rig = NamesRig { fuzz, honest, control, counter, offer, value: 0 };
                    // One honest turn first: the counter's first calls make
                    // what it keeps for good (its pages as first touched).
                    rig.honest(cx, 0)?;
                    let used0 = (prime.info().ctx("INFO")?.used, services.info().ctx("INFO")?.used);
                    // One capability answers both definitions' labels.
                    let both: &'static [Request] = alloc::boxed::Box::leak([table::names::REQUESTS, table::init::REQUESTS].concat().into_boxed_slice());
                    run(cx, "names+init", both, &mut rig, seed, ops)?;
                    let used = (prime.info().ctx("INFO")?.used, services.info().ctx("INFO")?.used);
                    ensure!(used == used0, "the banks' charges (prime, the servers') are {used:?} after the run, {used0:?} before");
                    let w = init_proto::call(control, init_proto::req::STOP).map_err(|e| format!("STOP: {}", keep_abi::Error(e)))?;
                    ensure!(w[0] == init_proto::status::OK, "STOP answered {w:?}");
                    Ok(())
                })();
                if hung() {
                    return r;
                }
                let _ = child.process.stop();
                let destroyed = init_bank.destroy().ctx("DESTROY init's bank");
                for s in [child.process.0, child.aspace.0] {
                    cx.drop_slot(s);
                }
                r?;
                destroyed
            })();
            if hung() {
                return r;
            }
            let stopped = server.stop(&mut cx.slots).map_err(String::from);
            let _ = services.destroy();
            let _ = ctor_bank.destroy();
            r?;
            stopped
        })();
        cx.drop_slots(&[cb, sb, ib, acct, ctor, fuzz, honest, control, counter, scratch, bscratch, page]);
        r
    })?;
    invariants()
}

// ---- the console multiplexer ----------------------------------------------

use keep_abi::terminal::{self as term, Control, Terminal};
use table::Arg;

/// A WRITE_WORDS label's request (keep_abi::terminal: WRITE_WORDS + the
/// length, 1 to WORDS_MAX, + MORE), answered as WRITE; it takes no string,
/// so WRITE's INVALID_METHOD (WRITE without one) is not among its statuses.
const WRITE_WORDS: Request = Request {
    name: "WRITE_WORDS",
    label: term::WRITE_WORDS,
    interface: "CLIENTS",
    payload: "CLIENTS",
    args: &[Arg { name: "bytes", kind: Kind::Word }, Arg { name: "bytes", kind: Kind::Word },
            Arg { name: "bytes", kind: Kind::Word }, Arg { name: "bytes", kind: Kind::Word }],
    results: 1,
    send_caps: 0,
    reply_caps: 0,
    send_string: false,
    reply_string: false,
    statuses: &[err::NO_RIGHTS, err::INVALID_ARG, err::NO_MEMORY],
    waits: false,
};

struct ConsoleRig {
    control: Control,
    /// The fuzzer's interactive terminal and a write-only view of it; the
    /// fuzzer goes through one, then (at each renewal) the other.
    fuzz: u64,
    view: u64,
    through_view: bool,
    honest: Terminal,
    honest_vt: u64,
    note: u64,
    page: u64,
}

fn listed_name(l: &term::Listed) -> &str {
    keep_abi::name_str(&l.name)
}

impl Rig for ConsoleRig {
    fn cap(&self) -> u64 {
        if self.through_view { self.view } else { self.fuzz }
    }
    fn offer(&self) -> Vec<u64> {
        alloc::vec![self.note, self.fuzz, self.view, self.page, slot::CONSOLE]
    }
    fn honest(&mut self, _: &mut Cx, n: u64) -> TestResult {
        // A write of a new length through the string and one in the words,
        // each taken whole; no input (the multiplexer's reader may not read
        // the kernel's console), so READ would block; LIST shows the three
        // terminals the rig made, the first with the screen, and no fourth.
        let len = 1 + (n % 64) as usize;
        let bytes: Vec<u8> = (0..len).map(|i| b'a' + ((i as u64 + n) % 26) as u8).collect();
        let taken = self.honest.write_string(keep_rt::ipc_buffer(), &bytes).map_err(|e| format!("WRITE: {e}"))?;
        ensure!(taken == len, "WRITE of {len} bytes took {taken}");
        let words = len.min(term::WORDS_MAX);
        let taken = self.honest.write_words(&bytes[..words]).map_err(|e| format!("WRITE_WORDS: {e}"))?;
        ensure!(taken == words, "WRITE_WORDS of {words} bytes took {taken}");
        let mut buf = [0u8; term::READ_MAX];
        match self.honest.read(&mut buf) {
            Err(e) if e == keep_abi::Error::WOULD_BLOCK => {}
            other => return Err(format!("READ with no input answered {other:?}")),
        }
        let want = [("owner", true), ("fuzz", false), ("honest", false)];
        for (i, (name, screen)) in want.iter().enumerate() {
            let l = self.control.list(keep_rt::ipc_buffer(), i as u64).ok_or_else(|| format!("LIST {i} refused"))?;
            ensure!(listed_name(&l) == *name && l.has_screen == *screen && !l.output_only,
                    "LIST {i}: {l:?}, want {name} (screen {screen}, interactive)");
            if i == 2 {
                ensure!(l.vt == self.honest_vt, "LIST 2: vt {}, want {}", l.vt, self.honest_vt);
            }
        }
        ensure!(self.control.list(keep_rt::ipc_buffer(), 3).is_none(), "LIST 3 answered: a terminal the rig did not make");
        Ok(())
    }
    fn renew(&mut self, _: &mut Cx) -> TestResult {
        self.through_view = !self.through_view;
        Ok(())
    }
    fn unknown(&self) -> u64 {
        err::INVALID_METHOD
    }
    fn bad_request(&self) -> bool {
        false
    }
    fn extra_label(&self, rng: &mut Rng) -> Option<u64> {
        // Half of the labels that are no request are at or near the
        // WRITE_WORDS range's edges (lengths 0 to WORDS_MAX + 1), with or
        // without MORE.
        if !rng.chance(50) {
            return None;
        }
        let len = rng.below(term::WORDS_MAX as u64 + 2);
        Some(term::WRITE_WORDS + len + if rng.chance(30) { term::MORE } else { 0 })
    }
    fn extra(&self, label: u64) -> Option<Request> {
        let len = (label & !term::MORE).wrapping_sub(term::WRITE_WORDS);
        (label & !(term::MORE | 0xff) == term::WRITE_WORDS && (1..=term::WORDS_MAX as u64).contains(&len))
            .then_some(Request { label, ..WRITE_WORDS })
    }
}

/// SRVFUZZ0008: a console multiplexer of ktest's own (given a write-only
/// copy of the kernel's console, so that its reader takes no input from the
/// system's), fuzzed through an interactive terminal that never has the
/// screen and a write-only view of it; the honest terminal beside it writes
/// and is taken whole, reads nothing, and the control capability lists the
/// same three terminals throughout.
pub fn console(cx: &mut Cx) -> TestResult {
    let (seed, ops) = seed_ops();
    ensure!(!hung(), "a server hung before");
    // The multiplexer makes its reader on the account it is given: one of
    // the test's own, whose DESTROY_ALL ends the reader at the end.
    let [out, acct] = cx.slots::<2>()?;
    let account = keep_abi::Account(acct);
    let r = (|| {
        SELF_ASPACE.copy_cap(slot::CONSOLE, out, keep_abi::rights::WRITE).ctx("COPY_CAP the console")?;
        keep_abi::MEMORY.create_account(acct).ctx("CREATE_ACCOUNT")?;
        keep_abi::MEMORY.donate(acct, 32).ctx("DONATE")?;
        let grants = [keep_loader::Grant { src: out, dest: slot::CONSOLE, rights: 0 },
                      keep_loader::Grant { src: acct, dest: slot::ACCOUNT, rights: 0 },
                      crate::drivers::grant(slot::TIMER)];
        crate::drivers::start_with(cx, "console", &grants, 0)
    })();
    cx.drop_slot(out);
    let retire = |cx: &mut Cx| {
        let _ = account.destroy_all(slot::MEMORY);
        if let Ok((free, _)) = account.info() {
            let _ = account.reclaim(slot::MEMORY, free);
        }
        cx.drop_slot(acct);
    };
    let r = match r {
        Ok(r) => r,
        Err(e) => {
            retire(cx);
            return Err(e);
        }
    };
    let [owner, fuzz, view, honest, note] = match cx.slots::<5>() {
        Ok(s) => s,
        Err(e) => {
            retire(cx);
            let _ = keep_loader::Loader::new(&mut cx.slots).destroy(r.child);
            return Err(e);
        }
    };
    let page = cx.retype(ty::PAGE);
    let res = (|| {
        let page = page.clone()?;
        let control = Control(r.cap);
        let b = keep_rt::ipc_buffer;
        control.new_terminal(b(), term::INTERACTIVE, "owner", owner).ctx("NEW owner")?;
        let fuzz_vt = control.new_terminal(b(), term::INTERACTIVE, "fuzz", fuzz).ctx("NEW fuzz")?;
        let honest_vt = control.new_terminal(b(), term::INTERACTIVE, "honest", honest).ctx("NEW honest")?;
        control.view(b(), fuzz_vt, view).ctx("VIEW")?;
        keep_abi::ACCOUNT.create_notification(note).ctx("CREATE_NOTIFICATION")?;
        let mut rig = ConsoleRig { control, fuzz, view, through_view: false, honest: Terminal(honest), honest_vt, note, page };
        run(cx, "console", table::console::REQUESTS, &mut rig, seed, ops)
    })();
    if hung() {
        return res;
    }
    for s in [owner, fuzz, view, honest, note] {
        let _ = SELF_ASPACE.delete_cap(s);
    }
    cx.drop_slots(&[owner, fuzz, view, honest, note]);
    if let Ok(p) = page {
        cx.drop_slot(p);
    }
    // The multiplexer has no QUIT: it is destroyed, as a server that ends
    // with the system.
    let _ = SELF_ASPACE.delete_cap(r.cap);
    cx.drop_slot(r.cap);
    let reader = account.destroy_all(slot::MEMORY).ctx("DESTROY_ALL the multiplexer's account (its reader)");
    retire(cx);
    let destroyed = keep_loader::Loader::new(&mut cx.slots).destroy(r.child).ctx("destroy the multiplexer");
    reader?;
    res?;
    destroyed?;
    invariants()
}
