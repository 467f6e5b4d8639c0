//! Trusted files kept by the workhorse (docs/trusted-core.md, "Trusted
//! files"): a trusted program's file lives, as ciphertext, in plain files
//! of the workhorse's `/data`; what makes it trustworthy lives in the vault
//! (the file's key and the root of a hash tree over its blocks, under the
//! vault's freshness), so nothing the workhorse does with the bytes can
//! pass for good data: a changed, moved, cut, removed or older copy is
//! refused as an integrity, availability or freshness error.
//!
//! This library is the format and the policy, over two traits so that the
//! host tests can play both the workhorse ([`Store`]) and the vault
//! ([`Roots`]); `main.rs` is the trusted program that speaks the
//! workhorse's `whfiles` protocol and the vault's.
//!
//! A file `NAME` is three files of the workhorse:
//!
//! - `NAME.d`, the data: logical block `i` (4 KiB) has two places, at
//!   blocks `2i` and `2i+1` of the file; each is AES-256-OCB3 (RFC 7253)
//!   ciphertext (the tag kept in the table), the associated data naming
//!   the file, the block and the place;
//! - `NAME.0` and `NAME.1`, the table of generation `g` in `NAME.<g % 2>`:
//!   a 64-byte header in the clear (magic, generation, size, blocks, the
//!   table's nonce) and, encrypted and authenticated with the header and
//!   the name as associated data, each block's place, nonce and tag.
//!
//! The vault holds, under the key `tf:NAME`, the record: the generation,
//! the size, the file's key and the *root*, SHA-256 over the name, the
//! generation, the size and the Merkle root of the table's entries.
//!
//! A write puts each changed block in the place the current generation
//! does not use, the next generation's table in the table file the current
//! one does not use, asks the workhorse to flush, and only then puts the
//! new record in the vault (which increments the TPM's counter): that PUT
//! is the commit.  Until it, everything the current record names is
//! untouched, so a cut at any point leaves the old version (or, after the
//! PUT, the new one), both whole and verifiable.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod format;
pub mod tree;

#[cfg(test)]
mod tests;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

pub use format::{BLOCK, Entry, MAX_BLOCKS, MAX_NAME, Record};
use tree::Tree;

/// What the workhorse's files look like to the trusted side: names in one
/// directory, bytes at offsets.  Nothing it answers is believed.
pub trait Store {
    /// Up to `out.len()` bytes at `off`: how many (fewer at the end);
    /// `Err(NotThere)` when the file does not exist.
    fn read(&mut self, name: &str, off: u64, out: &mut [u8]) -> Result<usize, StoreError>;
    /// Writes all of `data` at `off` (the file made if needed).
    fn write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), StoreError>;
    /// Every write before it survives a power cut.
    fn sync(&mut self) -> Result<(), StoreError>;
    fn remove(&mut self, name: &str) -> Result<(), StoreError>;
}

/// The vault: small values by name, fresh (an old copy is refused).
pub trait Roots {
    /// The value's length in `out`, or None when there is no such key.
    fn get(&mut self, key: &[u8], out: &mut [u8]) -> Result<Option<usize>, u64>;
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), u64>;
    /// Ok(false) when there was no such key.
    fn delete(&mut self, key: &[u8]) -> Result<bool, u64>;
    /// The name of the caller's key at `index` (name order), if any.
    fn key_at(&mut self, index: u64, out: &mut [u8]) -> Result<Option<usize>, u64>;
}

/// Random bytes for keys and nonces (rdrand in the guest).
pub trait Rng {
    /// False when there is no randomness to be had.
    fn fill(&mut self, out: &mut [u8]) -> bool;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreError {
    /// The file is not there.
    NotThere,
    /// The workhorse failed or refused (its status, or a call error).
    Failed(u64),
}

/// Why a request on a trusted file failed.  Everything but `NotFound`,
/// `BadName`, `TooLarge` and `NoRandom` is something the workhorse (or the
/// disk) did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Error {
    /// The vault has no record of such a file.
    NotFound,
    /// The name is not 1-12 bytes of a-z 0-9 -.
    BadName,
    /// Past MAX_BLOCKS blocks.
    TooLarge,
    /// No random bytes for a key or a nonce.
    NoRandom,
    /// Integrity: the stored bytes are not what this program wrote (a
    /// changed byte, a block moved or swapped, a file renamed over this
    /// one's); the block (u64::MAX for the table) and what failed.
    Integrity(u64, &'static str),
    /// Freshness: an authentic but older table (a copy put back): the
    /// generation found and the vault's.
    Stale(u64, u64),
    /// Availability: a stored file is gone or cut short.
    Missing(&'static str),
    /// The workhorse failed a request (its status or a call error).
    Store(u64),
    /// The vault failed a request (its status or a call error).
    Vault(u64),
}

impl Error {
    /// The class, as the program's lines print it.
    pub fn class(&self) -> &'static str {
        match self {
            Error::NotFound => "NOT FOUND",
            Error::BadName => "BAD NAME",
            Error::TooLarge => "TOO LARGE",
            Error::NoRandom => "NO RANDOM",
            Error::Integrity(..) => "INTEGRITY",
            Error::Stale(..) => "FRESHNESS",
            Error::Missing(_) => "AVAILABILITY",
            Error::Store(_) => "WORKHORSE FAILED",
            Error::Vault(_) => "VAULT FAILED",
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Error::Integrity(b, what) if *b == u64::MAX => write!(f, "INTEGRITY: the table: {what}"),
            Error::Integrity(b, what) => write!(f, "INTEGRITY: block {b}: {what}"),
            Error::Stale(found, want) => {
                write!(f, "FRESHNESS: an older version (generation {found}, the vault's is {want})")
            }
            Error::Missing(what) => write!(f, "AVAILABILITY: {what}"),
            Error::Store(s) => write!(f, "WORKHORSE FAILED: status {s:#x}"),
            Error::Vault(s) => write!(f, "VAULT FAILED: status {s:#x}"),
            e => f.write_str(e.class()),
        }
    }
}

/// Checks a file's name: 1-12 bytes of a-z 0-9 - (so that the workhorse's
/// names, NAME.d, and the vault's key, tf:NAME, fit their limits).
pub fn check_name(name: &str) -> Result<(), Error> {
    let b = name.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= MAX_NAME
        && b.iter().all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    if ok { Ok(()) } else { Err(Error::BadName) }
}

/// The vault's key of a file's record.
pub fn vault_key(name: &str) -> Vec<u8> {
    let mut k = b"tf:".to_vec();
    k.extend_from_slice(name.as_bytes());
    k
}

fn data_name(name: &str) -> String {
    alloc::format!("{name}.d")
}

fn table_name(name: &str, generation: u64) -> String {
    alloc::format!("{name}.{}", generation % 2)
}

fn store_err(what: &'static str) -> impl Fn(StoreError) -> Error {
    move |e| match e {
        StoreError::NotThere => Error::Missing(what),
        StoreError::Failed(s) => Error::Store(s),
    }
}

/// An open trusted file: its record and its verified table.
#[derive(Clone)]
pub struct File {
    name: String,
    rec: Record,
    entries: Vec<Entry>,
    tree: Tree,
}

impl File {
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn size(&self) -> u64 {
        self.rec.size
    }
    pub fn generation(&self) -> u64 {
        self.rec.generation
    }
    pub fn blocks(&self) -> usize {
        self.entries.len()
    }
    /// The root the vault holds (SHA-256; not a secret).
    pub fn root(&self) -> [u8; 32] {
        self.rec.root
    }
}

/// The trusted files of one program: its workhorse directory, its vault
/// namespace, its randomness.
pub struct Files<S, R, G> {
    pub store: S,
    pub roots: R,
    pub rng: G,
}

impl<S: Store, R: Roots, G: Rng> Files<S, R, G> {
    pub fn new(store: S, roots: R, rng: G) -> Self {
        Files { store, roots, rng }
    }

    /// The vault's record of `name`, if it has one.
    pub fn record(&mut self, name: &str) -> Result<Option<Record>, Error> {
        check_name(name)?;
        let mut v = [0u8; 256];
        match self.roots.get(&vault_key(name), &mut v).map_err(Error::Vault)? {
            None => Ok(None),
            Some(n) => Record::decode(&v[..n]).map(Some).ok_or(Error::Integrity(u64::MAX, "the vault's record is malformed")),
        }
    }

    /// Opens `name`: its table read from the workhorse and checked against
    /// the vault's record.
    pub fn open(&mut self, name: &str) -> Result<File, Error> {
        let rec = self.record(name)?.ok_or(Error::NotFound)?;
        let tname = table_name(name, rec.generation);
        let mut head = [0u8; format::HEADER];
        let n = self.store.read(&tname, 0, &mut head).map_err(store_err("the table file is gone"))?;
        if n < format::HEADER {
            return Err(Error::Missing("the table file is cut short"));
        }
        let h = format::Header::decode(&head).ok_or(Error::Integrity(u64::MAX, "not a table"))?;
        if h.blocks > MAX_BLOCKS as u64 {
            return Err(Error::Integrity(u64::MAX, "not a table"));
        }
        let len = format::table_len(h.blocks as usize);
        let mut bytes = vec![0u8; len];
        bytes[..format::HEADER].copy_from_slice(&head);
        let mut at = format::HEADER;
        while at < len {
            let k = (len - at).min(BLOCK);
            let got = self.store.read(&tname, at as u64, &mut bytes[at..at + k]).map_err(store_err("the table file is gone"))?;
            if got < k {
                return Err(Error::Missing("the table file is cut short"));
            }
            at += k;
        }
        let entries = format::open_table(&rec.key, name, &mut bytes).ok_or(Error::Integrity(u64::MAX, "it does not authenticate"))?;
        if h.generation < rec.generation {
            return Err(Error::Stale(h.generation, rec.generation));
        }
        if h.generation != rec.generation || h.size != rec.size || format::blocks_for(h.size) != h.blocks {
            return Err(Error::Integrity(u64::MAX, "it is not the vault's generation"));
        }
        let tree = Tree::new(entries.iter().enumerate().map(|(i, e)| e.leaf(i as u64)).collect());
        if format::root(name, rec.generation, rec.size, &tree.root()) != rec.root {
            return Err(Error::Integrity(u64::MAX, "its hash tree's root is not the vault's"));
        }
        Ok(File { name: String::from(name), rec, entries, tree })
    }

    /// Reads into `out` from `off`: how many bytes (fewer at the end).
    /// Every byte returned was in a block that authenticated.
    /// Whole blocks are read and decrypted in place in `out`; a block the
    /// request covers in part, in a block of its own.  On an error `out`
    /// holds no byte of the block that failed.
    pub fn read(&mut self, f: &File, off: u64, out: &mut [u8]) -> Result<usize, Error> {
        if off >= f.rec.size {
            return Ok(0);
        }
        let n = out.len().min((f.rec.size - off) as usize);
        let cipher = format::Cipher::new(&f.rec.key);
        let dname = data_name(&f.name);
        let mut done = 0;
        let mut part: Option<Vec<u8>> = None;
        while done < n {
            let a = off + done as u64;
            let i = a / BLOCK as u64;
            let bo = (a % BLOCK as u64) as usize;
            let k = (BLOCK - bo).min(n - done);
            if k == BLOCK {
                self.block(f, &cipher, &dname, i, &mut out[done..done + BLOCK])?;
            } else {
                let block = part.get_or_insert_with(|| vec![0u8; BLOCK]);
                self.block(f, &cipher, &dname, i, block)?;
                out[done..done + k].copy_from_slice(&block[bo..bo + k]);
            }
            done += k;
        }
        Ok(n)
    }

    /// Block `i`'s plaintext in `out` (BLOCK bytes), checked; on an error
    /// `out` is zeros.
    fn block(&mut self, f: &File, cipher: &format::Cipher, dname: &str, i: u64, out: &mut [u8]) -> Result<(), Error> {
        let e = &f.entries[i as usize];
        let r = match self.store.read(dname, format::place(i, e.slot), out) {
            Err(e) => Err(store_err("the data file is gone")(e)),
            Ok(got) if got < BLOCK => Err(Error::Missing("the data file is cut short")),
            Ok(_) if !cipher.open_block(&f.name, i, e, out) => Err(Error::Integrity(i, "it does not authenticate")),
            Ok(_) => Ok(()),
        };
        if r.is_err() {
            out.fill(0);
        }
        r
    }

    /// Every block of `f` read and checked (the shell's state, the tests).
    pub fn verify(&mut self, f: &File) -> Result<(), Error> {
        let mut block = vec![0u8; BLOCK];
        let cipher = format::Cipher::new(&f.rec.key);
        let dname = data_name(&f.name);
        for i in 0..f.entries.len() as u64 {
            self.block(f, &cipher, &dname, i, &mut block)?;
        }
        Ok(())
    }

    /// A new, empty file (not yet in the vault: its first write commits it).
    pub fn new_file(&mut self, name: &str) -> Result<File, Error> {
        check_name(name)?;
        let mut key = [0u8; 32];
        if !self.rng.fill(&mut key) {
            return Err(Error::NoRandom);
        }
        let tree = Tree::new(Vec::new());
        let root = format::root(name, 0, 0, &tree.root());
        Ok(File { name: String::from(name), rec: Record { generation: 0, size: 0, key, root }, entries: Vec::new(), tree })
    }

    /// Opens `name`, or makes it when the vault has no record of it.
    pub fn open_or_new(&mut self, name: &str) -> Result<File, Error> {
        match self.open(name) {
            Err(Error::NotFound) => self.new_file(name),
            r => r,
        }
    }

    /// Writes `data` at `off` as the next generation, committed in the
    /// vault before it returns: the new generation.  On an error `f` is
    /// the version before (what the vault still names).
    pub fn write(&mut self, f: &mut File, off: u64, data: &[u8]) -> Result<u64, Error> {
        let end = off.checked_add(data.len() as u64).ok_or(Error::TooLarge)?;
        let blocks = format::blocks_for(end.max(f.rec.size));
        if blocks > MAX_BLOCKS as u64 {
            return Err(Error::TooLarge);
        }
        let mut next = f.clone();
        let old_blocks = f.entries.len() as u64;
        let dname = data_name(&f.name);
        let cipher = format::Cipher::new(&f.rec.key);
        let mut buf = vec![0u8; BLOCK];
        let first = off / BLOCK as u64;
        let last = if data.is_empty() { first } else { end.div_ceil(BLOCK as u64) };
        // Blocks between the old end and the write read as zeros.
        let fill_from = old_blocks.min(first);
        let mut leaves = Vec::with_capacity((last.saturating_sub(fill_from)) as usize);
        for i in fill_from..last {
            let (b0, b1) = (i * BLOCK as u64, (i + 1) * BLOCK as u64);
            let (s, e) = (off.max(b0), end.min(b1));
            // A block the write covers whole keeps no old byte; else the
            // old block (checked) or, past the old end, zeros.
            if s != b0 || e != b1 {
                if i < old_blocks {
                    self.block(f, &cipher, &dname, i, &mut buf)?;
                } else {
                    buf.fill(0);
                }
            }
            if s < e {
                buf[(s - b0) as usize..(e - b0) as usize].copy_from_slice(&data[(s - off) as usize..(e - off) as usize]);
            }
            let slot = if i < old_blocks { 1 - f.entries[i as usize].slot } else { 0 };
            let mut nonce = [0u8; format::NONCE];
            if !self.rng.fill(&mut nonce) {
                return Err(Error::NoRandom);
            }
            let e = cipher.seal_block(&f.name, i, slot, nonce, &mut buf);
            self.store.write(&dname, format::place(i, slot), &buf).map_err(store_err("the data file is gone"))?;
            leaves.push(e.leaf(i));
            if (i as usize) < next.entries.len() {
                next.entries[i as usize] = e;
            } else {
                next.entries.push(e);
            }
        }
        // Each node above the changed leaves hashed once.
        next.tree.update(fill_from as usize, &leaves);
        next.rec.generation = f.rec.generation + 1;
        next.rec.size = end.max(f.rec.size);
        next.rec.root = format::root(&f.name, next.rec.generation, next.rec.size, &next.tree.root());
        let mut nonce = [0u8; format::NONCE];
        if !self.rng.fill(&mut nonce) {
            return Err(Error::NoRandom);
        }
        let table = format::seal_table(&f.rec.key, &f.name, next.rec.generation, next.rec.size, nonce, &next.entries);
        let tname = table_name(&f.name, next.rec.generation);
        for (k, chunk) in table.chunks(BLOCK).enumerate() {
            self.store.write(&tname, (k * BLOCK) as u64, chunk).map_err(store_err("the table file is gone"))?;
        }
        self.store.sync().map_err(store_err("the workhorse's disk"))?;
        // The commit.
        self.roots.put(&vault_key(&f.name), &next.rec.encode()).map_err(Error::Vault)?;
        let g = next.rec.generation;
        *f = next;
        Ok(g)
    }

    /// Removes `name`: its record first (from then on it is gone), then
    /// its files (what the workhorse fails to remove is garbage nobody
    /// reads).  Ok(false) when there was no such file.
    pub fn remove(&mut self, name: &str) -> Result<bool, Error> {
        check_name(name)?;
        if !self.roots.delete(&vault_key(name)).map_err(Error::Vault)? {
            return Ok(false);
        }
        for n in [data_name(name), table_name(name, 0), table_name(name, 1)] {
            let _ = self.store.remove(&n);
        }
        Ok(true)
    }

    /// The names of the files the vault has records of, in name order.
    pub fn names(&mut self) -> Result<Vec<String>, Error> {
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        for i in 0..64 {
            match self.roots.key_at(i, &mut buf).map_err(Error::Vault)? {
                None => break,
                Some(n) => {
                    if let Some(rest) = buf[..n].strip_prefix(b"tf:") {
                        out.push(String::from_utf8_lossy(rest).into_owned());
                    }
                }
            }
        }
        Ok(out)
    }
}
