//! The bytes: the vault's record, the table, the blocks.  Every function
//! here is a pure function of its arguments (the host tests check them
//! through lib.rs).

use ocb3::aead::{AeadInPlace, KeyInit};
use ocb3::{GenericArray, Ocb3};

/// AES-256 in OCB3 (RFC 7253; RustCrypto's `ocb3` over `aes`, which uses
/// AES-NI when the CPU has it), a 96-bit nonce and a 128-bit tag.
type Aead = Ocb3<aes::Aes256>;
use alloc::vec::Vec;
use sha2::{Digest, Sha256};

use crate::tree::Hash;

/// A block of plaintext (and of ciphertext: the tag is in the table).
pub const BLOCK: usize = 4096;
/// A file's largest size in blocks (4 MiB; the table then is 29 KiB).
pub const MAX_BLOCKS: usize = 1024;
/// A name's longest (NAME.d within the workhorse's 16 bytes, tf:NAME
/// within the vault's 32).
pub const MAX_NAME: usize = 12;
/// The table's header, in the clear (authenticated).
pub const HEADER: usize = 64;
const MAGIC: &[u8; 8] = b"KEEPTF2\0";
const RECORD_VERSION: u8 = 2;
/// The AEAD's nonce (96 bits).
pub const NONCE: usize = 12;
/// An entry: the place (0 or 1), the nonce, the tag.
pub const ENTRY: usize = 1 + NONCE + 16;

/// What the vault holds of a file (81 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    pub generation: u64,
    pub size: u64,
    pub key: [u8; 32],
    pub root: Hash,
}

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(81);
        v.push(RECORD_VERSION);
        v.extend_from_slice(&self.generation.to_le_bytes());
        v.extend_from_slice(&self.size.to_le_bytes());
        v.extend_from_slice(&self.key);
        v.extend_from_slice(&self.root);
        v
    }
    pub fn decode(b: &[u8]) -> Option<Record> {
        if b.len() != 81 || b[0] != RECORD_VERSION {
            return None;
        }
        let u = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        Some(Record { generation: u(1), size: u(9), key: b[17..49].try_into().unwrap(), root: b[49..81].try_into().unwrap() })
    }
}

/// A block's entry in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub slot: u8,
    pub nonce: [u8; NONCE],
    pub tag: [u8; 16],
}

impl Entry {
    fn bytes(&self) -> [u8; ENTRY] {
        let mut b = [0u8; ENTRY];
        b[0] = self.slot;
        b[1..1 + NONCE].copy_from_slice(&self.nonce);
        b[1 + NONCE..].copy_from_slice(&self.tag);
        b
    }
    /// The tree's leaf of block `i`: SHA-256 of 0x00, i and the entry (the
    /// tag authenticates the block's ciphertext, so the leaf binds it).
    pub fn leaf(&self, i: u64) -> Hash {
        let mut h = Sha256::new();
        h.update([0u8]);
        h.update(i.to_le_bytes());
        h.update(self.bytes());
        h.finalize().into()
    }
}

/// The root the vault holds: SHA-256 of 0x03, the name, the generation,
/// the size and the tree's root.
pub fn root(name: &str, generation: u64, size: u64, tree: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([3u8, name.len() as u8]);
    h.update(name.as_bytes());
    h.update(generation.to_le_bytes());
    h.update(size.to_le_bytes());
    h.update(tree);
    h.finalize().into()
}

pub fn blocks_for(size: u64) -> u64 {
    size.div_ceil(BLOCK as u64)
}

/// Where block `i`'s place `slot` is in the data file.
pub fn place(i: u64, slot: u8) -> u64 {
    (2 * i + slot as u64) * BLOCK as u64
}

/// A table's length with `blocks` entries.
pub fn table_len(blocks: usize) -> usize {
    HEADER + blocks * ENTRY + 16
}

/// A block's associated data: `keep-tfile block`, the name's length and
/// the name, the block's number and its place (at most 42 bytes).
fn block_ad(name: &str, i: u64, slot: u8, ad: &mut [u8; 16 + 1 + MAX_NAME + 8 + 1]) -> usize {
    ad[..16].copy_from_slice(b"keep-tfile block");
    ad[16] = name.len() as u8;
    let n = 17 + name.len();
    ad[17..n].copy_from_slice(name.as_bytes());
    ad[n..n + 8].copy_from_slice(&i.to_le_bytes());
    ad[n + 8] = slot;
    n + 9
}

/// A file's cipher: the AEAD under its key, its key schedules (AES's
/// encryption and decryption rounds, OCB's offsets) made once for every
/// block of a request.
pub struct Cipher(Aead);

impl Cipher {
    pub fn new(key: &[u8; 32]) -> Cipher {
        Cipher(Aead::new(key.into()))
    }

    /// Encrypts the block in place: its entry.
    pub fn seal_block(&self, name: &str, i: u64, slot: u8, nonce: [u8; NONCE], buf: &mut [u8]) -> Entry {
        let mut ad = [0u8; 16 + 1 + MAX_NAME + 8 + 1];
        let n = block_ad(name, i, slot, &mut ad);
        let tag = self.0.encrypt_in_place_detached(GenericArray::from_slice(&nonce), &ad[..n], buf).expect("a block is not too long");
        Entry { slot, nonce, tag: tag.into() }
    }

    /// Decrypts the block in place; false when it does not authenticate
    /// (then the caller must not use `buf`: OCB decrypts before it checks
    /// the tag).
    pub fn open_block(&self, name: &str, i: u64, e: &Entry, buf: &mut [u8]) -> bool {
        let mut ad = [0u8; 16 + 1 + MAX_NAME + 8 + 1];
        let n = block_ad(name, i, e.slot, &mut ad);
        self.0.decrypt_in_place_detached(GenericArray::from_slice(&e.nonce), &ad[..n], buf, GenericArray::from_slice(&e.tag)).is_ok()
    }
}

/// Encrypts the block in place: its entry.
pub fn seal_block(key: &[u8; 32], name: &str, i: u64, slot: u8, nonce: [u8; NONCE], buf: &mut [u8]) -> Entry {
    Cipher::new(key).seal_block(name, i, slot, nonce, buf)
}

/// Decrypts the block in place; false when it does not authenticate.
pub fn open_block(key: &[u8; 32], name: &str, i: u64, e: &Entry, buf: &mut [u8]) -> bool {
    Cipher::new(key).open_block(name, i, e, buf)
}

/// The table's header, as read (unauthenticated until `open_table`).
pub struct Header {
    pub generation: u64,
    pub size: u64,
    pub blocks: u64,
    pub nonce: [u8; NONCE],
}

impl Header {
    pub fn decode(b: &[u8]) -> Option<Header> {
        if b.len() < HEADER || &b[..8] != MAGIC || b[32 + NONCE..HEADER].iter().any(|&x| x != 0) {
            return None;
        }
        let u = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap());
        Some(Header { generation: u(8), size: u(16), blocks: u(24), nonce: b[32..32 + NONCE].try_into().unwrap() })
    }
}

fn table_ad(name: &str, header: &[u8]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(HEADER + 32);
    ad.extend_from_slice(b"keep-tfile table");
    ad.push(name.len() as u8);
    ad.extend_from_slice(name.as_bytes());
    ad.extend_from_slice(&header[..HEADER]);
    ad
}

/// The table of a generation: the header, the entries encrypted, the tag.
pub fn seal_table(key: &[u8; 32], name: &str, generation: u64, size: u64, nonce: [u8; NONCE], entries: &[Entry]) -> Vec<u8> {
    let mut t = Vec::with_capacity(table_len(entries.len()));
    t.extend_from_slice(MAGIC);
    t.extend_from_slice(&generation.to_le_bytes());
    t.extend_from_slice(&size.to_le_bytes());
    t.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    t.extend_from_slice(&nonce);
    t.extend_from_slice(&[0u8; HEADER - 32 - NONCE]);
    for e in entries {
        t.extend_from_slice(&e.bytes());
    }
    let ad = table_ad(name, &t);
    let c = Aead::new(key.into());
    let tag = c.encrypt_in_place_detached(GenericArray::from_slice(&nonce), &ad, &mut t[HEADER..]).expect("a table is not too long");
    t.extend_from_slice(&tag);
    t
}

/// The entries of a whole table (`table_len` bytes, decrypted in place),
/// or None when it does not authenticate under the key and the name.
pub fn open_table(key: &[u8; 32], name: &str, t: &mut [u8]) -> Option<Vec<Entry>> {
    let h = Header::decode(t)?;
    if t.len() != table_len(h.blocks as usize) {
        return None;
    }
    let ad = table_ad(name, t);
    let body_len = t.len() - HEADER - 16;
    let (body, tag) = t[HEADER..].split_at_mut(body_len);
    let c = Aead::new(key.into());
    c.decrypt_in_place_detached(GenericArray::from_slice(&h.nonce), &ad, body, GenericArray::from_slice(tag)).ok()?;
    if body.chunks(ENTRY).any(|b| b[0] > 1) {
        return None;
    }
    Some(
        body.chunks(ENTRY)
            .map(|b| Entry { slot: b[0], nonce: b[1..1 + NONCE].try_into().unwrap(), tag: b[1 + NONCE..].try_into().unwrap() })
            .collect(),
    )
}
