//! The workhorse's file system on the disk (docs/workhorse.md, "The file
//! system on the disk"): a tree of directories, files and symbolic links
//! kept in memory whole and made durable as a log of checksummed,
//! sequence-numbered records, compacted into a checkpoint.
//!
//! The range of sectors it is given (`blk=FIRST+SECTORS:rw`) holds:
//!
//! | sectors | what |
//! |---|---|
//! | 0, 1 | two headers; the valid one with the higher epoch is current |
//! | 2 .. 2+C | checkpoint area 0 |
//! | 2+C .. 2+2C | checkpoint area 1 |
//! | 2+2C .. end | the log |
//!
//! Epoch E's header is in slot E % 2 and its checkpoint in area E % 2; each
//! epoch has a nonce of its own that seeds every checksum written in it, so
//! nothing written in another epoch (nor a file's bytes copied into a
//! record) passes for one of its records.  A change is a record appended
//! to the log (starting on a sector, never rewriting one written before)
//! and applied to the tree only once the disk acknowledged it.  Replay
//! reads records while each one's checksum, sequence number and content
//! hold; the first that does not ends the log (a torn tail).  Compaction
//! writes the tree as a checkpoint into the other area, flushes, writes the
//! next epoch's header into the other slot, flushes, and starts the log
//! afresh; a crash at any point leaves one complete epoch current.  Mount
//! always compacts, so each epoch's log is written once, in order, by one
//! mount.  Any I/O error makes the store refuse changes (EIO) until it is
//! mounted again.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::vec::Vec;
use crate::linux::fs::NAME_MAX;
pub use crate::linux::fs::{S_IFDIR, S_IFLNK, S_IFMT};

pub const SECTOR: usize = 512;
/// The root directory's inode number.
pub const ROOT: u64 = 1;
/// File bytes one record carries at most; a longer write is several.
pub const MAX_DATA: usize = 64 * 1024;
/// The largest record (a CREATE with a name and a link target, or a WRITE).
const MAX_PAYLOAD: usize = MAX_DATA + 64;
const HDR: usize = 32;
const MAX_RECORD_SECTORS: u64 = ((HDR + MAX_PAYLOAD) as u64).div_ceil(SECTOR as u64);
const TARGET_MAX: usize = 4095;

const HEADER_MAGIC: u64 = u64::from_le_bytes(*b"KEEPFS\x00\x01");
const RECORD_MAGIC: u32 = u32::from_le_bytes(*b"KREC");
const VERSION: u32 = 1;


/// A block device (the block server's client range, or memory in tests).
pub trait Disk {
    fn sectors(&self) -> u64;
    /// Reads `buf.len() / 512` sectors from `sector`.
    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<(), IoError>;
    /// Writes whole sectors; returns once the device acknowledged them.
    fn write(&mut self, sector: u64, data: &[u8]) -> Result<(), IoError>;
    /// Returns once every acknowledged write is durable.
    fn flush(&mut self) -> Result<(), IoError>;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IoError;

/// Why a change was refused (the tree is unchanged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The tree would not fit a checkpoint area (ENOSPC).
    NoSpace,
    /// The disk failed (now, or earlier: the store takes no changes until
    /// mounted again) (EIO).
    Io,
    /// The change does not apply to the tree (the caller should have
    /// refused it: EINVAL).
    Bad,
}

/// Why the range could not be mounted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MountError {
    /// Fewer sectors than a store needs.
    TooSmall,
    /// The disk failed.
    Io,
    /// The current header's checkpoint is damaged; nothing was written.
    Damaged(&'static str),
}

/// What mount found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mounted {
    /// There was no valid header: the range was formatted.
    pub formatted: bool,
    /// Records replayed from the checkpoint and from the log.
    pub checkpoint_records: u64,
    pub log_records: u64,
    /// The log ended at something that was not a valid record of its epoch
    /// but carried the record magic (a torn or refused tail, dropped).
    pub torn_tail: bool,
    /// One of the two headers was damaged (the other was used).
    pub bad_header: bool,
}

/// The store's state (the shell's view: docs/workhorse.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub epoch: u64,
    pub log_records: u64,
    pub log_sectors_used: u64,
    pub log_sectors: u64,
    /// The tree's size as a checkpoint (an upper bound) and the most it may be.
    pub bytes_used: u64,
    pub bytes_capacity: u64,
    pub compactions: u64,
    pub failed: bool,
}

// ---------------------------------------------------------------------
// Checksums.

/// A 64-bit hash of `parts` seeded with `seed` (not cryptographic: it
/// detects torn and stale sectors; the seed, an epoch's nonce, keeps bytes
/// a program wrote from passing for a record).
pub fn hash(seed: u64, parts: &[&[u8]]) -> u64 {
    let mut h = seed ^ 0x9e37_79b9_7f4a_7c15;
    let mut word = 0u64;
    let mut n = 0usize;
    for p in parts {
        for &b in p.iter() {
            word |= (b as u64) << ((n % 8) * 8);
            n += 1;
            if n % 8 == 0 {
                h = mix(h ^ word);
                word = 0;
            }
        }
    }
    mix(h ^ word ^ (n as u64).rotate_left(32))
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

// ---------------------------------------------------------------------
// Geometry.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Geometry {
    total: u64,
    cp: u64,
    log: u64,
}

impl Geometry {
    /// Three eighths of what follows the headers for each checkpoint area,
    /// the rest (a quarter) for the log.
    fn new(total: u64) -> Option<Geometry> {
        let rest = total.checked_sub(2)?;
        let cp = rest * 3 / 8;
        let log = rest - 2 * cp;
        (log >= 2 * MAX_RECORD_SECTORS && cp >= 8).then_some(Geometry { total, cp, log })
    }
    fn area(&self, epoch: u64) -> u64 {
        2 + (epoch % 2) * self.cp
    }
    fn log_start(&self) -> u64 {
        2 + 2 * self.cp
    }
}

/// The fewest sectors a store needs.
pub fn min_sectors() -> u64 {
    (2..).find(|&s| Geometry::new(s).is_some()).unwrap()
}

// ---------------------------------------------------------------------
// Records.

/// A change to the tree: what a record holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op<'a> {
    /// `mode` has the file type (S_IFDIR, S_IFLNK, anything else a file);
    /// `target` is a link's.
    Create { ino: u64, dir: u64, mode: u32, name: &'a str, target: &'a str },
    Link { ino: u64, dir: u64, name: &'a str },
    Unlink { dir: u64, name: &'a str },
    Rename { from_dir: u64, from: &'a str, to_dir: u64, to: &'a str },
    Write { ino: u64, off: u64, data: &'a [u8] },
    Truncate { ino: u64, size: u64 },
    Chmod { ino: u64, mode: u32 },
    /// An inode's access, modification and change times (ns).
    Times { ino: u64, times: [u64; 3] },
}

const K_CREATE: u8 = 1;
const K_LINK: u8 = 2;
const K_UNLINK: u8 = 3;
const K_RENAME: u8 = 4;
const K_WRITE: u8 = 5;
const K_TRUNCATE: u8 = 6;
const K_CHMOD: u8 = 7;
const K_TIMES: u8 = 8;

fn put(out: &mut Vec<u8>, v: u64, n: usize) {
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn num(&mut self, n: usize) -> Option<u64> {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(self.take(n)?);
        Some(u64::from_le_bytes(b))
    }
    fn str(&mut self, n: usize) -> Option<&'a str> {
        core::str::from_utf8(self.take(n)?).ok()
    }
}

impl<'a> Op<'a> {
    fn kind(&self) -> u8 {
        match self {
            Op::Create { .. } => K_CREATE,
            Op::Link { .. } => K_LINK,
            Op::Unlink { .. } => K_UNLINK,
            Op::Rename { .. } => K_RENAME,
            Op::Write { .. } => K_WRITE,
            Op::Truncate { .. } => K_TRUNCATE,
            Op::Chmod { .. } => K_CHMOD,
            Op::Times { .. } => K_TIMES,
        }
    }

    fn encode(&self, out: &mut Vec<u8>) {
        match *self {
            Op::Create { ino, dir, mode, name, target } => {
                put(out, ino, 8);
                put(out, dir, 8);
                put(out, mode as u64, 4);
                put(out, name.len() as u64, 2);
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(target.as_bytes());
            }
            Op::Link { ino, dir, name } => {
                put(out, ino, 8);
                put(out, dir, 8);
                out.extend_from_slice(name.as_bytes());
            }
            Op::Unlink { dir, name } => {
                put(out, dir, 8);
                out.extend_from_slice(name.as_bytes());
            }
            Op::Rename { from_dir, from, to_dir, to } => {
                put(out, from_dir, 8);
                put(out, to_dir, 8);
                put(out, from.len() as u64, 2);
                out.extend_from_slice(from.as_bytes());
                out.extend_from_slice(to.as_bytes());
            }
            Op::Write { ino, off, data } => {
                put(out, ino, 8);
                put(out, off, 8);
                out.extend_from_slice(data);
            }
            Op::Truncate { ino, size } => {
                put(out, ino, 8);
                put(out, size, 8);
            }
            Op::Chmod { ino, mode } => {
                put(out, ino, 8);
                put(out, mode as u64, 4);
            }
            Op::Times { ino, times } => {
                put(out, ino, 8);
                for t in times {
                    put(out, t, 8);
                }
            }
        }
    }

    fn decode(kind: u8, p: &'a [u8]) -> Option<Op<'a>> {
        let mut r = Reader(p);
        let op = match kind {
            K_CREATE => {
                let (ino, dir, mode, n) = (r.num(8)?, r.num(8)?, r.num(4)? as u32, r.num(2)? as usize);
                let name = r.str(n)?;
                let target = r.str(r.0.len())?;
                Op::Create { ino, dir, mode, name, target }
            }
            K_LINK => Op::Link { ino: r.num(8)?, dir: r.num(8)?, name: r.str(p.len() - 16)? },
            K_UNLINK => Op::Unlink { dir: r.num(8)?, name: r.str(p.len().checked_sub(8)?)? },
            K_RENAME => {
                let (from_dir, to_dir, n) = (r.num(8)?, r.num(8)?, r.num(2)? as usize);
                let from = r.str(n)?;
                let to = r.str(r.0.len())?;
                Op::Rename { from_dir, from, to_dir, to }
            }
            K_WRITE => Op::Write { ino: r.num(8)?, off: r.num(8)?, data: r.0 },
            K_TRUNCATE => Op::Truncate { ino: r.num(8)?, size: r.num(8)? },
            K_CHMOD => Op::Chmod { ino: r.num(8)?, mode: r.num(4)? as u32 },
            K_TIMES => Op::Times { ino: r.num(8)?, times: [r.num(8)?, r.num(8)?, r.num(8)?] },
            _ => return None,
        };
        Some(op)
    }
}

/// Appends record `seq` holding `op` to `out`, checksummed with `nonce`.
fn record(out: &mut Vec<u8>, nonce: u64, seq: u64, op: &Op) {
    let start = out.len();
    out.resize(start + HDR, 0);
    op.encode(out);
    let len = out.len() - start - HDR;
    let h = &mut out[start..start + HDR];
    h[0..4].copy_from_slice(&RECORD_MAGIC.to_le_bytes());
    h[4] = op.kind();
    h[8..12].copy_from_slice(&(len as u32).to_le_bytes());
    h[16..24].copy_from_slice(&seq.to_le_bytes());
    let sum = hash(nonce, &[&out[start..start + 24], &out[start + HDR..]]);
    out[start + 24..start + 32].copy_from_slice(&sum.to_le_bytes());
}

/// A record header's (kind, payload length, seq, sum), if it has the magic.
fn record_header(h: &[u8]) -> Option<(u8, usize, u64, u64)> {
    let w = |a: usize, n: usize| {
        let mut b = [0u8; 8];
        b[..n].copy_from_slice(&h[a..a + n]);
        u64::from_le_bytes(b)
    };
    (w(0, 4) as u32 == RECORD_MAGIC).then(|| (h[4], w(8, 4) as usize, w(16, 8), w(24, 8)))
}

fn record_ok(nonce: u64, hdr: &[u8], payload: &[u8], sum: u64) -> bool {
    hash(nonce, &[&hdr[..24], payload]) == sum
}

// ---------------------------------------------------------------------
// Headers.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    epoch: u64,
    nonce: u64,
    cp_len: u64,
    cp_sum: u64,
}

impl Header {
    fn bytes(&self, geo: &Geometry) -> [u8; SECTOR] {
        let mut b = [0u8; SECTOR];
        let words = [HEADER_MAGIC, VERSION as u64, geo.total, self.epoch, self.nonce, self.cp_len, self.cp_sum];
        for (i, w) in words.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        let sum = hash(HEADER_MAGIC, &[&b[..504]]);
        b[504..].copy_from_slice(&sum.to_le_bytes());
        b
    }

    fn parse(b: &[u8], geo: &Geometry) -> Option<Header> {
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        if w(0) != HEADER_MAGIC || w(63) != hash(HEADER_MAGIC, &[&b[..504]]) {
            return None;
        }
        if w(1) != VERSION as u64 || w(2) != geo.total || w(3) == 0 || w(5) > geo.cp * SECTOR as u64 {
            return None;
        }
        Some(Header { epoch: w(3), nonce: w(4), cp_len: w(5), cp_sum: w(6) })
    }
}

// ---------------------------------------------------------------------
// The tree.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Dir { entries: BTreeMap<String, u64>, parent: u64 },
    File(Vec<u8>),
    Symlink(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inode {
    pub node: Node,
    /// Type and permission bits.
    pub mode: u32,
    /// Names it has; 0: unlinked but still open (an orphan: kept in memory
    /// until `forget`, never written to a checkpoint).
    pub nlink: u32,
    /// Access, modification and change times in ns (0: never recorded, a
    /// store written before TIMES records existed).
    pub times: [u64; 3],
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tree {
    pub inodes: BTreeMap<u64, Inode>,
    next: u64,
    /// The tree's size as a checkpoint, an upper bound kept as it changes
    /// (the sum of `entry_cost` and `inode_cost`; `estimate` recounts it).
    est: u64,
    capacity: u64,
}

fn name_ok(name: &str) -> bool {
    !name.is_empty() && name.len() <= NAME_MAX && !name.contains('/') && name != "." && name != ".."
}

/// A name's share of a checkpoint: its CREATE or LINK record.
fn entry_cost(name: &str) -> u64 {
    (HDR + 22 + name.len()) as u64
}

fn data_cost(len: u64) -> u64 {
    len.div_ceil(MAX_DATA as u64) * (HDR + 16) as u64 + len
}

/// An inode's share of a checkpoint beyond its first name: its link
/// target, its data, its CHMOD (only the root has one), its TIMES.
fn inode_cost(i: &Inode) -> u64 {
    TIMES_COST
        + match &i.node {
            Node::File(d) => data_cost(d.len() as u64),
            Node::Symlink(t) => t.len() as u64,
            Node::Dir { .. } => (HDR + 12) as u64,
        }
}

const TIMES_COST: u64 = (HDR + 32) as u64;

impl Tree {
    fn new(capacity: u64) -> Tree {
        let root = Inode { node: Node::Dir { entries: BTreeMap::new(), parent: ROOT }, mode: S_IFDIR | 0o755, nlink: 1, times: [0; 3] };
        let mut t = Tree { inodes: BTreeMap::new(), next: ROOT + 1, est: 0, capacity };
        t.est = inode_cost(&root);
        t.inodes.insert(ROOT, root);
        t
    }

    pub fn get(&self, ino: u64) -> Option<&Inode> {
        self.inodes.get(&ino)
    }

    /// An inode number no inode has.
    pub fn fresh(&self) -> u64 {
        self.next
    }

    fn dir(&self, ino: u64) -> Option<&BTreeMap<String, u64>> {
        match &self.inodes.get(&ino)?.node {
            Node::Dir { entries, .. } => Some(entries),
            _ => None,
        }
    }

    fn entry(&self, dir: u64, name: &str) -> Option<u64> {
        self.dir(dir)?.get(name).copied()
    }

    fn is_dir(&self, ino: u64) -> bool {
        self.dir(ino).is_some()
    }

    fn empty_dir(&self, ino: u64) -> bool {
        self.dir(ino).is_some_and(|e| e.is_empty())
    }

    fn file_len(&self, ino: u64) -> Option<u64> {
        match &self.inodes.get(&ino)?.node {
            Node::File(d) => Some(d.len() as u64),
            _ => None,
        }
    }

    /// Recounts what `est` keeps (the tests compare the two).
    pub fn estimate(&self) -> u64 {
        let mut n = 0;
        for i in self.inodes.values().filter(|i| i.nlink > 0) {
            n += inode_cost(i);
            if let Node::Dir { entries, .. } = &i.node {
                n += entries.keys().map(|k| entry_cost(k)).sum::<u64>();
            }
        }
        n
    }

    /// Whether `op` applies to the tree, and how it changes `est`.
    fn check(&self, op: &Op) -> Result<i64, Error> {
        let linked = |ino: u64| self.inodes.get(&ino).is_some_and(|i| i.nlink > 0);
        let cost_of_unlinking = |ino: u64, name: &str| -> i64 {
            let i = &self.inodes[&ino];
            let mut d = -(entry_cost(name) as i64);
            if i.nlink == 1 {
                d -= inode_cost(i) as i64;
            }
            d
        };
        let delta = match *op {
            Op::Create { ino, dir, mode, name, target } => {
                let is_link = mode & S_IFMT == S_IFLNK;
                if ino < ROOT + 1 || self.inodes.contains_key(&ino) || !self.is_dir(dir) || !linked(dir) {
                    return Err(Error::Bad);
                }
                if !name_ok(name) || self.entry(dir, name).is_some() || (is_link && (target.is_empty() || target.len() > TARGET_MAX)) || (!is_link && !target.is_empty()) {
                    return Err(Error::Bad);
                }
                let node = if mode & S_IFMT == S_IFDIR { Node::Dir { entries: BTreeMap::new(), parent: dir } } else if is_link { Node::Symlink(String::from(target)) } else { Node::File(Vec::new()) };
                (entry_cost(name) + inode_cost(&Inode { node, mode, nlink: 1, times: [0; 3] })) as i64
            }
            Op::Link { ino, dir, name } => {
                if !linked(ino) || self.is_dir(ino) || !self.is_dir(dir) || !linked(dir) || !name_ok(name) || self.entry(dir, name).is_some() {
                    return Err(Error::Bad);
                }
                entry_cost(name) as i64
            }
            Op::Unlink { dir, name } => {
                let ino = self.entry(dir, name).ok_or(Error::Bad)?;
                if self.is_dir(ino) && !self.empty_dir(ino) {
                    return Err(Error::Bad);
                }
                cost_of_unlinking(ino, name)
            }
            Op::Rename { from_dir, from, to_dir, to } => {
                let ino = self.entry(from_dir, from).ok_or(Error::Bad)?;
                if !self.is_dir(to_dir) || !linked(to_dir) || !name_ok(to) {
                    return Err(Error::Bad);
                }
                if self.is_dir(ino) {
                    // Not into itself or below it.
                    let mut at = to_dir;
                    loop {
                        if at == ino {
                            return Err(Error::Bad);
                        }
                        match &self.inodes[&at].node {
                            Node::Dir { parent, .. } if at != ROOT => at = *parent,
                            _ => break,
                        }
                    }
                }
                let mut d = entry_cost(to) as i64 - entry_cost(from) as i64;
                if let Some(old) = self.entry(to_dir, to) {
                    if old == ino {
                        return Ok(0);
                    }
                    match (self.is_dir(ino), self.is_dir(old)) {
                        (true, true) if self.empty_dir(old) => {}
                        (false, false) => {}
                        _ => return Err(Error::Bad),
                    }
                    d += cost_of_unlinking(old, to);
                }
                d
            }
            Op::Write { ino, off, data } => {
                let len = self.file_len(ino).ok_or(Error::Bad)?;
                let end = off.checked_add(data.len() as u64).ok_or(Error::NoSpace)?;
                if end > self.capacity {
                    return Err(Error::NoSpace);
                }
                if !linked(ino) {
                    0
                } else {
                    data_cost(len.max(end)) as i64 - data_cost(len) as i64
                }
            }
            Op::Truncate { ino, size } => {
                let len = self.file_len(ino).ok_or(Error::Bad)?;
                if size > self.capacity {
                    return Err(Error::NoSpace);
                }
                if !linked(ino) { 0 } else { data_cost(size) as i64 - data_cost(len) as i64 }
            }
            Op::Chmod { ino, .. } | Op::Times { ino, .. } => {
                if !self.inodes.contains_key(&ino) {
                    return Err(Error::Bad);
                }
                0
            }
        };
        if delta > 0 && self.est + delta as u64 > self.capacity {
            return Err(Error::NoSpace);
        }
        Ok(delta)
    }

    /// Applies `op`, which `check` accepted with `delta`.
    fn apply(&mut self, op: &Op, delta: i64) {
        self.est = (self.est as i64 + delta) as u64;
        match *op {
            Op::Create { ino, dir, mode, name, target } => {
                let node = match mode & S_IFMT {
                    S_IFDIR => Node::Dir { entries: BTreeMap::new(), parent: dir },
                    S_IFLNK => Node::Symlink(String::from(target)),
                    _ => Node::File(Vec::new()),
                };
                self.inodes.insert(ino, Inode { node, mode, nlink: 1, times: [0; 3] });
                self.dir_mut(dir).insert(String::from(name), ino);
                self.next = self.next.max(ino + 1);
            }
            Op::Link { ino, dir, name } => {
                self.dir_mut(dir).insert(String::from(name), ino);
                self.inodes.get_mut(&ino).unwrap().nlink += 1;
            }
            Op::Unlink { dir, name } => {
                let ino = self.dir_mut(dir).remove(name).unwrap();
                self.drop_link(ino);
            }
            Op::Rename { from_dir, from, to_dir, to } => {
                let ino = self.entry(from_dir, from).unwrap();
                if self.entry(to_dir, to) == Some(ino) {
                    return;
                }
                if let Some(old) = self.dir_mut(to_dir).remove(to) {
                    self.drop_link(old);
                }
                self.dir_mut(from_dir).remove(from);
                self.dir_mut(to_dir).insert(String::from(to), ino);
                if let Node::Dir { parent, .. } = &mut self.inodes.get_mut(&ino).unwrap().node {
                    *parent = to_dir;
                }
            }
            Op::Write { ino, off, data } => {
                if let Node::File(d) = &mut self.inodes.get_mut(&ino).unwrap().node {
                    let end = off as usize + data.len();
                    if d.len() < end {
                        d.resize(end, 0);
                    }
                    d[off as usize..end].copy_from_slice(data);
                }
            }
            Op::Truncate { ino, size } => {
                if let Node::File(d) = &mut self.inodes.get_mut(&ino).unwrap().node {
                    d.resize(size as usize, 0);
                }
            }
            Op::Chmod { ino, mode } => {
                let i = self.inodes.get_mut(&ino).unwrap();
                i.mode = (i.mode & S_IFMT) | (mode & 0o7777);
            }
            Op::Times { ino, times } => self.inodes.get_mut(&ino).unwrap().times = times,
        }
    }

    fn dir_mut(&mut self, ino: u64) -> &mut BTreeMap<String, u64> {
        match &mut self.inodes.get_mut(&ino).unwrap().node {
            Node::Dir { entries, .. } => entries,
            _ => unreachable!("checked to be a directory"),
        }
    }

    /// One name fewer: a directory goes; a file or link with no name left
    /// stays as an orphan for whoever has it open.
    fn drop_link(&mut self, ino: u64) {
        let i = self.inodes.get_mut(&ino).unwrap();
        i.nlink -= 1;
        if i.nlink == 0 && matches!(i.node, Node::Dir { .. }) {
            self.inodes.remove(&ino);
        }
    }

    /// The checkpoint: records that rebuild the tree from an empty root
    /// (directories before what they hold; a file's data in MAX_DATA pieces;
    /// further names of a file as LINK; then every inode's TIMES, last so
    /// that nothing after them stands for a change).
    fn checkpoint(&self, nonce: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut seq = 0;
        let mut emit = |out: &mut Vec<u8>, op: Op| {
            record(out, nonce, seq, &op);
            seq += 1;
        };
        let root = &self.inodes[&ROOT];
        emit(&mut out, Op::Chmod { ino: ROOT, mode: root.mode });
        let mut seen: BTreeMap<u64, ()> = BTreeMap::new();
        let mut stack = alloc::vec![ROOT];
        while let Some(dir) = stack.pop() {
            for (name, &ino) in self.dir(dir).unwrap() {
                let i = &self.inodes[&ino];
                if seen.insert(ino, ()).is_some() {
                    emit(&mut out, Op::Link { ino, dir, name });
                    continue;
                }
                let target = if let Node::Symlink(t) = &i.node { t.as_str() } else { "" };
                emit(&mut out, Op::Create { ino, dir, mode: i.mode, name, target });
                match &i.node {
                    Node::Dir { .. } => stack.push(ino),
                    Node::File(d) => {
                        for (k, piece) in d.chunks(MAX_DATA).enumerate() {
                            emit(&mut out, Op::Write { ino, off: (k * MAX_DATA) as u64, data: piece });
                        }
                    }
                    Node::Symlink(_) => {}
                }
            }
        }
        for ino in core::iter::once(ROOT).chain(seen.into_keys()) {
            let times = self.inodes[&ino].times;
            if times != [0; 3] {
                emit(&mut out, Op::Times { ino, times });
            }
        }
        out
    }
}

// ---------------------------------------------------------------------
// The store.

pub struct Store<D: Disk> {
    disk: D,
    geo: Geometry,
    tree: Tree,
    epoch: u64,
    nonce: u64,
    /// Nonces for the epochs to come (splitmix64 from mount's seed).
    rng: u64,
    /// The log's next free sector (from the log's start) and record number.
    log_at: u64,
    seq: u64,
    compactions: u64,
    failed: bool,
    /// Inodes whose times changed in memory since they were last written
    /// (`set_times`, `sync_times`).
    dirty: BTreeSet<u64>,
}

impl<D: Disk> Store<D> {
    /// Mounts the store on `disk`: formats it when neither header is valid,
    /// else replays the current checkpoint and log; then compacts into a
    /// new epoch.  `seed` makes the nonces (anything that differs between
    /// mounts: the time stamp counter).
    pub fn mount(mut disk: D, seed: u64) -> Result<(Store<D>, Mounted), (D, MountError)> {
        let Some(geo) = Geometry::new(disk.sectors()) else { return Err((disk, MountError::TooSmall)) };
        let mut hs = alloc::vec![0u8; 2 * SECTOR];
        if disk.read(0, &mut hs).is_err() {
            return Err((disk, MountError::Io));
        }
        let headers = [Header::parse(&hs[..SECTOR], &geo), Header::parse(&hs[SECTOR..], &geo)];
        // A header is only valid in its own slot.
        let valid = |k: usize| headers[k].filter(|h| h.epoch % 2 == k as u64);
        let current = match (valid(0), valid(1)) {
            (Some(a), Some(b)) => Some(if a.epoch > b.epoch { a } else { b }),
            (a, b) => a.or(b),
        };
        // A slot with the magic that is not valid (a torn or damaged header).
        let magic = |k: usize| hs[k * SECTOR..k * SECTOR + 8] == HEADER_MAGIC.to_le_bytes();
        let bad_header = (0..2).any(|k| magic(k) && valid(k).is_none());
        let capacity = geo.cp * SECTOR as u64;
        let mut store = Store {
            disk,
            geo,
            tree: Tree::new(capacity),
            epoch: 0,
            nonce: 0,
            rng: seed,
            log_at: 0,
            seq: 0,
            compactions: 0,
            failed: false,
            dirty: BTreeSet::new(),
        };
        let mut m = Mounted { formatted: current.is_none(), checkpoint_records: 0, log_records: 0, torn_tail: false, bad_header };
        if let Some(h) = current {
            store.epoch = h.epoch;
            store.nonce = h.nonce;
            let mut cp = alloc::vec![0u8; (h.cp_len as usize).next_multiple_of(SECTOR)];
            if store.disk.read(geo.area(h.epoch), &mut cp).is_err() {
                return Err((store.disk, MountError::Io));
            }
            let cp = &cp[..h.cp_len as usize];
            if hash(h.nonce, &[cp]) != h.cp_sum {
                return Err((store.disk, MountError::Damaged("the current checkpoint's checksum does not match")));
            }
            let (n, stop) = replay_from(&mut store.tree, h.nonce, cp, 0, false);
            if !matches!(stop, Stop::Short(k) if k == cp.len()) {
                return Err((store.disk, MountError::Damaged("a checkpoint record does not apply")));
            }
            m.checkpoint_records = n;
            // The log, read a window at a time (a record never spans more
            // than MAX_RECORD_SECTORS).
            let mut log = Vec::new();
            let (mut read, mut at, mut seq) = (0u64, 0usize, 0u64);
            loop {
                let (n, stop) = replay_from(&mut store.tree, h.nonce, &log[at..], seq, true);
                seq += n;
                match stop {
                    Stop::Record(k) => {
                        m.torn_tail = record_header(&log[at + k..at + k + HDR]).is_some();
                        break;
                    }
                    Stop::Short(k) => {
                        at += k;
                        if read == geo.log {
                            m.torn_tail = log.len() >= at + HDR && record_header(&log[at..at + HDR]).is_some();
                            break;
                        }
                    }
                }
                let want = (read + 2 * MAX_RECORD_SECTORS).min(geo.log);
                let mut buf = alloc::vec![0u8; ((want - read) as usize) * SECTOR];
                if store.disk.read(geo.log_start() + read, &mut buf).is_err() {
                    return Err((store.disk, MountError::Io));
                }
                log.extend_from_slice(&buf);
                read = want;
            }
            m.log_records = seq;
            // Orphans were open when the store was last mounted; nobody has
            // them open now.
            store.tree.inodes.retain(|_, i| i.nlink > 0);
        }
        if store.compact().is_err() {
            return Err((store.disk, MountError::Io));
        }
        Ok((store, m))
    }

    pub fn tree(&self) -> &Tree {
        &self.tree
    }

    pub fn status(&self) -> Status {
        Status {
            epoch: self.epoch,
            log_records: self.seq,
            log_sectors_used: self.log_at,
            log_sectors: self.geo.log,
            bytes_used: self.tree.est,
            bytes_capacity: self.tree.capacity,
            compactions: self.compactions,
            failed: self.failed,
        }
    }

    fn next_nonce(&mut self) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.rng)
    }

    /// Writes the tree as the next epoch's checkpoint and makes that epoch
    /// current; the log starts afresh.
    fn compact(&mut self) -> Result<(), Error> {
        let r = self.try_compact();
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn try_compact(&mut self) -> Result<(), Error> {
        let epoch = self.epoch + 1;
        let nonce = self.next_nonce();
        let mut cp = self.tree.checkpoint(nonce);
        let len = cp.len();
        if len as u64 > self.geo.cp * SECTOR as u64 {
            return Err(Error::NoSpace); // est is an upper bound: not reached
        }
        let h = Header { epoch, nonce, cp_len: len as u64, cp_sum: hash(nonce, &[&cp]) };
        cp.resize(len.next_multiple_of(SECTOR).max(SECTOR), 0);
        let io = |_| Error::Io;
        self.disk.write(self.geo.area(epoch), &cp).map_err(io)?;
        self.disk.flush().map_err(io)?;
        self.disk.write(epoch % 2, &h.bytes(&self.geo)).map_err(io)?;
        self.disk.flush().map_err(io)?;
        self.epoch = epoch;
        self.nonce = nonce;
        self.log_at = 0;
        self.seq = 0;
        self.compactions += 1;
        // The checkpoint holds every inode's times.
        self.dirty.clear();
        Ok(())
    }

    /// Makes `op` durable (a log record the disk acknowledged) and applies
    /// it; on any error the tree is unchanged.
    pub fn change(&mut self, op: &Op) -> Result<(), Error> {
        if self.failed {
            return Err(Error::Io);
        }
        let delta = self.tree.check(op)?;
        let orphan = match *op {
            Op::Write { ino, .. } | Op::Truncate { ino, .. } | Op::Chmod { ino, .. } | Op::Times { ino, .. } => {
                self.tree.inodes[&ino].nlink == 0
            }
            _ => false,
        };
        if !orphan {
            let mut rec = Vec::new();
            record(&mut rec, self.nonce, self.seq, op);
            let sectors = (rec.len() as u64).div_ceil(SECTOR as u64);
            if sectors > self.geo.log {
                return Err(Error::NoSpace);
            }
            if self.log_at + sectors > self.geo.log {
                self.compact()?;
                rec.clear();
                record(&mut rec, self.nonce, self.seq, op);
            }
            rec.resize(sectors as usize * SECTOR, 0);
            if self.disk.write(self.geo.log_start() + self.log_at, &rec).is_err() {
                self.failed = true;
                return Err(Error::Io);
            }
            self.log_at += sectors;
            self.seq += 1;
        }
        self.tree.apply(op, delta);
        Ok(())
    }

    /// Writes `data` at `off` of file `ino`, MAX_DATA bytes a record;
    /// returns the bytes written (fewer only when a later piece failed).
    pub fn write(&mut self, ino: u64, off: u64, data: &[u8]) -> Result<usize, Error> {
        if data.is_empty() {
            self.tree.file_len(ino).ok_or(Error::Bad)?;
            return Ok(0);
        }
        let mut done = 0;
        for piece in data.chunks(MAX_DATA) {
            match self.change(&Op::Write { ino, off: off + done as u64, data: piece }) {
                Ok(()) => done += piece.len(),
                Err(e) if done == 0 => return Err(e),
                Err(_) => break,
            }
        }
        Ok(done)
    }

    /// Forgets an orphan nobody has open any more.
    pub fn forget(&mut self, ino: u64) {
        if self.tree.inodes.get(&ino).is_some_and(|i| i.nlink == 0) {
            self.tree.inodes.remove(&ino);
        }
    }

    /// Sets `ino`'s times in memory only: a change's times are written
    /// lazily, with the next `sync_times` (fsync, sync, the file's last
    /// close) or compaction, rather than a second record for every write.
    pub fn set_times(&mut self, ino: u64, times: [u64; 3]) {
        if let Some(i) = self.tree.inodes.get_mut(&ino)
            && i.times != times
        {
            i.times = times;
            self.dirty.insert(ino);
        }
    }

    /// Writes the times set since they were last written, of `ino` or
    /// (None) of every inode, as TIMES records.
    pub fn sync_times(&mut self, ino: Option<u64>) -> Result<(), Error> {
        let list: Vec<u64> = match ino {
            Some(i) => self.dirty.take(&i).into_iter().collect(),
            None => core::mem::take(&mut self.dirty).into_iter().collect(),
        };
        for (k, &i) in list.iter().enumerate() {
            let Some(times) = self.tree.inodes.get(&i).map(|n| n.times) else { continue };
            if let Err(e) = self.change(&Op::Times { ino: i, times }) {
                self.dirty.extend(&list[k..]);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Makes every acknowledged record durable (fsync, sync), the times
    /// set in memory written first.
    pub fn flush(&mut self) -> Result<(), Error> {
        if self.failed {
            return Err(Error::Io);
        }
        self.sync_times(None)?;
        self.disk.flush().map_err(|_| {
            self.failed = true;
            Error::Io
        })
    }

    pub fn disk(&self) -> &D {
        &self.disk
    }

    /// Gives the disk back (tests: crash and mount it again).
    pub fn into_disk(self) -> D {
        self.disk
    }
}

enum Stop {
    /// A record at this offset does not hold: the log ends there.
    Record(usize),
    /// The bytes from this offset are too few to hold the next record.
    Short(usize),
}

/// Applies the records in `log` (record `seq` first; each on a sector of
/// its own when `aligned`, as in the log; packed in a checkpoint) while
/// they hold; returns how many and where it stopped.
fn replay_from(tree: &mut Tree, nonce: u64, log: &[u8], mut seq: u64, aligned: bool) -> (u64, Stop) {
    let start = seq;
    let mut at = 0;
    loop {
        if at + HDR > log.len() {
            return (seq - start, Stop::Short(at));
        }
        let h = &log[at..at + HDR];
        let Some((kind, len, s, sum)) = record_header(h) else { return (seq - start, Stop::Record(at)) };
        if s != seq || len > MAX_PAYLOAD {
            return (seq - start, Stop::Record(at));
        }
        if at + HDR + len > log.len() {
            return (seq - start, Stop::Short(at));
        }
        let payload = &log[at..at + HDR + len][HDR..];
        if !record_ok(nonce, h, payload, sum) {
            return (seq - start, Stop::Record(at));
        }
        let Some(op) = Op::decode(kind, payload) else { return (seq - start, Stop::Record(at)) };
        let Ok(delta) = tree.check(&op) else { return (seq - start, Stop::Record(at)) };
        tree.apply(&op, delta);
        seq += 1;
        at += HDR + len;
        if aligned {
            at = at.next_multiple_of(SECTOR);
        }
    }
}

#[cfg(test)]
mod tests;
