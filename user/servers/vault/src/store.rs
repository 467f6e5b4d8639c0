//! The store on the vault's area of the disk, its keys and its freshness
//! (docs/trusted-core.md, "Secure storage").
//!
//! The area, in blocks of 4 KiB:
//!
//! - block 0, the **key block**: magic `KEEPVKEY`, version, the sealed
//!   blob's length, the counter value the store was made at (`c0`), a
//!   SHA-256 of these and the blob (a torn write), a Poly1305 tag of the
//!   same under a key derived from the master key (only the holder of the
//!   master key wrote it), then the blob: the 32-byte master key sealed by
//!   the TPM to PCRs 8 and 9.
//! - blocks 1-10 and 11-20, **slots A and B**: magic `KEEPVLT1`, version,
//!   the plaintext's length, the counter, a 24-byte nonce (48 bytes, all
//!   authenticated as associated data), then the records
//!   ([`Records::encode`]) encrypted with XChaCha20-Poly1305 and its tag.
//!
//! The master key never leaves the TPM but sealed, and the vault's memory;
//! the store's key is HKDF-SHA256 of it.  A write goes to the slot that
//! does not hold the current copy, with the counter one above the TPM's
//! NV counter, and only once it is on the disk is the TPM's counter
//! incremented: a cut write leaves the other slot, whose counter the TPM
//! still has.  At start the newest copy that opens must carry the TPM's
//! counter (or one more: the cut came between the write and the
//! increment, which the start completes); an older one is a rollback.

use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use chacha20poly1305::aead::{AeadInPlace, KeyInit};
use chacha20poly1305::{Tag, XChaCha20Poly1305, XNonce};
use sha2::{Digest, Sha256};

use crate::protocol::*;
use crate::records::{self, Records};

pub const BLOCK: usize = 4096;
pub type Page = [u8; BLOCK];
/// Blocks of a slot, and of the whole area.
pub const SLOT_BLOCKS: u64 = 10;
pub const AREA_BLOCKS: u64 = 1 + 2 * SLOT_BLOCKS;
/// The largest sealed blob the key block holds.
pub const MAX_BLOB: usize = 1024;

const KEY_MAGIC: &[u8; 8] = b"KEEPVKEY";
const SLOT_MAGIC: &[u8; 8] = b"KEEPVLT1";
const VERSION: u32 = 1;
const HEAD: usize = 48;
const KEY_HEAD: usize = 72;

/// The block device failed (its status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoError(pub u64);

/// The vault's area: AREA_BLOCKS blocks or more.
pub trait Disk {
    fn blocks(&self) -> u64;
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError>;
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError>;
    fn flush(&mut self) -> Result<(), IoError>;
}

/// Why the TPM refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// PCR_CHANGED: not the boot the blob was sealed under.
    BootChanged,
    /// BAD_BLOB: not this TPM's blob.
    Foreign,
    NoTpm,
    Failed(String),
}

/// The TPM as the vault uses it: its driver's SEAL, UNSEAL, RANDOM and
/// the vault's own NV counter.
pub trait Anchor {
    fn random(&mut self, out: &mut [u8]) -> Result<(), Refusal>;
    fn seal(&mut self, secret: &[u8]) -> Result<Vec<u8>, Refusal>;
    fn unseal(&mut self, blob: &[u8]) -> Result<Vec<u8>, Refusal>;
    fn counter(&mut self) -> Result<u64, Refusal>;
    fn increment(&mut self) -> Result<u64, Refusal>;
}

/// The vault's state; all but Open refuse every client request with
/// [`State::status`], and say why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum State {
    Open,
    Sealed(String),
    Rollback(String),
    Damaged(String),
    NoTpm(String),
    Failed(String),
}

impl State {
    pub fn status(&self) -> u64 {
        match self {
            State::Open => OK,
            State::Sealed(_) => SEALED_ELSEWHERE,
            State::Rollback(_) => ROLLBACK,
            State::Damaged(_) => DAMAGED,
            State::NoTpm(_) => NO_TPM,
            State::Failed(_) => IO_ERROR,
        }
    }
    pub fn why(&self) -> &str {
        match self {
            State::Open => "open",
            State::Sealed(w) | State::Rollback(w) | State::Damaged(w) | State::NoTpm(w) | State::Failed(w) => w,
        }
    }
    pub fn word(&self) -> &'static str {
        match self {
            State::Open => "unsealed",
            State::Sealed(_) => "SEALED ELSEWHERE",
            State::Rollback(_) => "ROLLBACK",
            State::Damaged(_) => "DAMAGED",
            State::NoTpm(_) => "NO TPM",
            State::Failed(_) => "I/O ERROR",
        }
    }
}

/// What a slot held at start (or since the vault wrote it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Empty,
    Good(u64),
    Bad(&'static str),
}

impl core::fmt::Display for Slot {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Slot::Empty => f.write_str("empty"),
            Slot::Good(c) => write!(f, "counter {c}"),
            Slot::Bad(w) => write!(f, "refused ({w})"),
        }
    }
}

/// "1 key", "2 keys".
pub fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn derive(master: &[u8], info: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(Some(b"keep-vault"), master).expand(info, &mut k).expect("32 bytes");
    k
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().unwrap())
}
fn le64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().unwrap())
}

/// A slot's image: header, ciphertext, tag.
pub fn seal_image(key: &[u8; 32], counter: u64, nonce: &[u8; 24], plain: &[u8]) -> Vec<u8> {
    let mut img = vec![0u8; HEAD];
    img[..8].copy_from_slice(SLOT_MAGIC);
    img[8..12].copy_from_slice(&VERSION.to_le_bytes());
    img[12..16].copy_from_slice(&(plain.len() as u32).to_le_bytes());
    img[16..24].copy_from_slice(&counter.to_le_bytes());
    img[24..48].copy_from_slice(nonce);
    let mut body = plain.to_vec();
    let tag = XChaCha20Poly1305::new(key.into())
        .encrypt_in_place_detached(XNonce::from_slice(nonce), &img[..HEAD], &mut body)
        .expect("a plaintext of a slot");
    img.extend_from_slice(&body);
    img.extend_from_slice(&tag);
    img
}

/// The counter and the records of a slot's image.
pub fn open_image(key: &[u8; 32], img: &[u8]) -> Result<(u64, Records), Slot> {
    if img.len() < HEAD || &img[..8] != SLOT_MAGIC {
        return Err(Slot::Empty);
    }
    let len = le32(&img[12..]) as usize;
    if le32(&img[8..]) != VERSION || HEAD + len + 16 > img.len() {
        return Err(Slot::Bad("not a slot of this format"));
    }
    let nonce = XNonce::clone_from_slice(&img[24..48]);
    let mut body = img[HEAD..HEAD + len].to_vec();
    let tag = Tag::clone_from_slice(&img[HEAD + len..HEAD + len + 16]);
    XChaCha20Poly1305::new(key.into())
        .decrypt_in_place_detached(&nonce, &img[..HEAD], &mut body, &tag)
        .map_err(|_| Slot::Bad("authentication failed"))?;
    let records = Records::decode(&body).ok_or(Slot::Bad("its records do not parse"))?;
    Ok((le64(&img[16..]), records))
}

/// A key block: what it holds after the checks that need no key.
enum KeyBlock {
    Blank,
    Torn,
    Good { c0: u64, blob: Vec<u8>, head: Vec<u8>, tag: [u8; 16] },
}

fn key_block_sums(head: &[u8], blob: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(head);
    h.update(blob);
    h.finalize().into()
}

fn key_tag(master: &[u8], head: &[u8], blob: &[u8]) -> [u8; 16] {
    let k = derive(master, b"key block v1");
    let mut aad = head.to_vec();
    aad.extend_from_slice(blob);
    let t = XChaCha20Poly1305::new((&k).into())
        .encrypt_in_place_detached(XNonce::from_slice(&[0; 24]), &aad, &mut [])
        .expect("an empty plaintext");
    t.into()
}

fn make_key_block(master: &[u8], c0: u64, blob: &[u8]) -> Page {
    let mut p = [0u8; BLOCK];
    p[..8].copy_from_slice(KEY_MAGIC);
    p[8..12].copy_from_slice(&VERSION.to_le_bytes());
    p[12..16].copy_from_slice(&(blob.len() as u32).to_le_bytes());
    p[16..24].copy_from_slice(&c0.to_le_bytes());
    let sum = key_block_sums(&p[..24], blob);
    p[24..56].copy_from_slice(&sum);
    let tag = key_tag(master, &p[..24], blob);
    p[56..72].copy_from_slice(&tag);
    p[KEY_HEAD..KEY_HEAD + blob.len()].copy_from_slice(blob);
    p
}

fn parse_key_block(p: &Page) -> KeyBlock {
    if &p[..8] != KEY_MAGIC {
        return KeyBlock::Blank;
    }
    let len = le32(&p[12..]) as usize;
    if le32(&p[8..]) != VERSION || len > MAX_BLOB {
        return KeyBlock::Torn;
    }
    let blob = &p[KEY_HEAD..KEY_HEAD + len];
    if key_block_sums(&p[..24], blob)[..] != p[24..56] {
        return KeyBlock::Torn;
    }
    KeyBlock::Good { c0: le64(&p[16..]), blob: blob.to_vec(), head: p[..24].to_vec(), tag: p[56..72].try_into().unwrap() }
}

/// One reply: status, word 1, the string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    pub status: u64,
    pub value: u64,
    pub text: Vec<u8>,
}

fn reply(status: u64, value: u64) -> Reply {
    Reply { status, value, text: Vec::new() }
}

pub struct Vault<D: Disk, T: Anchor> {
    pub dev: D,
    pub tpm: T,
    pub state: State,
    pub records: Records,
    /// The counter of the current copy, and the TPM's as last read.
    pub counter: u64,
    pub tpm_counter: u64,
    pub slots: [Slot; 2],
    /// The slot of the current copy.
    pub current: usize,
    /// What the start did (made the store, completed a cut write, fell back).
    pub note: String,
    key: [u8; 32],
    prefix: [u8; 16],
    seq: u64,
    /// The last write is on the disk but the TPM's counter not incremented.
    pending: bool,
    pub writes: u64,
}

impl<D: Disk, T: Anchor> Vault<D, T> {
    /// Opens the store on `dev`, making it at the first start (an area
    /// whose key block and slots are blank).  Whatever the state, the
    /// area is only written when it is open (or made).
    pub fn open(dev: D, tpm: T) -> Vault<D, T> {
        let mut v = Vault {
            dev,
            tpm,
            state: State::Failed(String::from("not opened")),
            records: Records::default(),
            counter: 0,
            tpm_counter: 0,
            slots: [Slot::Empty; 2],
            current: 1,
            note: String::new(),
            key: [0; 32],
            prefix: [0; 16],
            seq: 0,
            pending: false,
            writes: 0,
        };
        v.state = match v.start() {
            Ok(()) => State::Open,
            Err(s) => s,
        };
        v
    }

    fn read_slot(&mut self, i: usize) -> Result<Vec<u8>, State> {
        let mut img = Vec::with_capacity(SLOT_BLOCKS as usize * BLOCK);
        let mut p = [0u8; BLOCK];
        for b in 0..SLOT_BLOCKS {
            self.dev.read(1 + i as u64 * SLOT_BLOCKS + b, &mut p).map_err(|e| State::Failed(format!("reading slot {i}: status {}", e.0)))?;
            img.extend_from_slice(&p);
            if b == 0 && &p[..8] != SLOT_MAGIC {
                break;
            }
        }
        Ok(img)
    }

    fn tpm_state(what: &str, r: Refusal) -> State {
        match r {
            Refusal::BootChanged => State::Sealed(format!(
                "the TPM refuses to unseal the store's key: PCRs 8 and 9 are not those it was sealed under (a changed boot image or description); the store is kept"
            )),
            Refusal::Foreign => State::Sealed(String::from(
                "the TPM refuses to unseal the store's key: it was sealed by another TPM; the store is kept",
            )),
            Refusal::NoTpm => State::NoTpm(String::from("no TPM: nothing can be sealed or unsealed")),
            Refusal::Failed(e) => State::Failed(format!("{what}: {e}")),
        }
    }

    fn start(&mut self) -> Result<(), State> {
        let blocks = self.dev.blocks();
        if blocks < AREA_BLOCKS {
            return Err(State::Damaged(format!("the area has {blocks} blocks of 4 KiB, the store needs {AREA_BLOCKS}")));
        }
        let mut kb = [0u8; BLOCK];
        self.dev.read(0, &mut kb).map_err(|e| State::Failed(format!("reading the key block: status {}", e.0)))?;
        let imgs = [self.read_slot(0)?, self.read_slot(1)?];
        let blank = imgs.iter().all(|i| &i[..8] != SLOT_MAGIC);
        self.tpm.random(&mut self.prefix).map_err(|r| Self::tpm_state("RANDOM", r))?;
        let (c0, blob, head, tag) = match parse_key_block(&kb) {
            KeyBlock::Good { c0, blob, head, tag } => (c0, blob, head, tag),
            KeyBlock::Blank | KeyBlock::Torn if blank => return self.create(),
            KeyBlock::Blank => {
                return Err(State::Damaged(String::from("no key block, but a store: nothing can open it (kept)")));
            }
            KeyBlock::Torn => return Err(State::Damaged(String::from("the key block is torn or changed, beside a store (kept)"))),
        };
        let master = self.tpm.unseal(&blob).map_err(|r| Self::tpm_state("UNSEAL", r))?;
        if master.len() != 32 || key_tag(&master, &head, &blob) != tag {
            return Err(State::Damaged(String::from("the key block's tag does not verify under its sealed key (kept)")));
        }
        self.key = derive(&master, b"store v1");
        let t = self.tpm.counter().map_err(|r| Self::tpm_state("COUNTER", r))?;
        self.tpm_counter = t;
        let mut newest: Option<(usize, u64, Records)> = None;
        for (i, img) in imgs.iter().enumerate() {
            match open_image(&self.key, img) {
                Ok((c, r)) => {
                    self.slots[i] = Slot::Good(c);
                    if newest.as_ref().is_none_or(|n| c > n.1) {
                        newest = Some((i, c, r));
                    }
                }
                Err(s) => self.slots[i] = s,
            }
        }
        let Some((i, s, records)) = newest else {
            if self.slots == [Slot::Empty; 2] {
                if t + 1 == c0 {
                    // Made, but cut before the first copy was written.
                    self.counter = t;
                    self.note = String::from("completed the store's making, which was cut");
                    return self.commit(Records::default()).map(drop).map_err(|_| State::Failed(String::from("writing the first copy")));
                }
                return Err(State::Rollback(format!(
                    "the store is gone: no copy on the disk, and the TPM's counter is at {t} (made at {c0})"
                )));
            }
            return Err(State::Damaged(format!("no copy of the store opens: slot A {}, slot B {} (kept)", self.slots[0], self.slots[1])));
        };
        let fell = match self.slots[1 - i] {
            Slot::Bad(w) => format!("; slot {} refused ({w}): a cut write", ["A", "B"][1 - i]),
            _ => String::new(),
        };
        if s < t {
            return Err(State::Rollback(format!(
                "the newest copy of the store has counter {s}, the TPM's counter is {t}: an old copy, not served (kept){fell}"
            )));
        }
        if s > t + 1 {
            return Err(State::Damaged(format!("the store's counter {s} is ahead of the TPM's {t} (kept)")));
        }
        self.records = records;
        self.counter = s;
        self.current = i;
        if s == t + 1 {
            self.tpm_counter = self.tpm.increment().map_err(|r| Self::tpm_state("INCREMENT", r))?;
            self.note = format!("completed the last write's counter increment{fell}");
        } else {
            self.note = format!("copy at counter {s} in slot {}{fell}", ["A", "B"][i]);
        }
        Ok(())
    }

    /// The first start: a master key from the TPM, sealed; the key block,
    /// then the first (empty) copy.
    fn create(&mut self) -> Result<(), State> {
        let t = self.tpm.counter().map_err(|r| Self::tpm_state("COUNTER", r))?;
        let mut master = [0u8; 32];
        self.tpm.random(&mut master).map_err(|r| Self::tpm_state("RANDOM", r))?;
        let blob = self.tpm.seal(&master).map_err(|r| Self::tpm_state("SEAL", r))?;
        if blob.len() > MAX_BLOB {
            return Err(State::Failed(format!("the sealed blob has {} bytes", blob.len())));
        }
        let kb = make_key_block(&master, t + 1, &blob);
        let io = |e: IoError| State::Failed(format!("writing the key block: status {}", e.0));
        self.dev.write(0, &kb).map_err(io)?;
        self.dev.flush().map_err(io)?;
        self.key = derive(&master, b"store v1");
        self.tpm_counter = t;
        self.counter = t;
        self.current = 1;
        // The counter is 1 once defined: above it, a store of this TPM's
        // was here before and its area was erased (key block and all).
        self.note = if t > 1 {
            format!("made a new store: a new key, sealed to this boot (the TPM's counter was at {t}: an earlier store's area was erased)")
        } else {
            String::from("made a new store: a new key, sealed to this boot")
        };
        self.commit(Records::default()).map(drop).map_err(|_| State::Failed(String::from("writing the first copy")))
    }

    /// Writes `next` as the new copy and increments the TPM's counter.
    /// Err(IO_ERROR, 0): nothing changed; Err(IO_ERROR, 1): on the disk,
    /// the increment retried before the next write.
    fn commit(&mut self, next: Records) -> Result<u64, (u64, u64)> {
        if self.pending {
            self.tpm_counter = self.tpm.increment().map_err(|_| (IO_ERROR, 0))?;
            self.pending = false;
        }
        let c = self.counter + 1;
        let target = 1 - self.current;
        self.seq += 1;
        let mut nonce = [0u8; 24];
        nonce[..16].copy_from_slice(&self.prefix);
        nonce[16..].copy_from_slice(&self.seq.to_le_bytes());
        let img = seal_image(&self.key, c, &nonce, &next.encode());
        for (k, chunk) in img.chunks(BLOCK).enumerate() {
            let mut p = [0u8; BLOCK];
            p[..chunk.len()].copy_from_slice(chunk);
            if self.dev.write(1 + target as u64 * SLOT_BLOCKS + k as u64, &p).is_err() {
                self.slots[target] = Slot::Bad("a write failed");
                return Err((IO_ERROR, 0));
            }
        }
        if self.dev.flush().is_err() {
            self.slots[target] = Slot::Bad("a write failed");
            return Err((IO_ERROR, 0));
        }
        self.writes += 1;
        self.records = next;
        self.counter = c;
        self.current = target;
        self.slots[target] = Slot::Good(c);
        match self.tpm.increment() {
            Ok(v) => {
                self.tpm_counter = v;
                Ok(c)
            }
            Err(_) => {
                self.pending = true;
                Err((IO_ERROR, 1))
            }
        }
    }

    /// A client's request (the client is the number its capability's
    /// payload gives); `s` is the string it sent.
    pub fn request(&mut self, client: u16, label: u64, w0: u64, s: &[u8]) -> Reply {
        if !matches!(label, PUT | GET | DELETE | LIST) {
            return reply(BAD_REQUEST, 0);
        }
        if label == PUT && (w0 == 0 || w0 as usize > records::MAX_NAME || w0 as usize > s.len()) {
            return reply(BAD_REQUEST, 0);
        }
        if label == LIST && w0 > 0xffff {
            return reply(BAD_REQUEST, 0);
        }
        if self.state != State::Open {
            return reply(self.state.status(), 0);
        }
        let done = |v: &mut Self, next: Result<Records, u64>| match next {
            Err(st) => reply(st, 0),
            Ok(n) => match v.commit(n) {
                Ok(c) => reply(OK, c),
                Err((st, w)) => reply(st, w),
            },
        };
        match label {
            PUT => {
                let (name, value) = s.split_at(w0 as usize);
                let next = self.records.put(client, name, value);
                done(self, next)
            }
            DELETE => {
                let next = self.records.delete(client, s);
                done(self, next)
            }
            GET => match self.records.get(client, s) {
                Ok(v) => Reply { status: OK, value: v.len() as u64, text: v.to_vec() },
                Err(st) => reply(st, 0),
            },
            _ => {
                let count = self.records.keys_of(client) as u64;
                match self.records.name_at(client, w0 as usize) {
                    Some(n) => Reply { status: OK, value: count, text: n.to_vec() },
                    None => reply(NOT_FOUND, count),
                }
            }
        }
    }

    /// STATS: (state's status, keys, the store's counter) and the report,
    /// which names no key and shows no value.
    pub fn stats(&self) -> ([u64; 3], String) {
        let mut t = format!("state: {}", self.state.word());
        if self.state != State::Open {
            t += &format!(": {}", self.state.why());
        }
        t += &format!(
            "\nstore counter {}, TPM counter {}; slot A {}, slot B {}\n",
            self.counter, self.tpm_counter, self.slots[0], self.slots[1]
        );
        if !self.note.is_empty() {
            t += &format!("at start: {}\n", self.note);
        }
        let clients = self.records.clients();
        t += &format!(
            "{} of {}; {} by this instance",
            count(self.records.0.len(), "key"),
            count(clients.len(), "client"),
            count(self.writes as usize, "write")
        );
        for (c, k, b) in clients {
            t += &format!("\nclient {c}: {}, {}", count(k, "key"), count(b, "byte"));
        }
        ([self.state.status(), self.records.0.len() as u64, self.counter], t)
    }
}
