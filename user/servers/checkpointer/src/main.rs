//! The checkpointer server (see `lib.rs` for its protocol and
//! docs/persistence.md for the design).  It finds the block server by name
//! (its range is the checkpoint area) and opens the area; at a boot whose
//! persistent pool is still shut it restores the pool from the newest whole
//! checkpoint (or opens it empty when there is none, or the restore is
//! refused), and then answers `CHECKPOINT` and `STATUS`, taking a
//! checkpoint by itself every `arg` ms (bits 0-31) when that is not 0.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::proto::Answer;
use keep_abi::{Checkpoint, Error, Return, SELF_ASPACE, Sender, Tag, err, recv, rights, slot};
use keep_blk::{Client, Error as BlkError};
use keep_checkpointer::pool::{self, Freshness, Image, Key};
use keep_checkpointer::store::{self, BLOCK, BlockDev, Committed, IoError, Page, Slot, Store};
use keep_checkpointer::*;
use keep_rt::println;
use keep_spacebank::Bank;
use keep_system::names;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const BLK: u64 = 0x20;
const RTC: u64 = 0x21;
/// The page records pass through, the shadows' account (both from the
/// checkpointer's bank).
const PAGE: u64 = 0x24;
const SHADOWS: u64 = 0x25;
const BANK: u64 = keep_constructor::INSTANCE_BANK;
const KERNEL: Checkpoint = Checkpoint(CHECKPOINT_SLOT);
/// Where the record page is mapped.
const PAGE_VA: u64 = 0x0000_6000_0000_0000;
/// Sectors of a 4 KiB block.
const PER: u64 = (BLOCK / keep_blk::SECTOR) as u64;
/// The most records one checkpoint may have: the store's root names at
/// most store::MAX_REFS map and meta blocks.
const MAX_RECORDS: u64 = 4096;
// The kernel's pool states (CHECKPOINT.INFO).
const SHUT: u64 = 0;
const CAPTURED: u64 = 3;
/// Sleeps of 5 ms a BEGIN waits for another checkpointer's capture to end.
const CAPTURE_WAITS: u64 = 12_000;

/// The area through the block server, looked up again when a call fails
/// (the server was restarted) and retried once.
struct Disk {
    client: Option<Client>,
    blocks: u64,
}

impl Disk {
    fn connect(&mut self) -> Option<Client> {
        if self.client.is_none() {
            let _ = SELF_ASPACE.delete_cap(BLK);
            for _ in 0..6 {
                match names::lookup_patiently("blk", BLK, keep_rt::ipc_buffer()) {
                    Ok(s) => {
                        self.client = Some(Client(s));
                        break;
                    }
                    Err(names::status::NOT_RUNNING) => continue,
                    Err(e) => {
                        println!("checkpointer: no block server by name ({})", names::status::name(e));
                        break;
                    }
                }
            }
        }
        self.client
    }

    fn io(&mut self, mut f: impl FnMut(Client) -> Result<(), BlkError>) -> Result<(), IoError> {
        for _ in 0..2 {
            let Some(c) = self.connect() else { return Err(IoError(u64::MAX)) };
            match f(c) {
                Ok(()) => return Ok(()),
                Err(BlkError::Call(e)) => {
                    println!("checkpointer: the block server: {e}; asking for it again");
                    self.client = None;
                }
                Err(BlkError::Status(s)) => return Err(IoError(s)),
            }
        }
        Err(IoError(u64::MAX))
    }
}

impl BlockDev for Disk {
    fn blocks(&self) -> u64 {
        self.blocks
    }
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError> {
        self.io(|c| c.read(block * PER, &mut buf[..]))
    }
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError> {
        self.io(|c| c.write(block * PER, &buf[..]))
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.io(|c| c.flush())
    }
}

/// The wall clock's time (0 without one); the rtc server looked up once.
fn now() -> u64 {
    static mut ASKED: bool = false;
    // SAFETY: one thread.
    let asked = unsafe { core::ptr::replace(&raw mut ASKED, true) };
    if !asked && let Err(e) = names::lookup_patiently("rtc", RTC, keep_rt::ipc_buffer()) {
        println!("checkpointer: no wall clock ({}): checkpoints carry time 0", names::status::name(e));
    }
    keep_rtc::Client(Sender(RTC)).now().unwrap_or(0)
}

fn date(t: u64) -> String {
    if t == 0 {
        return String::from("no wall clock");
    }
    let (y, mo, d, h, mi, s) = keep_rtc::civil(t);
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02} UTC")
}

fn slot_str(st: &Store<Disk>, i: usize) -> String {
    match (&st.slots[i], st.claims[i]) {
        (Slot::Good(seq), _) => format!("checkpoint {seq}"),
        (Slot::Bad(store::Fault::NoRoot), _) => String::from("empty"),
        (Slot::Bad(f), Some(seq)) if st.current.as_ref().is_some_and(|c| c.seq > seq) => {
            format!("checkpoint {seq}, superseded ({f}: its blocks were reused)")
        }
        (Slot::Bad(f), _) => format!("refused: {f}"),
    }
}

/// 32 bytes from RDRAND (the TSC where it fails).
fn fresh_key() -> [u8; 32] {
    let mut k = [0u8; 32];
    for c in k.chunks_mut(8) {
        let mut v: u64 = 0;
        let mut ok: u8 = 0;
        for _ in 0..32 {
            // SAFETY: rdrand only writes the register and the carry flag.
            unsafe { core::arch::asm!("rdrand {v}", "setc {ok}", v = out(reg) v, ok = out(reg_byte) ok) };
            if ok != 0 {
                break;
            }
        }
        if ok == 0 {
            v ^= tsc();
        }
        c.copy_from_slice(&v.to_le_bytes());
    }
    k
}

fn tsc() -> u64 {
    // SAFETY: rdtsc only reads the time-stamp counter.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The TPM's driver through the description's `tpm` capability.
fn tpm() -> keep_tpm::Client<'static> {
    keep_tpm::Client(Sender(keep_tpm::TPM_SLOT), keep_rt::ipc_buffer())
}

/// The key as the area is to keep it: sealed by the TPM to this boot's
/// measurements, or, on a machine without one (or a description line
/// without `tpm`), in the clear, with the reason.
fn seal_key(k: &[u8; 32]) -> (Key, Option<String>) {
    let mut blob = [0u8; pool::MAX_KEY];
    match tpm().seal(k, &mut blob) {
        Ok(n) if n > 0 && n <= blob.len() => (Key::Sealed(blob[..n].to_vec()), None),
        Ok(n) => (Key::Clear(*k), Some(format!("the TPM gave a sealed key of {n} bytes"))),
        Err(f) => (Key::Clear(*k), Some(format!("{f}"))),
    }
}

/// The last checkpoint's figures (`persist`).
#[derive(Clone, Copy, Default)]
struct Figures {
    records: u64,
    /// Records sealed again (changed since the last checkpoint, or all of
    /// them without one), and taken unchanged from it.
    sealed: u64,
    reused: u64,
    /// TSC ticks (instructions under -icount) of BEGIN, and of the write-out.
    pause: u64,
    write: u64,
}

struct Server {
    store: Store<Disk>,
    /// The key the kernel seals under now, and whether it is set.
    key: [u8; 32],
    keyed: bool,
    /// The key as each checkpoint's meta keeps it.
    kept: Key,
    /// What this boot found (one line).
    boot: String,
    taken: u64,
    failed: u64,
    last: Option<Committed>,
    figures: Figures,
    last_error: Option<String>,
    verbose: bool,
    /// The shadows' account's handle in the bank.
    shadows: u64,
    /// arg bit 33: another checkpointer restores and opens the pool.
    secondary: bool,
    /// The TPM's checkpoint counter as this checkpointer last read or
    /// incremented it (None: not yet read), and whether an increment is
    /// owed: a commit reached the disk, its increment did not.
    counter: Option<u64>,
    owed: bool,
    /// The committed checkpoint's records when the kernel sealed them under
    /// its present keys (restored, or committed by this instance): the next
    /// checkpoint reads only what changed since its epoch.
    base: Option<Image>,
}

/// COUNTER or INCREMENT of the checkpointer's own NV counter.
fn tpm_counter(increment: bool) -> Result<u64, String> {
    tpm().counter_of(keep_tpm::CHECKPOINT_COUNTER, increment).map_err(|f| {
        format!("the TPM's checkpoint counter ({}): {f}", if increment { "INCREMENT" } else { "COUNTER" })
    })
}

/// The record page, mapped at PAGE_VA.
fn page() -> &'static mut Page {
    // SAFETY: PAGE is mapped writable at PAGE_VA for the server's lifetime
    // and only this (single-threaded) server uses it.
    unsafe { &mut *(PAGE_VA as *mut Page) }
}

impl Server {
    fn set_key(&mut self, key: [u8; 32]) -> Result<(), Error> {
        KERNEL.set_key(key.as_ptr() as u64)?;
        self.key = key;
        self.keyed = true;
        Ok(())
    }

    /// A new key for the kernel's seal, kept sealed where there is a TPM;
    /// a note for the boot line when it is kept in the clear.
    fn new_key(&mut self) -> Result<Option<String>, Error> {
        let k = fresh_key();
        self.set_key(k)?;
        self.base = None;
        let (kept, why) = seal_key(&k);
        self.kept = kept;
        Ok(why.map(|w| format!("the seal's key is kept in the clear in the area ({w})")))
    }

    /// The kernel's key from a checkpoint's meta: unsealed by the TPM,
    /// which refuses it on another boot or another TPM.
    fn key_of(&self, im: &Image) -> Result<[u8; 32], String> {
        match &im.key {
            Key::Clear(k) => Ok(*k),
            Key::Sealed(blob) => {
                let mut out = [0u8; 64];
                match tpm().unseal(blob, &mut out) {
                    Ok(32) => Ok(out[..32].try_into().unwrap()),
                    Ok(n) => Err(format!("the sealed key unsealed to {n} bytes, not 32")),
                    Err(f) => Err(format!("the seal's key does not unseal on this boot: {f}")),
                }
            }
        }
    }

    /// At a boot whose pool is shut: the pool from the newest whole
    /// checkpoint, or opened empty (with the reason).
    fn restore(&mut self) {
        let fell = |s: &Store<Disk>, c: &store::Checkpoint| {
            if s.fell_back {
                let other = 1 - c.slot;
                format!("; fell back from root {}: {}", ["A", "B"][other], slot_str(s, other))
            } else {
                String::new()
            }
        };
        if self.secondary {
            self.boot = String::from("a second checkpointer: it restores and opens nothing");
            return;
        }
        match KERNEL.info() {
            Ok((SHUT, ..)) => {}
            Ok(_) => {
                self.boot = String::from("the persistent pool is open already (a fresh boot, or this checkpointer was restarted): nothing restored");
                return;
            }
            Err(e) => {
                self.boot = format!("no checkpoint object ({e}): nothing restored, no checkpoints");
                return;
            }
        }
        let Some(c) = self.store.current.clone() else {
            let why = if self.store.fell_back {
                format!("no whole checkpoint: root A {}; root B {}", slot_str(&self.store, 0), slot_str(&self.store, 1))
            } else {
                String::from("no checkpoint in the area")
            };
            self.boot = format!("{why}; starting afresh");
            self.open_fresh();
            return;
        };
        let im = match Image::decode(&c.meta) {
            Ok(im) => im,
            Err(b) => {
                self.boot = format!("checkpoint {} refused: {b}; starting afresh", c.seq);
                self.open_fresh();
                return;
            }
        };
        let t0 = tsc();
        let r = self.put_back(&im, &c.meta);
        let ticks = tsc() - t0;
        match r {
            Ok((procs, records)) => {
                self.base = Some(im.clone());
                self.boot = format!(
                    "resumed checkpoint {} of {} ({} KiB): {procs} processes, {records} records, epoch {}, restored in {ticks} TSC ticks, running at TSC {}{}",
                    c.seq,
                    date(c.time),
                    c.blocks * BLOCK as u64 / 1024,
                    im.epoch,
                    t0 + ticks,
                    fell(&self.store, &c)
                );
            }
            Err(why) => {
                self.boot = format!("checkpoint {} could not be restored ({why}){}; starting afresh", c.seq, fell(&self.store, &c));
                self.open_fresh();
            }
        }
    }

    /// Every record back into the kernel, then RESUME.  On an error the
    /// kernel gives back what was restored (RESUME refuses the incomplete
    /// pool and shuts it again).
    fn put_back(&mut self, im: &Image, meta: &[u8]) -> Result<(u64, u64), String> {
        let k = self.key_of(im)?;
        pool::authentic(meta, &k).map_err(|b| format!("{b}"))?;
        self.check_fresh(im)?;
        self.set_key(k).map_err(|e| format!("SET_KEY: {e}"))?;
        // The same boot's measurements: the blob unseals again at the next.
        self.kept = im.key.clone();
        for (i, (k, d)) in im.records.iter().enumerate() {
            let r = match self.store.read_page(*k, page()) {
                Ok(Some(())) => KERNEL.restore(PAGE, d.as_ptr() as u64).map_err(|e| format!("record {i} (frame {k:#x}): {e}")),
                Ok(None) => Err(format!("record {i} (frame {k:#x}) is not in the checkpoint")),
                Err(f) => Err(format!("record {i} (frame {k:#x}): {f}")),
            };
            if let Err(why) = r {
                let _ = KERNEL.resume();
                return Err(why);
            }
        }
        KERNEL.resume().map_err(|e| format!("RESUME: {e}"))
    }

    /// Whether the checkpoint `im` (its tag checked) is the newest this
    /// TPM's checkpointer committed (docs/persistence.md, "Freshness").
    fn check_fresh(&mut self, im: &Image) -> Result<(), String> {
        let carried = match (&im.key, im.counter) {
            (Key::Clear(_), _) => return Ok(()),
            (Key::Sealed(_), None) => return Err(String::from("a sealed key without a freshness counter")),
            (Key::Sealed(_), Some(c)) => c,
        };
        let t = tpm_counter(false)?;
        match pool::judge(carried, t) {
            Freshness::Current => {}
            Freshness::Unacknowledged => {
                let v = tpm_counter(true)?;
                if v != carried {
                    return Err(format!("the TPM's checkpoint counter went from {t} to {v}, not to {carried}"));
                }
            }
            Freshness::RolledBack => {
                return Err(format!(
                    "ROLLBACK: it carries counter {carried} and the TPM's checkpoint counter is {t}: an older checkpoint than the last committed, put back"
                ));
            }
            Freshness::Ahead => {
                return Err(format!(
                    "it carries counter {carried}, ahead of the TPM's checkpoint counter {t}: no checkpoint this TPM's checkpointer committed"
                ));
            }
        }
        self.counter = Some(carried);
        Ok(())
    }

    /// The counter the next checkpoint carries: the TPM's plus one, after
    /// an increment still owed (None: no counter, the key being in the
    /// clear or this a second checkpointer, whose checkpoints are never
    /// restored).  Err: nothing may be written.
    fn next_counter(&mut self) -> Result<Option<u64>, String> {
        if self.secondary || matches!(self.kept, Key::Clear(_)) {
            return Ok(None);
        }
        if self.owed {
            self.counter = Some(tpm_counter(true)?);
            self.owed = false;
        }
        let c = match self.counter {
            Some(c) => c,
            None => *self.counter.insert(tpm_counter(false)?),
        };
        c.checked_add(1).map(Some).ok_or_else(|| String::from("the TPM's checkpoint counter is at its end"))
    }

    fn open_fresh(&mut self) {
        if let Err(e) = KERNEL.open() {
            self.boot += &format!(" (OPEN: {e})");
        }
        match self.new_key() {
            Ok(Some(note)) => self.boot += &format!("; {note}"),
            Ok(None) => {}
            Err(e) => self.boot += &format!(" (SET_KEY: {e}: no checkpoints until it is accepted)"),
        }
    }

    /// BEGIN, growing the shadows' account from the bank when it is short.
    fn begin(&mut self) -> Result<(u64, u64, u64), String> {
        let mut funded = false;
        let mut waited = 0;
        loop {
            let t0 = tsc();
            match KERNEL.begin(SHADOWS) {
                Ok((epoch, n)) => return Ok((epoch, n, tsc() - t0)),
                // Another checkpointer's capture is being written out: it
                // ends with that one's END; wait for it (a sleep of 5 ms,
                // up to a minute).
                Err(Error::BAD_STATE) if waited < CAPTURE_WAITS && KERNEL.info().is_ok_and(|i| i.0 == CAPTURED) => {
                    let _ = keep_abi::TIMER.sleep(5);
                    waited += 1;
                }
                Err(Error::NO_MEMORY) if funded => return Err(String::from("BEGIN: the shadows' account is still short")),
                Err(Error::NO_MEMORY) => {
                    let used = KERNEL.info().map_err(|e| format!("INFO: {e}"))?.3;
                    let free = keep_abi::Account(SHADOWS).info_raw().map_err(|e| format!("ACCOUNT.INFO: {e}"))?.0;
                    Bank(BANK)
                        .fund(self.shadows, used + 1 - free.min(used + 1))
                        .map_err(|e| format!("the bank cannot fund {} shadow frames: {e:?}", used + 1))?;
                    funded = true;
                }
                Err(e) => return Err(format!("BEGIN: {e}")),
            }
        }
    }

    fn checkpoint(&mut self) -> Result<Committed, (u64, String)> {
        let r = self.capture_and_commit();
        match &r {
            Ok(c) => {
                self.taken += 1;
                self.last = Some(*c);
                if self.verbose {
                    let f = self.figures;
                    println!(
                        "checkpointer: checkpoint {} committed ({} pages written; {} of {} records sealed again)",
                        c.seq, c.pages_written, f.sealed, f.records
                    );
                }
            }
            Err((_, e)) => {
                self.failed += 1;
                self.last_error = Some(e.clone());
                println!("checkpointer: checkpoint failed: {e}");
            }
        }
        r
    }

    fn capture_and_commit(&mut self) -> Result<Committed, (u64, String)> {
        let kernel = |what: String| (KERNEL_REFUSED, what);
        // A second checkpointer leaves the kernel's key to the first (its
        // own checkpoints are never restored: it restores nothing).
        if !self.keyed && !self.secondary {
            if let Some(note) = self.new_key().map_err(|e| kernel(format!("SET_KEY: {e}")))? {
                println!("checkpointer: {note}");
            }
        }
        let seq = self.store.current.as_ref().map_or(1, |c| c.seq + 1);
        let used = KERNEL.info().map_err(|e| kernel(format!("INFO: {e}")))?.3;
        if used + 1 > MAX_RECORDS {
            return Err((TOO_LARGE, format!(
                "the persistent pool has {used} frames in use; a checkpoint holds at most {} records",
                MAX_RECORDS - 1
            )));
        }
        let counter = self.next_counter().map_err(|e| (IO_ERROR, e))?;
        if self.verbose {
            println!("checkpointer: checkpoint {seq} begins");
        }
        let (epoch, n, pause) = self.begin().map_err(kernel)?;
        let t0 = tsc();
        // Dirty tracking: against the last checkpoint (when its records
        // are of these keys) READ seals only what changed since its epoch
        // and reports runs of unchanged records, taken from it as they are.
        // A changed record is read twice: for its hash (the store writes
        // only what changed), then, if it changed, for the write itself.
        let mut records = Vec::with_capacity(n as usize);
        let mut changes: Vec<(u64, Option<store::Hash>)> = Vec::new();
        let mut failed = None;
        let (mut sealed, mut reused) = (0, 0);
        let base = self.base.take();
        for since in [base.as_ref().map_or(0, |b| b.epoch), 0] {
            records.clear();
            changes.clear();
            failed = None;
            (sealed, reused) = (0, 0);
            let mut i = 0;
            while i < n {
                let mut d = [0u64; pool::WORDS];
                match KERNEL.read(i, PAGE, d.as_mut_ptr() as u64, since) {
                    Err(e) => {
                        failed = Some(format!("READ {i}: {e}"));
                        break;
                    }
                    Ok((0, ..)) => {
                        let k = pool::key_of(&d);
                        records.push((k, d));
                        changes.push((k, Some(store::sha(page()))));
                        sealed += 1;
                        i += 1;
                    }
                    Ok((same, first, end)) => match base.as_ref().map(|b| b.unchanged(first, end, same)) {
                        Some(Ok(run)) => {
                            records.extend_from_slice(run);
                            reused += same;
                            i += same;
                        }
                        Some(Err(b)) => {
                            failed = Some(format!("READ {i}: {b}"));
                            break;
                        }
                        None => {
                            failed = Some(format!("READ {i}: a run of unchanged records with no checkpoint to take them from"));
                            break;
                        }
                    },
                }
            }
            // A run the last checkpoint does not hold: everything again.
            if failed.is_none() || since == 0 {
                break;
            }
            println!("checkpointer: {}; reading every record", failed.as_deref().unwrap_or(""));
        }
        let r = match failed {
            Some(e) => {
                self.base = base;
                Err(kernel(e))
            }
            None => {
                let im = Image { epoch, key: self.kept.clone(), counter, records };
                let index: alloc::collections::BTreeMap<u64, u64> =
                    im.records.iter().enumerate().map(|(i, (k, _))| (*k, i as u64)).collect();
                // Frames no longer in use leave the store's map.
                if let Some(c) = &self.store.current {
                    changes.extend(c.pages.keys().filter(|k| !index.contains_key(k)).map(|k| (*k, None)));
                }
                let mut fetch = |key: u64, out: &mut Page| {
                    let mut d = [0u64; pool::WORDS];
                    let i = *index.get(&key).ok_or(IoError(u64::MAX))?;
                    KERNEL.read(i, PAGE, d.as_mut_ptr() as u64, 0).map_err(|e| IoError(0x100 + e.0))?;
                    out.copy_from_slice(page());
                    Ok(())
                };
                let meta = im.encode(if self.secondary { &[0; 32] } else { &self.key });
                let r = self.store.commit_with(now(), &changes, &mut fetch, &meta).map_err(|e| (status_of(&e), format!("{e}")));
                // The store stands on this checkpoint now, or still on the
                // last one.
                self.base = if r.is_ok() { Some(im) } else { base };
                r
            }
        };
        let _ = KERNEL.end();
        self.figures = Figures { records: n, sealed, reused, pause, write: tsc() - t0 };
        // The root is on the disk: the counter goes up to what it carries.
        // Until it does, the area's newest is one ahead of the TPM's, which
        // a restore accepts; the increment is owed, and made before the
        // next checkpoint is written.
        if let (Ok(_), Some(c)) = (&r, counter) {
            match tpm_counter(true) {
                Ok(v) if v == c => self.counter = Some(v),
                Ok(v) => {
                    println!("checkpointer: the TPM's checkpoint counter is {v}, not {c}");
                    self.counter = Some(v);
                }
                Err(e) => {
                    println!("checkpointer: {e}; retried before the next checkpoint");
                    self.counter = Some(c - 1);
                    self.owed = true;
                }
            }
        }
        r
    }

    fn report(&self) -> String {
        let s = &self.store;
        let mut t = format!(
            "area: {} blocks of 4 KiB ({} KiB), {} free\n",
            s.dev.blocks,
            s.dev.blocks * 4,
            s.free_blocks()
        );
        match &s.current {
            Some(c) => t += &format!(
                "last checkpoint: {} of {}, {} pages, {} KiB on the disk, {} pages written by it\n",
                c.seq,
                date(c.time),
                c.pages.len(),
                c.blocks * 4,
                c.pages_written
            ),
            None => t += "last checkpoint: none\n",
        }
        t += &format!("root A: {}; root B: {}\n", slot_str(s, 0), slot_str(s, 1));
        t += &format!("at start: {}\n", self.boot);
        if self.keyed {
            t += match self.kept {
                Key::Sealed(_) => "seal's key: sealed by the TPM to this boot's measurements\n",
                Key::Clear(_) => "seal's key: kept in the clear in the area (no TPM)\n",
            };
        }
        t += &match (self.counter, &self.kept) {
            (_, Key::Clear(_)) if self.keyed => String::from("freshness: none (no TPM counter: an older area put back is restored)\n"),
            (Some(c), _) => format!("freshness: the TPM's checkpoint counter is {c}{}\n", if self.owed { ", its increment owed" } else { "" }),
            _ => String::new(),
        };
        if let Ok((state, epoch, frames, used)) = KERNEL.info() {
            let name = ["shut", "restoring", "open", "captured"].get(state as usize).copied().unwrap_or("?");
            t += &format!("persistent pool: {name}, {used} of {frames} frames in use, epoch {epoch}\n");
        }
        if self.taken > 0 {
            let f = self.figures;
            t += &format!(
                "last capture: {} records ({} sealed again, {} unchanged since the last checkpoint), pause {} TSC ticks, write-out {} TSC ticks\n",
                f.records, f.sealed, f.reused, f.pause, f.write
            );
        }
        t += &format!("this instance: {} checkpoints taken, {} failed", self.taken, self.failed);
        if let Some(e) = &self.last_error {
            t += &format!(" (last: {e})");
        }
        t
    }
}

/// The next call (the return capability's slot named again: the block
/// server's and the clock's lookups name theirs).
/// The requests (abi/services/checkpointer.toml), the administrator's
/// only: `dispatch` refuses them through any other payload.
impl Handler for Server {
    fn checkpoint(&mut self, _: &keep_abi::Msg) -> Answer {
        match Server::checkpoint(self) {
            Ok(c) => Answer::ok([c.seq, c.pages_written, c.blocks_written]),
            Err((st, e)) => {
                keep_rt::ipc_buffer().set_string(e.as_bytes());
                Answer::refuse(st).with_string()
            }
        }
    }

    fn status(&mut self, _: &keep_abi::Msg) -> Answer {
        let (seq, time, pages) = self.store.current.as_ref().map_or((0, 0, 0), |c| (c.seq, c.time, c.pages.len() as u64));
        keep_rt::ipc_buffer().set_string(self.report().as_bytes());
        Answer::ok([seq, time, pages]).with_string()
    }
}

fn receive(wait: u64) -> keep_abi::Msg {
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    recv(Tag::new(0).with_slots(1), wait)
}

/// The record page and the shadows' account (its handle), from the bank.
fn setup() -> Result<u64, String> {
    Bank(BANK).alloc_page(PAGE).map_err(|e| format!("a page from the bank: {e:?}"))?;
    SELF_ASPACE.map(PAGE, PAGE_VA, rights::READ | rights::WRITE).map_err(|e| format!("MAP: {e}"))?;
    Bank(BANK).alloc_account(16, SHADOWS).map_err(|e| format!("an account from the bank: {e:?}"))
}

fn main(arg: u64, _: u64) -> i32 {
    let interval = arg & 0xffff_ffff;
    let mut disk = Disk { client: None, blocks: 0 };
    let Some(c) = disk.connect() else { return 2 };
    match c.info() {
        Ok((sectors, r)) if r & rights::WRITE != 0 && r & rights::READ != 0 => disk.blocks = sectors / PER,
        Ok(_) => {
            println!("checkpointer: the block server gives this program no read-write range");
            return 2;
        }
        Err(e) => {
            println!("checkpointer: INFO: {e}");
            return 2;
        }
    }
    let shadows = match setup() {
        Ok(h) => h,
        Err(e) => {
            println!("checkpointer: {e}");
            return 2;
        }
    };
    let _ = now();
    let blocks = disk.blocks;
    let store = Store::open(disk);
    let mut s = Server {
        store,
        key: [0; 32],
        keyed: false,
        kept: Key::Clear([0; 32]),
        boot: String::new(),
        taken: 0,
        failed: 0,
        last: None,
        figures: Figures::default(),
        last_error: None,
        verbose: arg >> 32 & 1 != 0,
        shadows,
        secondary: arg >> 33 & 1 != 0,
        counter: None,
        owed: false,
        base: None,
    };
    s.restore();
    println!("checkpointer: area of {blocks} blocks: {}", s.boot);
    let wait = if interval == 0 { 0 } else { interval };
    let mut m = receive(wait);
    loop {
        if m.err == err::TIMEOUT && interval != 0 {
            let _ = s.checkpoint();
            m = receive(wait);
            continue;
        }
        if m.err != 0 || !m.tag.is_called() {
            m = receive(wait);
            continue;
        }
        let a = dispatch(&mut s, &m);
        let _ = Return(RET).reply(a.tag(), a.words());
        m = receive(wait);
    }
}
