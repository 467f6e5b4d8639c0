//! The checkpoint store (docs/persistence.md, "On the disk"): checkpoints
//! on a range of blocks, each there whole or not at all.
//!
//! The area is a run of 4 KiB blocks.  Blocks 0 and 1 are the two roots;
//! every other block is free or holds a record of one checkpoint:
//!
//! - a **page**: 4096 bytes of content, no header (its SHA-256 is in the map);
//! - a **map** block: a header and up to [`MAP_ENTRIES`] entries (key,
//!   block, SHA-256 of the page), sorted by key;
//! - a **meta** block: a header and up to [`META_BYTES`] bytes of the
//!   checkpoint's object records (opaque to the store).
//!
//! A root holds the sequence number, the time, the area's size, the number
//! of pages, and a reference (block, SHA-256 of the whole block) to each
//! map and meta block; its last 32 bytes are the SHA-256 of the rest.  A
//! checkpoint with more map and meta blocks than a root names
//! ([`MAX_REFS`]) has its references in **index** blocks (a header and up
//! to [`INDEX_REFS`] references each), and the root references those.
//!
//! A commit writes the new pages, map and meta blocks into blocks the
//! current checkpoint does not use, flushes, then writes the root into the
//! slot the current checkpoint's root is not in, and flushes again.  Until
//! that root is on the disk the current checkpoint is untouched; after it,
//! the new one is whole.  A page whose content equals the current
//! checkpoint's for its key is referenced, not written again.
//!
//! Opening reads both roots and checks the newest candidate completely
//! (root checksum, area size, every reference in the area, every record's
//! type, sequence number and SHA-256, every page's SHA-256); if anything is
//! wrong it says what ([`Fault`]) and falls back to the other root.
//! [`Store::open_deferred`] checks everything but the pages' contents,
//! which its user checks as it reads them: a page found damaged then is
//! reported with [`Store::refuse_current`], which falls back to the other
//! root as opening would have.

use alloc::collections::BTreeMap;
use alloc::vec;
use alloc::vec::Vec;
use core::fmt;

use sha2::{Digest, Sha256};

pub const BLOCK: usize = 4096;
pub type Page = [u8; BLOCK];
pub type Hash = [u8; 32];

const ROOT_MAGIC: &[u8; 8] = b"KEEPCKRT";
const RECORD_MAGIC: &[u8; 8] = b"KEEPCKRC";
pub const FORMAT: u32 = 1;

/// Record types (a root's is in its header too).
pub const ROOT: u32 = 1;
pub const MAP: u32 = 2;
pub const META: u32 = 3;
pub const INDEX: u32 = 4;

const HEADER: usize = 32;
const ENTRY: usize = 48;
/// Map entries in one map block.
pub const MAP_ENTRIES: usize = (BLOCK - HEADER) / ENTRY;
/// Meta bytes in one meta block.
pub const META_BYTES: usize = BLOCK - HEADER;
const REFS_AT: usize = 96;
const REF: usize = 36;
const ROOT_SUM_AT: usize = BLOCK - 32;
/// References (map and meta blocks) one root holds.
pub const MAX_REFS: usize = (ROOT_SUM_AT - REFS_AT) / REF;
/// References one index block holds.
pub const INDEX_REFS: usize = (BLOCK - HEADER) / REF;
/// Map and meta blocks a checkpoint may have: named by the root, or by at
/// most MAX_REFS index blocks.
pub const MAX_RECORD_BLOCKS: usize = MAX_REFS * INDEX_REFS;
/// The first block records go in (0 and 1 are the roots).
pub const FIRST_DATA: u64 = 2;

/// An error of the device itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError(pub u64);

/// The device: `blocks()` 4 KiB blocks; a write is durable only after a
/// `flush` that follows it (a power cut may lose or tear any write not
/// flushed yet).
pub trait BlockDev {
    fn blocks(&self) -> u64;
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError>;
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError>;
    fn flush(&mut self) -> Result<(), IoError>;
}

/// Why a root's checkpoint was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The device failed a read.
    Io(u64),
    /// The area is too small to hold even the two roots.
    TooSmall { blocks: u64 },
    /// The slot holds no root (never written, or not a root at all).
    NoRoot,
    /// The root's own checksum is wrong (torn or flipped).
    RootChecksum,
    /// A root of another format.
    Format(u32),
    /// The root was written for an area of another size (truncated or moved).
    AreaSize { root: u64, area: u64 },
    /// The root's counts do not fit one another.
    BadRoot,
    /// A reference outside the area's data blocks.
    OutOfArea { block: u64 },
    /// A referenced block's SHA-256 is not the one the root names.
    RecordChecksum { block: u64 },
    /// A referenced block is not a record of the type the root names.
    WrongType { block: u64, want: u32, got: u32 },
    /// A record of another checkpoint.
    WrongSeq { block: u64, seq: u64 },
    /// A map block's entries are not sorted, or its count is wrong.
    BadMap { block: u64 },
    /// A page's content does not match its map entry's SHA-256.
    PageChecksum { key: u64, block: u64 },
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            Fault::Io(e) => write!(f, "the device failed a read (error {e})"),
            Fault::TooSmall { blocks } => write!(f, "the area has {blocks} blocks, too few for a checkpoint"),
            Fault::NoRoot => write!(f, "no root"),
            Fault::RootChecksum => write!(f, "root checksum wrong (torn or flipped)"),
            Fault::Format(v) => write!(f, "root of format {v}, not {FORMAT}"),
            Fault::AreaSize { root, area } => {
                write!(f, "root written for an area of {root} blocks, the area has {area} (truncated?)")
            }
            Fault::BadRoot => write!(f, "root counts inconsistent"),
            Fault::OutOfArea { block } => write!(f, "root names block {block}, outside the area"),
            Fault::RecordChecksum { block } => write!(f, "block {block}: checksum wrong"),
            Fault::WrongType { block, want, got } => {
                write!(f, "block {block}: a record of type {got} where the root names type {want}")
            }
            Fault::WrongSeq { block, seq } => write!(f, "block {block}: a record of checkpoint {seq}"),
            Fault::BadMap { block } => write!(f, "block {block}: map entries out of order"),
            Fault::PageChecksum { key, block } => write!(f, "page {key:#x} (block {block}): checksum wrong"),
        }
    }
}

/// Why a commit was refused or failed (the current checkpoint stays).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    Io(u64),
    /// The area has `free` blocks the current checkpoint does not use; the
    /// new one needs `needed`.  Nothing was written.
    Full { needed: u64, free: u64 },
    /// More map and meta blocks than a root can name.
    TooLarge { refs: usize },
    /// A page fetched for writing was not what its hash said (commit_with).
    Changed { key: u64 },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match *self {
            Error::Io(e) => write!(f, "the device failed a write (error {e}); the previous checkpoint is kept"),
            Error::Full { needed, free } => write!(
                f,
                "the checkpoint area is full: {needed} blocks needed, {free} free; the previous checkpoint is kept"
            ),
            Error::TooLarge { refs } => {
                write!(f, "the checkpoint needs {refs} map and meta blocks, a root names at most {MAX_REFS}")
            }
            Error::Changed { key } => {
                write!(f, "page {key:#x} changed between its two reads; the previous checkpoint is kept")
            }
        }
    }
}

impl From<IoError> for Error {
    fn from(e: IoError) -> Self {
        Error::Io(e.0)
    }
}

/// A page of the committed checkpoint: where it is and its SHA-256.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub block: u64,
    pub hash: Hash,
}

/// The committed checkpoint the store stands on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Checkpoint {
    pub seq: u64,
    pub time: u64,
    /// Which root slot (0 or 1) names it.
    pub slot: usize,
    pub pages: BTreeMap<u64, Entry>,
    pub meta: Vec<u8>,
    /// Blocks it occupies (pages, map, meta; not its root).
    pub blocks: u64,
    /// Pages this checkpoint wrote (the others it shares with earlier ones).
    pub pages_written: u64,
    /// Its map and meta blocks (and index blocks, when it has them).
    pub refs: Vec<u64>,
}

/// What opening found in each root slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A whole checkpoint of this sequence number.
    Good(u64),
    Bad(Fault),
}

/// What a commit did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Committed {
    pub seq: u64,
    pub pages: u64,
    pub pages_written: u64,
    /// Every block written, the root's included.
    pub blocks_written: u64,
}

pub struct Store<D: BlockDev> {
    pub dev: D,
    pub current: Option<Checkpoint>,
    /// What opening found in roots 0 and 1.
    pub slots: [Slot; 2],
    /// The sequence number each root slot's root claims, when the root
    /// itself is whole (its records may still be refused).
    pub claims: [Option<u64>; 2],
    /// True when a root that may be newer than the checkpoint taken (its
    /// own checksum wrong, or whole and newer with its records refused)
    /// was refused: the store fell back.  A refused root older than the
    /// one taken is a superseded checkpoint whose blocks were reused.
    pub fell_back: bool,
    /// The other root's whole checkpoint, older than `current`, while no
    /// commit has reused its blocks: what [`Store::refuse_current`] falls
    /// back to.
    pub standby: Option<Checkpoint>,
}

pub fn sha(b: &[u8]) -> Hash {
    Sha256::digest(b).into()
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

/// A root as read (checksum and format already checked).
struct Root {
    seq: u64,
    time: u64,
    pages: u64,
    map_blocks: usize,
    meta_len: usize,
    pages_written: u64,
    /// Map and meta blocks.
    nrefs: usize,
    /// Index blocks (0: the root names the map and meta blocks itself).
    index_blocks: usize,
    /// The root's own references: the map and meta blocks, or the index
    /// blocks.
    refs: Vec<(u64, Hash)>,
}

fn parse_root(b: &Page, slot: usize, area: u64) -> Result<Root, Fault> {
    // A magic a few bits off is a damaged root, not an empty slot.
    let off: u32 = b[0..8].iter().zip(ROOT_MAGIC).map(|(x, y)| (x ^ y).count_ones()).sum();
    if off > 4 {
        return Err(Fault::NoRoot);
    }
    if off != 0 || sha(&b[..ROOT_SUM_AT]) != b[ROOT_SUM_AT..] {
        return Err(Fault::RootChecksum);
    }
    if u32_at(b, 12) != ROOT {
        return Err(Fault::WrongType { block: slot as u64, want: ROOT, got: u32_at(b, 12) });
    }
    let format = u32_at(b, 8);
    if format != FORMAT {
        return Err(Fault::Format(format));
    }
    let root_area = u64_at(b, 32);
    if root_area != area {
        return Err(Fault::AreaSize { root: root_area, area });
    }
    let nrefs = u32_at(b, 48) as usize;
    let map_blocks = u32_at(b, 52) as usize;
    let pages = u64_at(b, 40);
    let meta_len = u64_at(b, 56) as usize;
    let index_blocks = u32_at(b, 72) as usize;
    let direct = index_blocks == 0 && nrefs <= MAX_REFS;
    let indirect = nrefs > MAX_REFS && nrefs <= MAX_RECORD_BLOCKS && index_blocks == nrefs.div_ceil(INDEX_REFS);
    if !(direct || indirect)
        || map_blocks > nrefs
        || (pages as usize).div_ceil(MAP_ENTRIES) != map_blocks
        || meta_len.div_ceil(META_BYTES) != nrefs - map_blocks
    {
        return Err(Fault::BadRoot);
    }
    let refs = (0..if direct { nrefs } else { index_blocks })
        .map(|i| {
            let at = REFS_AT + i * REF;
            (u32_at(b, at) as u64, b[at + 4..at + 36].try_into().unwrap())
        })
        .collect();
    Ok(Root {
        seq: u64_at(b, 16),
        time: u64_at(b, 24),
        pages,
        map_blocks,
        meta_len,
        pages_written: u64_at(b, 64),
        nrefs,
        index_blocks,
        refs,
    })
}

fn record_header(b: &mut Page, kind: u32, index: u32, seq: u64, count: u32) {
    b[0..8].copy_from_slice(RECORD_MAGIC);
    put32(b, 8, kind);
    put32(b, 12, index);
    put64(b, 16, seq);
    put32(b, 24, count);
}

impl<D: BlockDev> Store<D> {
    /// Opens the area: the newest whole checkpoint, if any.
    pub fn open(dev: D) -> Store<D> {
        Store::open_with(dev, true)
    }

    /// Opens the area checking everything but the pages' contents (their
    /// SHA-256 is read from the map, the pages are not read): the user
    /// checks each page as it reads it, and reports one found damaged with
    /// [`Store::refuse_current`].
    pub fn open_deferred(dev: D) -> Store<D> {
        Store::open_with(dev, false)
    }

    fn open_with(mut dev: D, check_pages: bool) -> Store<D> {
        let area = dev.blocks();
        let mut found: [Result<Checkpoint, Fault>; 2] = [Err(Fault::NoRoot), Err(Fault::NoRoot)];
        for (s, f) in found.iter_mut().enumerate() {
            *f = load(&mut dev, s, area, check_pages);
        }
        let slots = [0, 1].map(|s| match &found[s] {
            Ok(c) => Slot::Good(c.seq),
            Err(e) => Slot::Bad(*e),
        });
        let [a, b] = found;
        let (current, standby) = match (a, b) {
            (Ok(a), Ok(b)) => {
                if a.seq >= b.seq {
                    (Some(a), Some(b))
                } else {
                    (Some(b), Some(a))
                }
            }
            (Ok(c), Err(_)) | (Err(_), Ok(c)) => (Some(c), None),
            (Err(_), Err(_)) => (None, None),
        };
        let mut claims = [None, None];
        for (s, c) in claims.iter_mut().enumerate() {
            let mut buf = [0u8; BLOCK];
            if dev.read(s as u64, &mut buf).is_ok() && parse_root(&buf, s, area).is_ok() {
                *c = Some(u64_at(&buf, 16));
            }
        }
        // A root there (not an empty slot) that was refused, while it could
        // have been newer than the one taken: the store fell back.
        let newest = current.as_ref().map_or(0, |c| c.seq);
        let refused = |i: usize| {
            matches!(slots[i], Slot::Bad(f) if f != Fault::NoRoot && !matches!(f, Fault::TooSmall { .. }))
                && claims[i].is_none_or(|c| c > newest)
        };
        let fell_back = refused(0) || refused(1);
        Store { dev, current, slots, claims, fell_back, standby }
    }

    /// The current checkpoint is refused for `fault` (a page its user found
    /// damaged, after [`Store::open_deferred`]): the store stands on the
    /// other root's checkpoint if it was whole, or on none, and has fallen
    /// back, as opening would have with the pages checked.
    pub fn refuse_current(&mut self, fault: Fault) {
        if let Some(c) = self.current.take() {
            self.slots[c.slot] = Slot::Bad(fault);
            self.current = self.standby.take();
            self.fell_back = true;
        }
    }

    /// The place and SHA-256 of page `key` of the current checkpoint.
    pub fn entry(&self, key: u64) -> Option<Entry> {
        self.current.as_ref().and_then(|c| c.pages.get(&key)).copied()
    }

    /// The content of page `key` of the current checkpoint, checked
    /// against its SHA-256 (None: no such page).
    pub fn read_page(&mut self, key: u64, out: &mut Page) -> Result<Option<()>, Fault> {
        let Some(e) = self.current.as_ref().and_then(|c| c.pages.get(&key)).copied() else { return Ok(None) };
        self.dev.read(e.block, out).map_err(|e| Fault::Io(e.0))?;
        if sha(out) != e.hash {
            return Err(Fault::PageChecksum { key, block: e.block });
        }
        Ok(Some(()))
    }

    /// Blocks of the area no committed checkpoint record uses.
    pub fn free_blocks(&self) -> u64 {
        let area = self.dev.blocks();
        area.saturating_sub(FIRST_DATA) - self.current.as_ref().map_or(0, |c| c.blocks)
    }

    /// Commits a new checkpoint: the current one's pages with `changes`
    /// applied (Some: the page's new content; None: the page removed) and
    /// `meta` as its object records.  Whole or not at all: on any error the
    /// current checkpoint stays current, on the disk and here.
    pub fn commit(&mut self, time: u64, changes: &[(u64, Option<&Page>)], meta: &[u8]) -> Result<Committed, Error> {
        let hashed: Vec<(u64, Option<Hash>)> = changes.iter().map(|&(k, p)| (k, p.map(|p| sha(p)))).collect();
        let mut fetch = |key: u64, out: &mut Page| {
            // The last change of a key is the one that counts.
            let p = changes.iter().rev().find(|c| c.0 == key).and_then(|c| c.1).ok_or(IoError(u64::MAX))?;
            out.copy_from_slice(p);
            Ok(())
        };
        self.commit_with(time, &hashed, &mut fetch, meta)
    }

    /// The same with the pages' contents fetched by key when they are
    /// written (`changes` gives each changed key's SHA-256, or None for a
    /// removal): a commit of many pages needs no memory for them.  A page
    /// fetched with another hash than it was given is an error
    /// (`Error::Changed`), before the root is written.
    pub fn commit_with(
        &mut self,
        time: u64,
        changes: &[(u64, Option<Hash>)],
        fetch: &mut dyn FnMut(u64, &mut Page) -> Result<(), IoError>,
        meta: &[u8],
    ) -> Result<Committed, Error> {
        let area = self.dev.blocks();
        let seq = self.current.as_ref().map_or(1, |c| c.seq + 1);
        let mut pages = self.current.as_ref().map_or(BTreeMap::new(), |c| c.pages.clone());
        // The pages to write: changed content only.
        let mut write: Vec<(u64, Hash)> = Vec::new();
        for &(key, hash) in changes {
            match hash {
                None => {
                    pages.remove(&key);
                    write.retain(|w| w.0 != key);
                }
                Some(h) => {
                    write.retain(|w| w.0 != key);
                    if self.current.as_ref().and_then(|c| c.pages.get(&key)).is_some_and(|e| e.hash == h) {
                        let old = self.current.as_ref().unwrap().pages[&key];
                        pages.insert(key, old);
                    } else {
                        write.push((key, h));
                        pages.insert(key, Entry { block: u64::MAX, hash: h });
                    }
                }
            }
        }
        let map_blocks = pages.len().div_ceil(MAP_ENTRIES);
        let meta_blocks = meta.len().div_ceil(META_BYTES);
        let refs = map_blocks + meta_blocks;
        if refs > MAX_RECORD_BLOCKS {
            return Err(Error::TooLarge { refs });
        }
        let index_blocks = if refs > MAX_REFS { refs.div_ceil(INDEX_REFS) } else { 0 };
        let needed = (write.len() + refs + index_blocks) as u64;
        // Blocks the current checkpoint uses stay untouched.
        let mut used = vec![false; area as usize];
        if let Some(c) = &self.current {
            for &b in c.record_blocks().iter() {
                used[b as usize] = true;
            }
        }
        let free: Vec<u64> = (FIRST_DATA..area).filter(|&b| !used[b as usize]).take(needed as usize).collect();
        if (free.len() as u64) < needed || area < FIRST_DATA {
            return Err(Error::Full { needed, free: self.free_blocks() });
        }
        let mut next = free.into_iter();
        let mut page = [0u8; BLOCK];
        for &(key, h) in &write {
            let b = next.next().unwrap();
            fetch(key, &mut page)?;
            if sha(&page) != h {
                return Err(Error::Changed { key });
            }
            self.dev.write(b, &page)?;
            pages.insert(key, Entry { block: b, hash: h });
        }
        let mut root_refs: Vec<(u64, Hash)> = Vec::with_capacity(refs);
        let entries: Vec<(u64, Entry)> = pages.iter().map(|(k, e)| (*k, *e)).collect();
        let mut buf = [0u8; BLOCK];
        for (i, chunk) in entries.chunks(MAP_ENTRIES).enumerate() {
            buf.fill(0);
            record_header(&mut buf, MAP, i as u32, seq, chunk.len() as u32);
            for (j, (k, e)) in chunk.iter().enumerate() {
                let at = HEADER + j * ENTRY;
                put64(&mut buf, at, *k);
                put32(&mut buf, at + 8, e.block as u32);
                buf[at + 16..at + 48].copy_from_slice(&e.hash);
            }
            let b = next.next().unwrap();
            self.dev.write(b, &buf)?;
            root_refs.push((b, sha(&buf)));
        }
        for (i, chunk) in meta.chunks(META_BYTES).enumerate() {
            buf.fill(0);
            record_header(&mut buf, META, i as u32, seq, chunk.len() as u32);
            buf[HEADER..HEADER + chunk.len()].copy_from_slice(chunk);
            let b = next.next().unwrap();
            self.dev.write(b, &buf)?;
            root_refs.push((b, sha(&buf)));
        }
        // More than the root names: index blocks name them, the root those.
        let mut all_refs: Vec<u64> = root_refs.iter().map(|r| r.0).collect();
        if index_blocks > 0 {
            let inner = core::mem::take(&mut root_refs);
            for (i, chunk) in inner.chunks(INDEX_REFS).enumerate() {
                buf.fill(0);
                record_header(&mut buf, INDEX, i as u32, seq, chunk.len() as u32);
                for (j, (b, h)) in chunk.iter().enumerate() {
                    let at = HEADER + j * REF;
                    put32(&mut buf, at, *b as u32);
                    buf[at + 4..at + 36].copy_from_slice(h);
                }
                let b = next.next().unwrap();
                self.dev.write(b, &buf)?;
                root_refs.push((b, sha(&buf)));
                all_refs.push(b);
            }
        }
        // Every record on the disk before the root that names them.
        self.dev.flush()?;
        buf.fill(0);
        buf[0..8].copy_from_slice(ROOT_MAGIC);
        put32(&mut buf, 8, FORMAT);
        put32(&mut buf, 12, ROOT);
        put64(&mut buf, 16, seq);
        put64(&mut buf, 24, time);
        put64(&mut buf, 32, area);
        put64(&mut buf, 40, pages.len() as u64);
        put32(&mut buf, 48, refs as u32);
        put32(&mut buf, 52, map_blocks as u32);
        put64(&mut buf, 56, meta.len() as u64);
        put64(&mut buf, 64, write.len() as u64);
        put32(&mut buf, 72, index_blocks as u32);
        for (i, (b, h)) in root_refs.iter().enumerate() {
            let at = REFS_AT + i * REF;
            put32(&mut buf, at, *b as u32);
            buf[at + 4..at + 36].copy_from_slice(h);
        }
        let sum = sha(&buf[..ROOT_SUM_AT]);
        buf[ROOT_SUM_AT..].copy_from_slice(&sum);
        let slot = self.current.as_ref().map_or(0, |c| 1 - c.slot);
        self.dev.write(slot as u64, &buf)?;
        self.dev.flush()?;
        let written = write.len() as u64;
        let c = Checkpoint {
            seq,
            time,
            slot,
            blocks: (pages.len() + all_refs.len()) as u64,
            pages,
            meta: meta.to_vec(),
            pages_written: written,
            refs: all_refs,
        };
        self.slots[slot] = Slot::Good(seq);
        self.claims[slot] = Some(seq);
        let n = c.pages.len() as u64;
        self.current = Some(c);
        // The other root's checkpoint is superseded: its blocks may be reused.
        self.standby = None;
        self.fell_back = false;
        Ok(Committed { seq, pages: n, pages_written: written, blocks_written: needed + 1 })
    }
}

impl Checkpoint {
    /// The data blocks this checkpoint's records use (pages, map, meta).
    fn record_blocks(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.pages.values().map(|e| e.block).collect();
        v.extend(self.refs.iter().copied());
        v
    }
}

/// Reads and checks the checkpoint root `slot` names, completely.
fn load<D: BlockDev>(dev: &mut D, slot: usize, area: u64, check_pages: bool) -> Result<Checkpoint, Fault> {
    if area < FIRST_DATA + 1 {
        return Err(Fault::TooSmall { blocks: area });
    }
    let mut buf = [0u8; BLOCK];
    dev.read(slot as u64, &mut buf).map_err(|e| Fault::Io(e.0))?;
    let root = parse_root(&buf, slot, area)?;
    let mut pages = BTreeMap::new();
    let mut meta = Vec::with_capacity(root.meta_len);
    let mut last: Option<u64> = None;
    let mut seen = BTreeMap::new();
    // The map and meta blocks: named by the root, or by its index blocks.
    let mut index_list = Vec::new();
    let refs_of: Vec<(u64, Hash)> = if root.index_blocks == 0 {
        root.refs.clone()
    } else {
        let mut inner = Vec::with_capacity(root.nrefs);
        for (i, &(b, h)) in root.refs.iter().enumerate() {
            if !(FIRST_DATA..area).contains(&b) {
                return Err(Fault::OutOfArea { block: b });
            }
            dev.read(b, &mut buf).map_err(|e| Fault::Io(e.0))?;
            if sha(&buf) != h {
                return Err(Fault::RecordChecksum { block: b });
            }
            let got = if &buf[0..8] == RECORD_MAGIC { u32_at(&buf, 8) } else { 0 };
            if got != INDEX || u32_at(&buf, 12) as usize != i {
                return Err(Fault::WrongType { block: b, want: INDEX, got });
            }
            let seq = u64_at(&buf, 16);
            if seq != root.seq {
                return Err(Fault::WrongSeq { block: b, seq });
            }
            let full = if i + 1 < root.index_blocks { INDEX_REFS } else { root.nrefs - i * INDEX_REFS };
            if u32_at(&buf, 24) as usize != full {
                return Err(Fault::BadRoot);
            }
            for j in 0..full {
                let at = HEADER + j * REF;
                inner.push((u32_at(&buf, at) as u64, buf[at + 4..at + 36].try_into().unwrap()));
            }
            if seen.insert(b, ()).is_some() {
                return Err(Fault::BadMap { block: b });
            }
            index_list.push(b);
        }
        inner
    };
    for (i, &(b, h)) in refs_of.iter().enumerate() {
        if !(FIRST_DATA..area).contains(&b) {
            return Err(Fault::OutOfArea { block: b });
        }
        dev.read(b, &mut buf).map_err(|e| Fault::Io(e.0))?;
        if sha(&buf) != h {
            return Err(Fault::RecordChecksum { block: b });
        }
        let (want, index) = if i < root.map_blocks { (MAP, i) } else { (META, i - root.map_blocks) };
        let got = if &buf[0..8] == RECORD_MAGIC { u32_at(&buf, 8) } else { 0 };
        if got != want || u32_at(&buf, 12) as usize != index {
            return Err(Fault::WrongType { block: b, want, got });
        }
        let seq = u64_at(&buf, 16);
        if seq != root.seq {
            return Err(Fault::WrongSeq { block: b, seq });
        }
        let count = u32_at(&buf, 24) as usize;
        if want == MAP {
            let full = if i + 1 < root.map_blocks { MAP_ENTRIES } else { root.pages as usize - i * MAP_ENTRIES };
            if count != full {
                return Err(Fault::BadMap { block: b });
            }
            for j in 0..count {
                let at = HEADER + j * ENTRY;
                let key = u64_at(&buf, at);
                let block = u32_at(&buf, at + 8) as u64;
                if last.is_some_and(|l| key <= l) {
                    return Err(Fault::BadMap { block: b });
                }
                if !(FIRST_DATA..area).contains(&block) {
                    return Err(Fault::OutOfArea { block });
                }
                last = Some(key);
                pages.insert(key, Entry { block, hash: buf[at + 16..at + 48].try_into().unwrap() });
            }
        } else {
            let full = if i + 1 < refs_of.len() { META_BYTES } else { root.meta_len - index * META_BYTES };
            if count != full {
                return Err(Fault::BadRoot);
            }
            meta.extend_from_slice(&buf[HEADER..HEADER + count]);
        }
        if seen.insert(b, ()).is_some() {
            return Err(Fault::BadMap { block: b });
        }
    }
    // Every page whole; no block used twice.
    for (&key, e) in &pages {
        if seen.insert(e.block, ()).is_some() {
            return Err(Fault::BadMap { block: e.block });
        }
        if check_pages {
            dev.read(e.block, &mut buf).map_err(|e| Fault::Io(e.0))?;
            if sha(&buf) != e.hash {
                return Err(Fault::PageChecksum { key, block: e.block });
            }
        }
    }
    let mut refs: Vec<u64> = refs_of.iter().map(|r| r.0).collect();
    refs.extend(index_list);
    Ok(Checkpoint {
        seq: root.seq,
        time: root.time,
        slot,
        blocks: (pages.len() + refs.len()) as u64,
        pages,
        meta,
        pages_written: root.pages_written,
        refs,
    })
}
