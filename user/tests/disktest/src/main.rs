//! disktest: a block client of the system description (docs/devices.md,
//! "Restarts"): it finds the block server by name (`uses=blk`, its range
//! and rights its grant `blk=FIRST+SECTORS:rw`), writes its whole range
//! with checksummed sectors, reads it back and checks every sector.
//!
//! arg0: bits 0-7 `rounds`, bit 8 `dataspace`, bit 9 `batch`, bits 16-23
//! an id (its name in the reports: `a` + id).
//! - `rounds` = 0: one round, then exit 0 if every sector read back intact
//!   (what `run disk` at the shell does).
//! - `rounds` = N: the data-integrity test across a restart: rounds go on
//!   until N rounds have completed after the block server was replaced
//!   (killed and restarted by its supervisor) at least once; at most
//!   `MAX_ROUNDS`.  A call that fails (the server died under it, or its
//!   capability is stale) is an error, not data: the client asks the name
//!   service for the server again (waiting out `NOT_RUNNING` while it is
//!   restarted), attaches its dataspace again, and retries.
//! - `dataspace`: 64 KiB a request through a dataspace shared with the
//!   server (`uses=dataspace` too); else 4 KiB a request as message strings.
//! - `batch` (with `dataspace`): each 64 KiB is one batch (`WRITE_DS_V`,
//!   `READ_DS_V`) of 8 entries of 8 KiB in a shuffled order, several on
//!   the device at once; a batch that failed may have written any of its
//!   entries, so all its sectors count as written but not acknowledged.
//!
//! Every sector carries its client, its place in the range, the round
//! (generation) that wrote it and a checksum.  The client remembers, for
//! each request's sectors, the last generation whose write was
//! acknowledged and one whose write failed since (it may or may not have
//! reached the disk).  A sector read back must hold one of those two
//! generations, checksum intact: an acknowledged write that was lost, or
//! any wrong data, is reported and ends the run with exit 3.
//!
//! Exit: 0 all intact (and, for N > 0, a restart was survived); 2 no block
//! server by name; 3 wrong data; 4 a request kept failing, or the server did
//! not come back; 5 no restart happened within MAX_ROUNDS.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{SELF_ASPACE, Sender, Tag, recv, rights, slot};
use keep_blk::{Client, Entry, Error, SECTOR};
use keep_dataspace::{Dataspace, Manager};
use keep_rt::println;
use keep_system::names::{self, NAMES_SLOT};
use keep_virtio::checksum;

keep_rt::entry!(main);

/// Slots: the block server (looked up), the dataspace manager, the
/// client's dataspace and the share the server gets.
const BLK: u64 = 0x20;
const DSM: u64 = 0x21;
const OWN: u64 = 0x22;
const SHARED: u64 = 0x23;
/// The sub-bank that pays for the dataspace (keep_dataspace::Owned).
const SUB: u64 = 0x24;
/// Where the dataspace is mapped: two halves of one request each.
const VA: u64 = 0x0000_3000_0000_0000;
const MAX_ROUNDS: u64 = 400;
/// How long the server may stay away (NOT_RUNNING, or failing calls).
const PATIENCE_MS: u64 = 30_000;
const MAGIC: u64 = 0x6469_736b_7465_7374; // "disktest"

fn sleep(ms: u64) {
    // A receive with a time-out is the wait: nothing holds a sender to us.
    let _ = recv(Tag::new(0), ms);
}

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x
}

/// Sector `s` of the range as generation `g` of client `id` writes it.
fn fill(out: &mut [u8], id: u64, s: u64, g: u64) {
    let w = |i: usize| match i {
        0 => MAGIC ^ id,
        1 => s,
        2 => g,
        _ => mix(id << 56 ^ s << 20 ^ g << 8 ^ i as u64),
    };
    for i in 0..63 {
        out[i * 8..i * 8 + 8].copy_from_slice(&w(i).to_le_bytes());
    }
    let sum = checksum(&out[..504]);
    out[504..512].copy_from_slice(&sum.to_le_bytes());
}

/// The generation sector `s` holds, if it is one of this client's intact sectors for `s`.
fn generation(sec: &[u8], id: u64, s: u64) -> Option<u64> {
    let word = |i: usize| u64::from_le_bytes(sec[i * 8..i * 8 + 8].try_into().unwrap());
    if word(0) != MAGIC ^ id || word(1) != s || checksum(&sec[..504]) != word(63) {
        return None;
    }
    let mut want = [0u8; SECTOR];
    fill(&mut want, id, s, word(2));
    (want[..] == sec[..]).then(|| word(2))
}

/// What the client knows of one request's sectors.
#[derive(Clone, Copy, Default)]
struct Chunk {
    /// The last generation whose write was acknowledged (0: none yet).
    acked: u64,
    /// A generation written since without acknowledgement (0: none).
    maybe: u64,
}

struct Test {
    id: u64,
    name: char,
    ds: bool,
    batch: bool,
    /// Sectors a request moves, and the requests of the range.
    per: u64,
    chunks: Vec<Chunk>,
    client: Option<Client>,
    buffer: u64,
    errors: u64,
    replaced: u64,
    writes: u64,
    reads: u64,
    /// One request's sectors (string mode).
    mem: Vec<u8>,
}

enum Fail {
    Data,
    Gone,
}

impl Test {
    /// The block server by name (and the dataspace attached), waiting out a restart.
    fn connect(&mut self) -> Result<Client, Fail> {
        if let Some(c) = self.client {
            return Ok(c);
        }
        let mut waited = 0;
        let mut renewed = false;
        loop {
            let _ = SELF_ASPACE.delete_cap(BLK);
            match names::lookup_at(NAMES_SLOT, "blk", BLK, keep_rt::ipc_buffer()) {
                Ok(s) => {
                    let c = Client(s);
                    let attached = if self.ds { c.attach(SHARED).map(|(b, _, _)| b) } else { Ok(0) };
                    match attached {
                        Ok(b) => {
                            self.buffer = b;
                            self.client = Some(c);
                            return Ok(c);
                        }
                        // The dataspace manager was restarted since the
                        // dataspace was made: its share names nothing the
                        // server's manager knows.  A new one from the new
                        // manager, the old one's frames given back.
                        // Once: a server refusing a new one too waits below.
                        Err(e) if e.share_gone() && self.ds && !renewed => {
                            renewed = true;
                            println!("disktest {}: the dataspace manager was restarted; a new dataspace", self.name);
                            keep_dataspace::Owned { ds: Dataspace(Sender(OWN)), bank: keep_dataspace::Bank(SUB) }.destroy();
                            let _ = SELF_ASPACE.delete_cap(SHARED);
                            if let Err(e) = dataspace(self.per) {
                                println!("disktest {}: {e}", self.name);
                                return Err(Fail::Gone);
                            }
                            continue;
                        }
                        Err(e) => println!("disktest {}: ATTACH: {e}; trying again", self.name),
                    }
                }
                Err(names::status::NOT_RUNNING) => {}
                Err(e) => {
                    println!("disktest {}: no block server by name ({})", self.name, names::status::name(e));
                    return Err(Fail::Gone);
                }
            }
            if waited > PATIENCE_MS {
                println!("disktest {}: the block server did not come back in {PATIENCE_MS} ms", self.name);
                return Err(Fail::Gone);
            }
            sleep(20);
            waited += 20;
        }
    }

    /// A call failed: the server is gone or refused; drop its capability.
    fn failed(&mut self, what: &str, at: u64, e: Error) -> Result<(), Fail> {
        self.errors += 1;
        if matches!(e, Error::Call(_)) {
            if self.client.is_some() {
                self.replaced += 1;
                println!("disktest {}: {what} at {at}: {e}; asking for the block server again", self.name);
            }
        } else {
            println!("disktest {}: {what} at {at}: {e}; retrying", self.name);
        }
        self.client = None;
        if self.errors > 1000 {
            println!("disktest {}: too many errors", self.name);
            return Err(Fail::Gone);
        }
        Ok(())
    }

    fn write(&mut self, k: usize, g: u64) -> Result<(), Fail> {
        let at = k as u64 * self.per;
        let len = (self.per as usize) * SECTOR;
        loop {
            let c = self.connect()?;
            // Filled after connect: a reconnect may have replaced the dataspace.
            for (i, s) in (at..at + self.per).enumerate() {
                let out = if self.ds { &mut self.dsmem()[i * SECTOR..] } else { &mut self.mem[i * SECTOR..] };
                fill(&mut out[..SECTOR], self.id, s, g);
            }
            let r = if self.batch {
                c.write_ds_v(self.buffer, &self.entries(at, 0)).map_err(|e| e.error)
            } else if self.ds {
                c.write_ds(self.buffer, 0, at, self.per)
            } else {
                c.write(at, &self.mem[..len])
            };
            match r {
                Ok(()) => {
                    self.chunks[k] = Chunk { acked: g, maybe: 0 };
                    self.writes += 1;
                    return Ok(());
                }
                Err(e) => {
                    self.chunks[k].maybe = g;
                    self.failed("write", at, e)?;
                }
            }
        }
    }

    fn read(&mut self, k: usize) -> Result<(), Fail> {
        let at = k as u64 * self.per;
        let len = (self.per as usize) * SECTOR;
        loop {
            let c = self.connect()?;
            let r = if self.batch {
                self.dsmem()[len..2 * len].fill(0);
                c.read_ds_v(self.buffer, &self.entries(at, len as u32)).map_err(|e| e.error)
            } else if self.ds {
                self.dsmem()[len..2 * len].fill(0);
                c.read_ds(self.buffer, len as u64, at, self.per)
            } else {
                c.read(at, &mut self.mem[..len])
            };
            match r {
                Ok(()) => break,
                Err(e) => self.failed("read", at, e)?,
            }
        }
        self.reads += 1;
        let ch = self.chunks[k];
        if ch.acked == 0 {
            return Ok(()); // never written: whatever was there
        }
        for (i, s) in (at..at + self.per).enumerate() {
            let sec = if self.ds { &self.dsmem()[len + i * SECTOR..][..SECTOR] } else { &self.mem[i * SECTOR..][..SECTOR] };
            let got = generation(sec, self.id, s);
            if got != Some(ch.acked) && (ch.maybe == 0 || got != Some(ch.maybe)) {
                println!(
                    "disktest {}: WRONG DATA: sector {s}: {}; want generation {}{}",
                    self.name,
                    match got {
                        Some(g) => alloc::format!("generation {g}"),
                        None => alloc::string::String::from("not an intact sector of this client's"),
                    },
                    ch.acked,
                    if ch.maybe != 0 { alloc::format!(" (or {}, not acknowledged)", ch.maybe) } else { alloc::string::String::new() }
                );
                return Err(Fail::Data);
            }
        }
        Ok(())
    }

    /// The batch for the request at sector `at` (buffer bytes from `base`):
    /// 8 entries of per / 8 sectors, in the order 0, 3, 6, 1, 4, 7, 2, 5.
    fn entries(&self, at: u64, base: u32) -> [Entry; 8] {
        let n = self.per / 8;
        core::array::from_fn(|j| {
            let i = (j as u64 * 3) % 8;
            Entry { sector: at + i * n, offset: base + (i * n) as u32 * SECTOR as u32, count: n as u32 }
        })
    }

    fn dsmem(&self) -> &'static mut [u8] {
        // SAFETY: the dataspace is mapped read-write at VA, two requests long.
        unsafe { core::slice::from_raw_parts_mut(VA as *mut u8, 2 * self.per as usize * SECTOR) }
    }

    fn round(&mut self, g: u64) -> Result<(), Fail> {
        for k in 0..self.chunks.len() {
            self.write(k, g)?;
        }
        for k in 0..self.chunks.len() {
            self.read(k)?;
        }
        Ok(())
    }
}

/// The dataspace (two requests' worth), paid by a sub-bank of its own (so
/// that it can be given back after a restart of the manager; the CREATE
/// retried once if the manager went), and its share for the server.
fn dataspace(per: u64) -> Result<(), alloc::string::String> {
    let pages = 2 * per * SECTOR as u64 / 4096;
    if !keep_dataspace::find_by_name(DSM) {
        return Err(alloc::string::String::from("no dataspace manager by name"));
    }
    let own = Dataspace(Sender(OWN));
    Manager(Sender(DSM))
        .create_owned(pages, keep_dataspace::BANK_SLOT, SUB, OWN, keep_dataspace::find_by_name)
        .map_err(|e| alloc::format!("CREATE: {e}"))?;
    own.map(slot::SELF_ASPACE, VA, 0, pages, rights::READ | rights::WRITE).map_err(|e| alloc::format!("MAP: {e}"))?;
    own.share(rights::READ | rights::WRITE, SHARED).map_err(|e| alloc::format!("SHARE: {e}"))?;
    Ok(())
}

fn main(arg: u64, _: u64) -> i32 {
    let (rounds, ds, id) = (arg & 0xff, arg & 0x300 != 0, (arg >> 16) & 0xff);
    let batch = arg & 0x200 != 0;
    let name = (b'a' + (id % 26) as u8) as char;
    let per = if ds { 128 } else { 8 };
    if ds && let Err(e) = dataspace(per) {
        println!("disktest {name}: {e}");
        return 2;
    }
    let mut t = Test {
        id,
        name,
        ds,
        batch,
        per,
        chunks: Vec::new(),
        client: None,
        buffer: 0,
        errors: 0,
        replaced: 0,
        writes: 0,
        reads: 0,
        mem: vec![0u8; 8 * SECTOR],
    };
    let sectors = match t.connect().map(|c| c.info()) {
        Ok(Ok((s, r))) if r & rights::WRITE != 0 => s,
        Ok(Ok(_)) => {
            println!("disktest {name}: the block server gives this client a read-only range");
            return 2;
        }
        Ok(Err(e)) => {
            println!("disktest {name}: INFO: {e}");
            return 2;
        }
        Err(_) => return 2,
    };
    t.chunks = vec![Chunk::default(); (sectors / per) as usize];
    println!(
        "disktest {name}: {sectors} sectors, {} KiB a request{}",
        per * SECTOR as u64 / 1024,
        if batch { " through a dataspace, as batches of 8 entries" } else if ds { " through a dataspace" } else { "" }
    );
    let mut g = 0;
    let mut after = None;
    loop {
        g += 1;
        match t.round(g) {
            Ok(()) => {}
            Err(Fail::Data) => return 3,
            Err(Fail::Gone) => return 4,
        }
        if t.replaced > 0 && after.is_none() {
            after = Some(g);
        }
        println!(
            "disktest {name}: round {g}: {} sectors written and read back intact (errors so far {}, server replaced {} times)",
            t.chunks.len() as u64 * per,
            t.errors,
            t.replaced
        );
        let done = match after {
            _ if rounds == 0 => true,
            Some(a) => g >= a + rounds,
            None => false,
        };
        if done {
            break;
        }
        if g >= MAX_ROUNDS {
            println!("disktest {name}: no restart of the block server in {MAX_ROUNDS} rounds");
            return 5;
        }
    }
    if let Some(c) = t.client
        && c.flush().is_err()
    {
        t.errors += 1;
    }
    println!(
        "disktest {name}: done: {g} rounds, {} writes acknowledged, every sector read back intact ({} reads); {} errors retried, the server replaced {} times",
        t.writes, t.reads, t.errors, t.replaced
    );
    0
}
