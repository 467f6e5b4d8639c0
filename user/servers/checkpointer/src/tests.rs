//! The store on a simulated disk that loses power at any write (every cut
//! point of every commit, with the writes not yet flushed lost or kept at
//! random and the write at the cut torn), flips bits, and is truncated.

use std::collections::BTreeMap;
use std::vec::Vec;

use sha2::{Digest, Sha256};

use crate::pool::{self, Bad, Image, Key};
use crate::store::*;

/// A disk with a write cache: writes since the last flush may be lost or
/// kept, in any combination, when the power goes.
#[derive(Clone)]
struct SimDev {
    disk: Vec<Page>,
    cache: Vec<(u64, Page)>,
    writes: usize,
    cut_at: Option<usize>,
    dead: bool,
    rng: u64,
}

impl SimDev {
    fn new(blocks: usize) -> SimDev {
        // Not zeros: what a fresh disk holds is anything.
        let mut disk = vec![[0u8; BLOCK]; blocks];
        for (i, b) in disk.iter_mut().enumerate() {
            b.fill((i * 7 + 1) as u8);
        }
        SimDev { disk, cache: Vec::new(), writes: 0, cut_at: None, dead: false, rng: 1 }
    }
    fn from(disk: Vec<Page>) -> SimDev {
        SimDev { disk, cache: Vec::new(), writes: 0, cut_at: None, dead: false, rng: 1 }
    }
    fn next(&mut self) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng
    }
    /// The power goes: each unflushed write reaches the disk or not.
    fn power_cut(&mut self) {
        let cache = core::mem::take(&mut self.cache);
        for (b, p) in cache {
            if self.next() % 2 == 0 {
                self.disk[b as usize] = p;
            }
        }
        self.dead = true;
    }
    /// What is on the disk after the power went (or now, if it never did).
    fn after_cut(mut self) -> Vec<Page> {
        if !self.dead {
            self.power_cut();
        }
        self.disk
    }
}

impl BlockDev for SimDev {
    fn blocks(&self) -> u64 {
        self.disk.len() as u64
    }
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError> {
        if self.dead {
            return Err(IoError(1));
        }
        *buf = self.cache.iter().rev().find(|c| c.0 == block).map_or(self.disk[block as usize], |c| c.1);
        Ok(())
    }
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError> {
        if self.dead {
            return Err(IoError(1));
        }
        if self.cut_at == Some(self.writes) {
            self.power_cut();
            // The write at the cut: torn after any number of its 8 sectors.
            let t = (self.next() % 9) as usize * 512;
            self.disk[block as usize][..t].copy_from_slice(&buf[..t]);
            return Err(IoError(1));
        }
        self.writes += 1;
        self.cache.push((block, *buf));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        if self.dead {
            return Err(IoError(1));
        }
        for (b, p) in core::mem::take(&mut self.cache) {
            self.disk[b as usize] = p;
        }
        Ok(())
    }
}

/// A committed state as the test knows it.
#[derive(Clone, Debug, PartialEq)]
struct State {
    seq: u64,
    pages: BTreeMap<u64, Page>,
    meta: Vec<u8>,
}

fn page(key: u64, version: u64) -> Page {
    let mut p = [0u8; BLOCK];
    for (i, w) in p.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&(key << 40 ^ version << 20 ^ i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    }
    p
}

/// What the store stands on, read back completely.
fn observed(s: &mut Store<SimDev>) -> Option<State> {
    let c = s.current.clone()?;
    let mut pages = BTreeMap::new();
    for &k in c.pages.keys() {
        let mut p = [0u8; BLOCK];
        assert_eq!(s.read_page(k, &mut p), Ok(Some(())));
        pages.insert(k, p);
    }
    Some(State { seq: c.seq, pages, meta: c.meta })
}

/// Commit `changes` on top of `prev` in the model and in the store.
fn step(prev: &State, changes: &[(u64, Option<Page>)], meta: &[u8]) -> State {
    let mut pages = prev.pages.clone();
    for (k, p) in changes {
        match p {
            Some(p) => pages.insert(*k, *p),
            None => pages.remove(k),
        };
    }
    State { seq: prev.seq + 1, pages, meta: meta.to_vec() }
}

fn refs(changes: &[(u64, Option<Page>)]) -> Vec<(u64, Option<&Page>)> {
    changes.iter().map(|(k, p)| (*k, p.as_ref())).collect()
}

/// A history of changes: growth, rewrites, unchanged pages passed again,
/// removals, a meta spanning several blocks, a map of several blocks.
fn history() -> Vec<(Vec<(u64, Option<Page>)>, Vec<u8>)> {
    let mut h = Vec::new();
    h.push(((0..10).map(|k| (k, Some(page(k, 1)))).collect(), b"one".to_vec()));
    h.push((vec![(3, Some(page(3, 2))), (4, Some(page(4, 1))), (11, Some(page(11, 2)))], vec![7u8; 5000]));
    h.push((vec![(0, None), (5, Some(page(5, 3))), (200, Some(page(200, 3)))], Vec::new()));
    h.push(((100..200).map(|k| (k, Some(page(k, 4)))).collect(), b"four".to_vec()));
    h.push((vec![(150, Some(page(150, 5))), (1, None)], b"five".to_vec()));
    h
}

const AREA: usize = 400;

/// The disk after committing the first `n` checkpoints of the history.
fn committed(n: usize) -> (Vec<Page>, Vec<State>) {
    let mut s = Store::open(SimDev::new(AREA));
    let mut states = vec![State { seq: 0, pages: BTreeMap::new(), meta: Vec::new() }];
    for (changes, meta) in history().into_iter().take(n) {
        let next = step(states.last().unwrap(), &changes, &meta);
        let c = s.commit(next.seq * 100, &refs(&changes), &meta).unwrap();
        assert_eq!(c.seq, next.seq);
        states.push(next);
    }
    (s.dev.after_cut(), states)
}

#[test]
fn an_empty_area_holds_no_checkpoint_and_did_not_fall_back() {
    let s = Store::open(SimDev::new(16));
    assert!(s.current.is_none());
    assert_eq!(s.slots, [Slot::Bad(Fault::NoRoot), Slot::Bad(Fault::NoRoot)]);
    assert!(!s.fell_back);
}

#[test]
fn checkpoints_read_back_whole_after_a_reboot() {
    let (disk, states) = committed(5);
    let mut s = Store::open(SimDev::from(disk));
    assert_eq!(observed(&mut s).as_ref(), states.last());
    assert_eq!(s.slots, [Slot::Good(5), Slot::Good(4)]);
    assert_eq!(s.current.as_ref().unwrap().time, 500);
    assert!(!s.fell_back);
}

#[test]
fn unchanged_pages_are_referenced_not_written() {
    let mut s = Store::open(SimDev::new(AREA));
    let all: Vec<(u64, Option<Page>)> = (0..20).map(|k| (k, Some(page(k, 1)))).collect();
    let c = s.commit(1, &refs(&all), b"m").unwrap();
    assert_eq!((c.pages, c.pages_written, c.blocks_written), (20, 20, 23));
    let before = s.dev.writes;
    // All twenty passed again, three of them changed.
    let mut again = all.clone();
    for k in [2usize, 9, 17] {
        again[k].1 = Some(page(k as u64, 2));
    }
    let c = s.commit(2, &refs(&again), b"m").unwrap();
    assert_eq!((c.pages, c.pages_written, c.blocks_written), (20, 3, 6));
    assert_eq!(s.dev.writes - before, 6);
    // Nothing changed: only the map, the meta and the root.
    let c = s.commit(3, &[], b"m").unwrap();
    assert_eq!((c.pages_written, c.blocks_written), (0, 3));
    let disk = s.dev.clone().after_cut();
    let mut r = Store::open(SimDev::from(disk));
    assert_eq!(r.current.as_ref().unwrap().pages_written, 0);
    let mut p = [0u8; BLOCK];
    r.read_page(9, &mut p).unwrap();
    assert_eq!(p, page(9, 2));
}

/// Every cut point of every commit of the history, three seeds each: after
/// the reboot the store holds exactly the previous checkpoint, or (a cut
/// at the root's write, the root whole) the new one; and the next commit
/// after it works.
#[test]
fn a_power_cut_at_every_write_leaves_one_whole_checkpoint() {
    let mut cuts = 0;
    for k in 1..=history().len() {
        let (disk, states) = committed(k - 1);
        let (changes, meta) = history()[k - 1].clone();
        let want_new = step(states.last().unwrap(), &changes, &meta);
        // How many writes the commit makes.
        let mut probe = Store::open(SimDev::from(disk.clone()));
        probe.commit(0, &refs(&changes), &meta).unwrap();
        let total = probe.dev.writes;
        for cut in 0..total {
            for seed in 1..=3u64 {
                let mut dev = SimDev::from(disk.clone());
                dev.cut_at = Some(cut);
                dev.rng = seed * 0x2545_F491_4F6C_DD1D + cut as u64;
                let mut s = Store::open(dev);
                let before = s.current.as_ref().map(|c| c.seq);
                assert!(s.commit(k as u64 * 100, &refs(&changes), &meta).is_err(), "cut {cut} of {total}");
                // The failed commit left the store on the previous checkpoint.
                assert_eq!(s.current.as_ref().map(|c| c.seq), before);
                let mut r = Store::open(SimDev::from(s.dev.after_cut()));
                let got = observed(&mut r);
                let old = (k > 1).then(|| states.last().unwrap().clone());
                if cut + 1 < total {
                    assert_eq!(got, old, "checkpoint {k}, cut at write {cut} of {total}, seed {seed}");
                    // The root not written: nothing newer was refused (an
                    // older root whose blocks were reused is superseded).
                    assert!(!r.fell_back, "cut {cut}: {:?} {:?}", r.slots, r.claims);
                } else {
                    assert!(got == old || got.as_ref() == Some(&want_new), "root write torn: {got:?}");
                }
                // The system goes on from there: the next commit is whole.
                let base = got.unwrap_or(State { seq: 0, pages: BTreeMap::new(), meta: Vec::new() });
                let next = step(&base, &[(7, Some(page(7, 99)))], b"after");
                r.commit(1, &[(7, Some(&page(7, 99)))], b"after").unwrap();
                let mut again = Store::open(SimDev::from(r.dev.after_cut()));
                assert_eq!(observed(&mut again), Some(next));
                cuts += 1;
            }
        }
    }
    assert!(cuts > 100, "{cuts} cuts");
}

/// Many checkpoints in a row with a cut at a random write of a random one,
/// over and over on the same disk: each boot finds the last one committed
/// or the one being committed at the cut, never anything else.
#[test]
fn repeated_cuts_on_one_disk() {
    let mut rng = 0x1234_5678_9abc_def1u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut disk = SimDev::new(300).after_cut();
    let mut acked: Option<State> = None;
    for _round in 0..200 {
        let mut s = Store::open(SimDev::from(disk.clone()));
        let got = observed(&mut s);
        let base = got.clone().unwrap_or(State { seq: 0, pages: BTreeMap::new(), meta: Vec::new() });
        assert!(base.seq >= acked.as_ref().map_or(0, |a| a.seq), "an acknowledged checkpoint was lost");
        if let Some(a) = &acked
            && base.seq == a.seq
        {
            assert_eq!(&base, a);
        }
        let n = 1 + next() % 12;
        let mut changes: Vec<(u64, Option<Page>)> = Vec::new();
        for _ in 0..n {
            let k = next() % 40;
            let p = if next() % 7 == 0 { None } else { Some(page(k, next() % 1000)) };
            changes.push((k, p));
        }
        s.dev.cut_at = Some((next() % (n + 4)) as usize);
        s.dev.rng = next() | 1;
        match s.commit(0, &refs(&changes), b"r") {
            Ok(_) => acked = Some(step(&base, &changes, b"r")),
            Err(e) => assert_eq!(e, Error::Io(1)),
        }
        disk = s.dev.after_cut();
    }
}

/// A flipped bit anywhere in the area: the store stands on a checkpoint
/// that was committed (the newest, or the previous one with the reason),
/// never on a mix.
#[test]
fn a_flipped_bit_falls_back_with_the_reason() {
    let (disk, states) = committed(4);
    let newest = Store::open(SimDev::from(disk.clone())).current.unwrap();
    let mut in_newest: Vec<u64> = newest.pages.values().map(|e| e.block).chain(newest.refs.iter().copied()).collect();
    in_newest.push(newest.slot as u64);
    let mut fell = 0;
    // Every block up to a few past the last one used; a bit in the
    // header, one in the body, one in the last byte.
    let last = *in_newest.iter().max().unwrap() as usize + 3;
    for b in 0..last {
        let bits: &[usize] = if b % 4 == 0 || b < 2 { &[0, 8 * 97 + 3, 8 * 4095 + 7] } else { &[8 * 97 + 3] };
        for &bit in bits {
            let mut d = disk.clone();
            d[b][bit / 8] ^= 1 << (bit % 8);
            let mut s = Store::open(SimDev::from(d));
            let got = observed(&mut s);
            let ok = states.iter().skip(1).any(|st| got.as_ref() == Some(st)) || got.is_none();
            assert!(ok, "block {b} bit {bit}: {got:?}");
            if in_newest.contains(&(b as u64)) {
                assert_ne!(got.as_ref().map(|g| g.seq), Some(4), "block {b} bit {bit}");
                assert!(s.fell_back, "block {b}");
                let slot = newest.slot;
                assert!(matches!(s.slots[slot], Slot::Bad(f) if f != Fault::NoRoot), "{:?}", s.slots);
                fell += 1;
            } else {
                assert_eq!(got.as_ref(), states.last(), "block {b} bit {bit} is not the newest's");
            }
        }
    }
    assert!(fell > 10);
}

#[test]
fn a_truncated_area_is_refused_with_the_reason() {
    let (mut disk, _) = committed(3);
    let area = disk.len() as u64;
    disk.truncate(disk.len() / 2);
    let s = Store::open(SimDev::from(disk.clone()));
    assert!(s.current.is_none());
    assert!(s.fell_back);
    assert_eq!(s.slots[0], Slot::Bad(Fault::AreaSize { root: area, area: area / 2 }));
    assert_eq!(alloc::format!("{}", Fault::AreaSize { root: 400, area: 200 }),
               "root written for an area of 400 blocks, the area has 200 (truncated?)");
    disk.truncate(2);
    let s = Store::open(SimDev::from(disk));
    assert_eq!(s.slots[0], Slot::Bad(Fault::TooSmall { blocks: 2 }));
    assert!(!s.fell_back && s.current.is_none());
}

fn root_checksum(b: &mut Page) {
    let sum: [u8; 32] = Sha256::digest(&b[..BLOCK - 32]).into();
    b[BLOCK - 32..].copy_from_slice(&sum);
}

#[test]
fn a_root_naming_a_record_of_the_wrong_type_is_refused() {
    let (mut disk, states) = committed(1);
    let c = Store::open(SimDev::from(disk.clone())).current.unwrap();
    // A root of checkpoint 2 in slot 1 whose map reference names the meta
    // block, with the meta block's true SHA-256.
    let meta_block = *c.refs.last().unwrap();
    let mut root = disk[c.slot];
    root[16..24].copy_from_slice(&2u64.to_le_bytes());
    root[96..100].copy_from_slice(&(meta_block as u32).to_le_bytes());
    let h: [u8; 32] = Sha256::digest(disk[meta_block as usize]).into();
    root[100..132].copy_from_slice(&h);
    root_checksum(&mut root);
    disk[1] = root;
    let mut s = Store::open(SimDev::from(disk.clone()));
    assert_eq!(s.slots[1], Slot::Bad(Fault::WrongType { block: meta_block, want: MAP, got: META }));
    assert!(s.fell_back);
    assert_eq!(observed(&mut s).as_ref(), states.last());
    // The root naming a page as its map: not a record at all.
    let page_block = c.pages.values().next().unwrap().block;
    root[96..100].copy_from_slice(&(page_block as u32).to_le_bytes());
    let h: [u8; 32] = Sha256::digest(disk[page_block as usize]).into();
    root[100..132].copy_from_slice(&h);
    root_checksum(&mut root);
    disk[1] = root;
    let s = Store::open(SimDev::from(disk.clone()));
    assert_eq!(s.slots[1], Slot::Bad(Fault::WrongType { block: page_block, want: MAP, got: 0 }));
    // A reference past the end of the area.
    root[96..100].copy_from_slice(&(AREA as u32 + 5).to_le_bytes());
    root_checksum(&mut root);
    disk[1] = root;
    let s = Store::open(SimDev::from(disk));
    assert_eq!(s.slots[1], Slot::Bad(Fault::OutOfArea { block: AREA as u64 + 5 }));
}

#[test]
fn a_record_of_another_checkpoint_is_refused() {
    let (mut disk, _) = committed(2);
    let s = Store::open(SimDev::from(disk.clone()));
    let c = s.current.unwrap();
    // Checkpoint 2's root, renumbered 3 (checksum made right): its records say 2.
    let mut root = disk[c.slot];
    root[16..24].copy_from_slice(&3u64.to_le_bytes());
    root_checksum(&mut root);
    disk[1 - c.slot] = root;
    let s = Store::open(SimDev::from(disk));
    assert_eq!(s.slots[1 - c.slot], Slot::Bad(Fault::WrongSeq { block: c.refs[0], seq: 2 }));
    assert_eq!(s.current.unwrap().seq, 2);
}

#[test]
fn a_full_area_is_a_clear_error_and_the_previous_checkpoint_stays() {
    let mut s = Store::open(SimDev::new(12));
    let five: Vec<(u64, Option<Page>)> = (0..5).map(|k| (k, Some(page(k, 1)))).collect();
    s.commit(1, &refs(&five), b"m").unwrap(); // 5 pages, a map, a meta: 7 of 10
    let writes = s.dev.writes;
    let four: Vec<(u64, Option<Page>)> = (0..4).map(|k| (k, Some(page(k, 2)))).collect();
    let e = s.commit(2, &refs(&four), b"m").unwrap_err();
    assert_eq!(e, Error::Full { needed: 6, free: 3 });
    assert_eq!(
        alloc::format!("{e}"),
        "the checkpoint area is full: 6 blocks needed, 3 free; the previous checkpoint is kept"
    );
    assert_eq!(s.dev.writes, writes, "a refused commit writes nothing");
    assert_eq!(s.current.as_ref().unwrap().seq, 1);
    let mut r = Store::open(SimDev::from(s.dev.clone().after_cut()));
    assert_eq!(r.current.as_ref().unwrap().seq, 1);
    let mut p = [0u8; BLOCK];
    r.read_page(3, &mut p).unwrap();
    assert_eq!(p, page(3, 1));
    // One page fits.
    assert_eq!(s.commit(3, &refs(&four[..1]), b"m").unwrap().seq, 2);
}

#[test]
fn a_checkpoint_larger_than_its_index_blocks_can_name_is_refused() {
    let mut s = Store::open(SimDev::new(8));
    let e = s.commit(0, &[], &vec![0u8; META_BYTES * (MAX_RECORD_BLOCKS + 1)]).unwrap_err();
    assert_eq!(e, Error::TooLarge { refs: MAX_RECORD_BLOCKS + 1 });
    assert_eq!(s.dev.writes, 0);
}

/// A meta of 120 blocks and a map: more record blocks than a root names.
fn big_meta() -> Vec<u8> {
    (0..META_BYTES * 120 + 7).map(|i| (i * 31 % 251) as u8).collect()
}

/// More map and meta blocks than a root names go through index blocks:
/// written, read back, whole or not at all at a cut at every write, and a
/// flipped bit in an index block falls back with the reason.
#[test]
fn a_checkpoint_of_more_record_blocks_than_a_root_names_goes_through_index_blocks() {
    let (disk, states) = committed(1);
    let ten: Vec<(u64, Option<Page>)> = (0..10).map(|k| (k, Some(page(k, 7)))).collect();
    let meta = big_meta();
    let want = step(states.last().unwrap(), &ten, &meta);
    let mut s = Store::open(SimDev::from(disk.clone()));
    let before = s.dev.writes;
    let c = s.commit(2, &refs(&ten), &meta).unwrap();
    // 10 pages, a map, 121 meta blocks, 2 index blocks, the root.
    assert_eq!((c.pages_written, c.blocks_written), (10, 135));
    let total = s.dev.writes - before;
    assert_eq!(total, 135);
    let after = s.dev.clone().after_cut();
    let mut r = Store::open(SimDev::from(after.clone()));
    assert_eq!(observed(&mut r), Some(want.clone()));
    let cur = r.current.clone().unwrap();
    assert_eq!((cur.refs.len(), cur.blocks), (124, 134));
    assert!(!r.fell_back);
    // The next commit of a few pages still names them all.
    let next = step(&want, &[(3, Some(page(3, 8)))], &meta);
    r.commit(3, &[(3, Some(&page(3, 8)))], &meta).unwrap();
    assert_eq!(observed(&mut Store::open(SimDev::from(r.dev.after_cut()))), Some(next));
    // A cut at every write: the old checkpoint or (the root whole) the new.
    for cut in 0..total {
        let mut dev = SimDev::from(disk.clone());
        dev.cut_at = Some(cut);
        dev.rng = 0x2545_F491_4F6C_DD1D + cut as u64;
        let mut s = Store::open(dev);
        assert!(s.commit(2, &refs(&ten), &meta).is_err());
        let got = observed(&mut Store::open(SimDev::from(s.dev.after_cut())));
        if cut + 1 < total {
            assert_eq!(got.as_ref(), states.last(), "cut at write {cut} of {total}");
        } else {
            assert!(got.as_ref() == states.last() || got.as_ref() == Some(&want));
        }
    }
    // A flipped bit in each index block: checkpoint 1, with the reason.
    let index: Vec<u64> = cur.refs[cur.refs.len() - 2..].to_vec();
    for &b in &index {
        let mut d = after.clone();
        d[b as usize][40] ^= 4;
        let mut s = Store::open(SimDev::from(d));
        assert_eq!(observed(&mut s).as_ref(), states.last(), "index block {b}");
        assert!(s.fell_back);
        assert_eq!(s.slots[cur.slot], Slot::Bad(Fault::RecordChecksum { block: b }));
    }
    // A root naming a map block where its index block belongs: refused.
    let mut d = after.clone();
    let mut root = d[cur.slot];
    let map_block = cur.refs[0];
    root[96..100].copy_from_slice(&(map_block as u32).to_le_bytes());
    let h: [u8; 32] = Sha256::digest(d[map_block as usize]).into();
    root[100..132].copy_from_slice(&h);
    root_checksum(&mut root);
    d[cur.slot] = root;
    let s = Store::open(SimDev::from(d));
    assert_eq!(s.slots[cur.slot], Slot::Bad(Fault::WrongType { block: map_block, want: INDEX, got: MAP }));
}

/// Opening with the pages' checks deferred to their reads, and refusing the
/// current checkpoint at the first damaged page, stands on what opening
/// with every page checked stands on: a flipped bit in every page block.
#[test]
fn deferred_page_checks_fall_back_as_opening_does() {
    let (disk, _) = committed(4);
    let newest = Store::open(SimDev::from(disk.clone())).current.unwrap();
    let older = {
        let mut d = disk.clone();
        d[newest.slot][0] ^= 0xff;
        Store::open(SimDev::from(d)).current.unwrap()
    };
    let mut tried = 0;
    for b in newest.pages.values().chain(older.pages.values()).map(|e| e.block) {
        let mut d = disk.clone();
        d[b as usize][97] ^= 8;
        let mut full = Store::open(SimDev::from(d.clone()));
        let mut lazy = Store::open_deferred(SimDev::from(d));
        'again: while let Some(c) = lazy.current.clone() {
            for &k in c.pages.keys() {
                let mut p = [0u8; BLOCK];
                if let Err(f) = lazy.read_page(k, &mut p) {
                    lazy.refuse_current(f);
                    continue 'again;
                }
            }
            break;
        }
        assert_eq!(lazy.current.as_ref().map(|c| c.seq), full.current.as_ref().map(|c| c.seq), "block {b}");
        assert_eq!(observed(&mut lazy), observed(&mut full), "block {b}");
        // The slot of the refused one says why, as opening's does.
        if let Some(c) = &full.current {
            assert_eq!(lazy.slots[c.slot], full.slots[c.slot]);
        }
        assert_eq!(lazy.slots[newest.slot], full.slots[newest.slot], "block {b}");
        assert_eq!(lazy.fell_back, full.fell_back, "block {b}");
        tried += 1;
    }
    assert!(tried > 50, "{tried}");
}

fn image(n: usize) -> Image {
    let mut records: Vec<(u64, [u64; pool::WORDS])> = (0..n as u64 - 1)
        .map(|i| {
            let pfn = 0x1e000 + i * 3;
            (pfn, [pfn | 4 << 32, i, 0x11 * i, 0x22 * i, 7, 1 << 63 | i])
        })
        .collect();
    records.push((0, [0, 0, 1, 2, 7, 1 << 63]));
    Image { epoch: 7, key: Key::Clear([9; 32]), counter: None, records }
}

const K: [u8; 32] = [9; 32];

#[test]
fn the_pool_image_round_trips() {
    for n in [1, 2, 100] {
        let im = image(n);
        assert_eq!(Image::decode(&im.encode(&K)), Ok(im.clone()));
        assert_eq!(pool::authentic(&im.encode(&K), &K), Ok(()));
        // With the key sealed by the TPM (a blob of any length it gives)
        // and the counter.
        for len in [1, 200, pool::MAX_KEY] {
            for c in [0, 1, u64::MAX] {
                let sealed = Image { key: Key::Sealed(vec![0x5c; len]), counter: Some(c), ..im.clone() };
                assert_eq!(Image::decode(&sealed.encode(&K)), Ok(sealed));
            }
        }
    }
}

#[test]
fn a_sealed_key_is_not_in_the_clear_and_a_malformed_key_is_refused() {
    let sealed = Image { key: Key::Sealed(vec![0x5c; 300]), counter: Some(5), ..image(3) };
    let b = sealed.encode(&K);
    assert!(!b.windows(32).any(|w| w == [9u8; 32]), "the clear key is in a sealed image");
    // An unknown form, a clear key not of 32 bytes, a sealed one empty or
    // longer than any blob, a length past the end.
    for (form, len) in [(2u32, 32u64), (0, 31), (1, 0), (1, pool::MAX_KEY as u64 + 1), (1, 1 << 40)] {
        let mut m = b.clone();
        m[12..16].copy_from_slice(&form.to_le_bytes());
        m[32..40].copy_from_slice(&len.to_le_bytes());
        assert_eq!(Image::decode(&m), Err(Bad::Key), "form {form} length {len}");
    }
    let mut cut = b.clone();
    cut[32..40].copy_from_slice(&301u64.to_le_bytes());
    assert_eq!(Image::decode(&cut), Err(Bad::Short));
}

#[test]
fn a_malformed_pool_image_is_refused_with_the_reason() {
    let im = image(5);
    let b = im.encode(&K);
    assert_eq!(Image::decode(&b[..b.len() - 1]), Err(Bad::Short));
    assert_eq!(Image::decode(&b[..20]), Err(Bad::Short));
    assert_eq!(Image::decode(b"nothing of the pool, a probe's record or so"), Err(Bad::Magic));
    let mut f = b.clone();
    f[8] = 1;
    assert_eq!(Image::decode(&f), Err(Bad::Format(1)));
    let mut z = image(5);
    z.records.clear();
    assert_eq!(Image::decode(&z.encode(&K)), Err(Bad::Count(0)));
    // A key that is not its frame, a frame twice, the kernel record not last.
    let mut k = image(5);
    k.records[1].0 += 1;
    assert_eq!(Image::decode(&k.encode(&K)), Err(Bad::Record(1)));
    let mut t = image(5);
    t.records[2] = t.records[1];
    assert_eq!(Image::decode(&t.encode(&K)), Err(Bad::Record(2)));
    let mut l = image(5);
    l.records.swap(0, 4);
    assert_eq!(Image::decode(&l.encode(&K)), Err(Bad::Record(0)));
    // Records out of frame order.
    let mut o = image(5);
    o.records.swap(1, 2);
    assert_eq!(Image::decode(&o.encode(&K)), Err(Bad::Record(2)));
    // A record sealed after the checkpoint's epoch, or in none; a kernel
    // record of an earlier epoch.
    for (i, sealed) in [(3, 8), (3, 0), (4, 6)] {
        let mut e = image(5);
        e.records[i].1[4] = sealed;
        assert_eq!(Image::decode(&e.encode(&K)), Err(Bad::Epoch(i)), "record {i} sealed in epoch {sealed}");
    }
}

/// Dirty tracking: a record unchanged since an earlier checkpoint keeps
/// the epoch it was sealed in, and a checkpoint holds such records beside
/// those of its own epoch.
#[test]
fn records_of_earlier_epochs_are_held_as_they_were_sealed() {
    let mut im = image(5);
    im.records[0].1[4] = 1;
    im.records[2].1[4] = 6;
    assert_eq!(Image::decode(&im.encode(&K)), Ok(im.clone()));
}

/// The runs of unchanged records READ reports are taken from the last
/// checkpoint's image by frame range, and only when the image holds
/// exactly that many records there.
#[test]
fn unchanged_runs_are_taken_from_the_last_image_exactly() {
    let im = image(10); // frames 0x1e000, 0x1e003, ... 0x1e018; the kernel record
    let keys = |r: &[(u64, [u64; pool::WORDS])]| r.iter().map(|x| x.0).collect::<Vec<_>>();
    assert_eq!(keys(im.unchanged(0x1e000, 0x1e001, 1).unwrap()), [0x1e000]);
    assert_eq!(keys(im.unchanged(0x1e001, 0x1e00a, 3).unwrap()), [0x1e003, 0x1e006, 0x1e009]);
    assert_eq!(im.unchanged(0x1e000, u64::MAX, 9).unwrap().len(), 9, "the kernel record is never in a run");
    for (first, end, count) in [(0x1e001, 0x1e00a, 2), (0x1e001, 0x1e00a, 4), (0x1e004, 0x1e006, 1), (0x1e006, 0x1e006, 0), (0, 1, 0)] {
        assert_eq!(im.unchanged(first, end, count), Err(Bad::Run { first, end, count }), "{first:#x}..{end:#x} {count}");
    }
}

/// Incremental commits (only the changed pages passed, the removed ones
/// named, the rest left as the current checkpoint has them) with a power
/// cut at every write of each: the reboot finds the previous checkpoint
/// whole or the new one, and every page as it was last written.
#[test]
fn incremental_commits_survive_a_cut_at_every_write() {
    let hist: Vec<Vec<(u64, Option<Page>)>> = vec![
        (0..40).map(|k| (k, Some(page(k, 1)))).collect(),
        vec![(3, Some(page(3, 2)))],
        vec![(5, Some(page(5, 3))), (39, None), (41, Some(page(41, 3)))],
        vec![],
        vec![(3, Some(page(3, 5))), (0, None)],
    ];
    let mut cuts = 0;
    for k in 1..=hist.len() {
        let mut s = Store::open(SimDev::new(AREA));
        let mut state = State { seq: 0, pages: BTreeMap::new(), meta: Vec::new() };
        for h in &hist[..k - 1] {
            state = step(&state, h, b"m");
            s.commit(1, &refs(h), b"m").unwrap();
        }
        let disk = s.dev.after_cut();
        let want = step(&state, &hist[k - 1], b"m");
        let mut probe = Store::open(SimDev::from(disk.clone()));
        let c = probe.commit(1, &refs(&hist[k - 1]), b"m").unwrap();
        let written = hist[k - 1].iter().filter(|c| c.1.is_some()).count() as u64;
        assert_eq!(c.pages_written, written, "commit {k} writes only the pages it was given");
        let total = probe.dev.writes;
        for cut in 0..total {
            let mut dev = SimDev::from(disk.clone());
            dev.cut_at = Some(cut);
            dev.rng = 0x9e37 * (cut + 1) as u64 + k as u64;
            let mut s = Store::open(dev);
            assert!(s.commit(1, &refs(&hist[k - 1]), b"m").is_err());
            let mut r = Store::open(SimDev::from(s.dev.after_cut()));
            let got = observed(&mut r);
            let old = (k > 1).then(|| state.clone());
            if cut + 1 < total {
                assert_eq!(got, old, "commit {k}, cut at write {cut} of {total}");
            } else {
                assert!(got == old || got.as_ref() == Some(&want), "commit {k}: root write torn: {got:?}");
            }
            cuts += 1;
        }
    }
    assert!(cuts > 40, "{cuts} cuts");
}

#[test]
fn the_meta_is_tagged_under_the_seals_key() {
    let im = Image { key: Key::Sealed(vec![0x5c; 40]), counter: Some(38), ..image(4) };
    let b = im.encode(&K);
    assert_eq!(pool::authentic(&b, &K), Ok(()));
    // Another key (another boot's, or a forger's) does not match.
    assert_eq!(pool::authentic(&b, &[8; 32]), Err(Bad::Tag));
    // Every byte of it is covered, the counter's among them.
    for i in 0..b.len() {
        let mut m = b.clone();
        m[i] ^= 0x10;
        assert_eq!(pool::authentic(&m, &K), Err(Bad::Tag), "byte {i}");
    }
    // An old checkpoint made to look new: its counter raised and tagged
    // again under a key other than the seal's.
    let forged = Image { counter: Some(40), ..im.clone() }.encode(&[0; 32]);
    assert_eq!(Image::decode(&forged).map(|f| f.counter), Ok(Some(40)));
    assert_eq!(pool::authentic(&forged, &K), Err(Bad::Tag));
    assert_eq!(pool::authentic(&b[..10], &K), Err(Bad::Short));
}

#[test]
fn a_sealed_key_needs_a_counter_and_the_counters_flag_is_checked() {
    let b = Image { key: Key::Sealed(vec![0x5c; 40]), counter: Some(3), ..image(2) }.encode(&K);
    for flag in [0u64, 2, u64::MAX] {
        let mut m = b.clone();
        m[40..48].copy_from_slice(&flag.to_le_bytes());
        assert_eq!(Image::decode(&m), Err(Bad::Counter), "flag {flag}");
    }
    // A clear key (no TPM) may have none.
    let c = image(2).encode(&K);
    assert_eq!(Image::decode(&c).map(|i| i.counter), Ok(None));
}

#[test]
fn freshness_is_judged_against_the_tpms_counter() {
    use pool::Freshness::*;
    assert_eq!(pool::judge(38, 38), Current);
    assert_eq!(pool::judge(39, 38), Unacknowledged);
    assert_eq!(pool::judge(37, 38), RolledBack);
    assert_eq!(pool::judge(0, 38), RolledBack);
    assert_eq!(pool::judge(40, 38), Ahead);
    assert_eq!(pool::judge(u64::MAX, u64::MAX), Current);
    assert_eq!(pool::judge(0, u64::MAX), RolledBack);
    assert_eq!(pool::judge(u64::MAX, 0), Ahead);
}

/// The generated protocol keeps the wire values the root task's shell was
/// built with, and serves the administrator alone.
#[test]
fn protocol_wire_values() {
    use crate::protocol::*;
    assert_eq!([CHECKPOINT, STATUS], [1, 2]);
    assert_eq!([OK, BAD_REQUEST, FULL, IO_ERROR, TOO_LARGE, KERNEL_REFUSED], [0, 1, 2, 3, 4, 5]);
    assert!(serves(CHECKPOINT, 0) && serves(STATUS, 0));
    assert!(!serves(CHECKPOINT, 1) && !serves(STATUS, 7), "a client's payload is refused");
    assert!(!serves(3, 0));
    assert_eq!(crate::status_of(&Error::Full { needed: 2, free: 1 }), FULL);
}
