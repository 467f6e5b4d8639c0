//! The checkpointer server (see `lib.rs` for its protocol and
//! docs/persistence.md for the design).  It finds the block server by name
//! (its range is the checkpoint area), opens the area, restores the probe
//! from the newest whole checkpoint, and then answers `CHECKPOINT` and
//! `STATUS`, taking a checkpoint by itself every `arg` ms (bits 0-31) when that is not 0.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use keep_abi::{Return, SELF_ASPACE, Sender, Tag, err, recv, rights, slot};
use keep_blk::{Client, Error as BlkError};
use keep_checkpointer::probe::{self, PAGES, Probe};
use keep_checkpointer::store::{self, BLOCK, BlockDev, Committed, IoError, Page, Slot, Store};
use keep_checkpointer::*;
use keep_rt::println;
use keep_system::names;

keep_rt::entry!(main);

const RET: u64 = slot::FIRST_FREE;
const BLK: u64 = 0x20;
const RTC: u64 = 0x21;
/// Sectors of a 4 KiB block.
const PER: u64 = (BLOCK / keep_blk::SECTOR) as u64;

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

struct Server {
    store: Store<Disk>,
    probe: Probe,
    /// What this boot found (one line).
    boot: String,
    taken: u64,
    failed: u64,
    last: Option<Committed>,
    last_error: Option<String>,
    verbose: bool,
}

impl Server {
    /// The probe from the store's checkpoint, checked page by page against
    /// the record and against the state its step must be.
    fn restore(&mut self) {
        let Some(c) = self.store.current.clone() else {
            self.boot = if self.store.fell_back {
                format!(
                    "no whole checkpoint: root A {}; root B {}; starting afresh",
                    slot_str(&self.store, 0),
                    slot_str(&self.store, 1)
                )
            } else {
                String::from("no checkpoint in the area; starting afresh")
            };
            return;
        };
        let Some(p) = Probe::decode(&c.meta) else {
            self.boot = format!("checkpoint {} holds no probe record; starting afresh", c.seq);
            return;
        };
        let mut page = [0u8; BLOCK];
        let mut intact = 0;
        for k in 0..PAGES {
            if matches!(self.store.read_page(k as u64, &mut page), Ok(Some(()))) && p.page_ok(k, &page) {
                intact += 1;
            }
        }
        let exact = Probe::replay(p.step) == p;
        let fell = if self.store.fell_back {
            let other = 1 - c.slot;
            format!("; fell back from root {}: {}", ["A", "B"][other], slot_str(&self.store, other))
        } else {
            String::new()
        };
        if intact != PAGES || !exact {
            self.boot = format!(
                "checkpoint {}: STATE WRONG ({intact} of {PAGES} pages intact, {}the state of step {}){fell}; starting afresh",
                c.seq,
                if exact { "" } else { "not " },
                p.step
            );
            return;
        }
        self.boot = format!(
            "resumed checkpoint {} of {} ({} KiB): probe at step {}, {PAGES} pages intact, exactly step {}'s state{fell}",
            c.seq,
            date(c.time),
            c.blocks * BLOCK as u64 / 1024,
            p.step,
            p.step
        );
        self.probe = p;
    }

    fn checkpoint(&mut self) -> Result<Committed, store::Error> {
        let mut next = self.probe.clone();
        let dirtied = next.advance();
        // The first checkpoint (or one after a store without the probe's
        // pages) holds every page; later ones what the step rewrote.
        let whole = self.store.current.as_ref().is_none_or(|c| c.pages.len() != PAGES || Probe::decode(&c.meta).is_none());
        let keys: Vec<usize> = if whole { (0..PAGES).collect() } else { dirtied };
        let mut pages: Vec<(u64, Page)> = Vec::with_capacity(keys.len());
        for k in keys {
            let mut p = [0u8; BLOCK];
            probe::fill(&mut p, k, next.gens[k]);
            pages.push((k as u64, p));
        }
        let changes: Vec<(u64, Option<&Page>)> = pages.iter().map(|(k, p)| (*k, Some(p))).collect();
        let seq = self.store.current.as_ref().map_or(1, |c| c.seq + 1);
        if self.verbose {
            println!("checkpointer: checkpoint {seq} begins (step {})", next.step);
        }
        let r = self.store.commit(now(), &changes, &next.encode());
        match &r {
            Ok(c) => {
                self.probe = next;
                self.taken += 1;
                self.last = Some(*c);
                if self.verbose {
                    println!("checkpointer: checkpoint {} committed (step {}, {} pages written)", c.seq, self.probe.step, c.pages_written);
                }
            }
            Err(e) => {
                self.failed += 1;
                self.last_error = Some(format!("{e}"));
                println!("checkpointer: checkpoint {seq} failed: {e}");
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
        t += &format!("probe: step {}, {PAGES} pages\n", self.probe.step);
        t += &format!("this instance: {} checkpoints taken, {} failed", self.taken, self.failed);
        if let Some(e) = &self.last_error {
            t += &format!(" (last: {e})");
        }
        t
    }
}

/// The next call (the return capability's slot named again: the block
/// server's and the clock's lookups name theirs).
fn receive(wait: u64) -> keep_abi::Msg {
    keep_rt::ipc_buffer().set_recv_slots(&[RET]);
    recv(Tag::new(0).with_slots(1), wait)
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
    let _ = now();
    let blocks = disk.blocks;
    let store = Store::open(disk);
    let mut s = Server {
        store,
        probe: Probe::default(),
        boot: String::new(),
        taken: 0,
        failed: 0,
        last: None,
        last_error: None,
        verbose: arg >> 32 & 1 != 0,
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
        let (words, text) = match (m.payload, m.tag.label()) {
            (0, CHECKPOINT) => match s.checkpoint() {
                Ok(c) => ([OK, c.seq, c.pages_written, c.blocks_written], None),
                Err(e) => ([status_of(&e), 0, 0, 0], Some(format!("{e}"))),
            },
            (0, STATUS) => {
                let (seq, time, pages) = s.store.current.as_ref().map_or((0, 0, 0), |c| (c.seq, c.time, c.pages.len() as u64));
                ([OK, seq, time, pages], Some(s.report()))
            }
            _ => ([BAD_REQUEST, 0, 0, 0], None),
        };
        let tag = match text {
            Some(t) => {
                keep_rt::ipc_buffer().set_string(t.as_bytes());
                Tag::new(0).with_string()
            }
            None => Tag::new(0),
        };
        let _ = Return(RET).reply(tag, words);
        m = receive(wait);
    }
}
