//! The checkpoint of the persistent pool as the store keeps it
//! (docs/persistence.md, "On the disk"): each record the kernel's
//! `CHECKPOINT.READ` gives is a page of the store under its frame number
//! (the kernel record under key 0, which no frame of the pool has), and the
//! checkpoint's meta holds the records' descriptors and the key their seal
//! was made under, sealed by the TPM to the measured boot where there is
//! one, and the value of the TPM's checkpoint counter it was written
//! under (docs/persistence.md, "Freshness").  The meta ends in a tag, an
//! HMAC-SHA256 under a key derived from the seal's key, so that nobody
//! without that key can change the counter (or anything else in it).
//! Decoding checks everything the checkpointer relies on before it gives
//! anything to the kernel; the kernel checks the seals.

use alloc::vec::Vec;
use hmac::{Hmac, Mac};
use sha2::Sha256;

/// Words of a descriptor (the ABI's CHECKPOINT_RECORD_WORDS).
pub const WORDS: usize = 6;
const MAGIC: &[u8; 8] = b"KEEPPOOL";
const FORMAT: u32 = 4;
/// magic, format, the key's form, epoch, records, the key's length,
/// whether there is a counter, the counter.
const HEAD: usize = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8;
/// The tag at the end.
pub const TAG: usize = 32;
/// The longest sealed key (the TPM driver's blobs are a few hundred bytes).
pub const MAX_KEY: usize = 1024;
const RECORD: usize = 8 + 8 * WORDS;
/// The most records a checkpoint of the pool may have (a 1 GiB pool and
/// its kernel record).
pub const MAX_RECORDS: u64 = (1 << 18) + 1;

/// The key a record is kept under: its frame number, 0 for the kernel record.
pub fn key_of(desc: &[u64; WORDS]) -> u64 {
    desc[0] & 0xffff_ffff
}

/// The seal's key as the area keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Key {
    /// In the clear: a machine without a TPM (docs/persistence.md).
    Clear([u8; 32]),
    /// The TPM driver's SEAL of it, bound to the measured boot's PCRs.
    Sealed(Vec<u8>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    pub epoch: u64,
    pub key: Key,
    /// The TPM's checkpoint counter this checkpoint stands for (one more
    /// than the counter's value when it was written); None without a TPM.
    pub counter: Option<u64>,
    /// (store key, descriptor), in the order the kernel read them: frame
    /// order, the kernel record last.
    pub records: Vec<(u64, [u64; WORDS])>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    Short,
    Magic,
    Format(u32),
    Count(u64),
    /// A record's key is not its descriptor's frame, or is not above the
    /// one before it, or the kernel record is not the last.
    Record(usize),
    /// A record sealed after the checkpoint's epoch (or in none), or a
    /// kernel record of another epoch.
    Epoch(usize),
    /// The key's form is unknown or its length wrong for it.
    Key,
    /// The counter's flag is neither 0 nor 1, or a sealed key has no
    /// counter.
    Counter,
    /// The tag does not match: not written under this key.
    Tag,
    /// A run of unchanged records the kernel reported is not what the last
    /// checkpoint holds in its frames.
    Run { first: u64, end: u64, count: u64 },
}

impl core::fmt::Display for Bad {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Bad::Short => write!(f, "the record list is cut short"),
            Bad::Magic => write!(f, "no record list of the persistent pool"),
            Bad::Format(v) => write!(f, "record list format {v}, not {FORMAT}"),
            Bad::Count(n) => write!(f, "{n} records, more than a pool has"),
            Bad::Record(i) => write!(f, "record {i} is malformed"),
            Bad::Epoch(i) => write!(f, "record {i} is of an epoch the checkpoint cannot hold"),
            Bad::Key => write!(f, "the seal's key is malformed"),
            Bad::Counter => write!(f, "the freshness counter is malformed"),
            Bad::Tag => write!(f, "the record list's tag is wrong (not written under the seal's key)"),
            Bad::Run { first, end, count } => write!(
                f,
                "the kernel reports {count} records unchanged in frames {first:#x}..{end:#x}, which the last checkpoint does not hold"
            ),
        }
    }
}

/// The key of the meta's tag: HKDF-SHA256 of the seal's key, so that the
/// kernel's seal and the tag never share a key.
fn tag_key(seal: &[u8; 32]) -> [u8; 32] {
    let mut k = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(None, seal)
        .expand(b"keep checkpoint meta tag", &mut k)
        .expect("32 bytes is a valid HKDF-SHA256 length");
    k
}

fn mac(seal: &[u8; 32], body: &[u8]) -> Hmac<Sha256> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(&tag_key(seal)).expect("HMAC takes any key length");
    m.update(body);
    m
}

/// Whether the meta `b` was written under the seal's key `seal` (its tag,
/// compared in constant time).
pub fn authentic(b: &[u8], seal: &[u8; 32]) -> Result<(), Bad> {
    if b.len() < TAG {
        return Err(Bad::Short);
    }
    let (body, tag) = b.split_at(b.len() - TAG);
    mac(seal, body).verify_slice(tag).map_err(|_| Bad::Tag)
}

impl Image {
    /// The meta, tagged under the seal's key `seal`.
    pub fn encode(&self, seal: &[u8; 32]) -> Vec<u8> {
        let (form, key): (u32, &[u8]) = match &self.key {
            Key::Clear(k) => (0, k),
            Key::Sealed(b) => (1, b),
        };
        let mut v = Vec::with_capacity(HEAD + key.len() + RECORD * self.records.len());
        v.extend_from_slice(MAGIC);
        v.extend_from_slice(&FORMAT.to_le_bytes());
        v.extend_from_slice(&form.to_le_bytes());
        v.extend_from_slice(&self.epoch.to_le_bytes());
        v.extend_from_slice(&(self.records.len() as u64).to_le_bytes());
        v.extend_from_slice(&(key.len() as u64).to_le_bytes());
        v.extend_from_slice(&(self.counter.is_some() as u64).to_le_bytes());
        v.extend_from_slice(&self.counter.unwrap_or(0).to_le_bytes());
        v.extend_from_slice(key);
        for (k, d) in &self.records {
            v.extend_from_slice(&k.to_le_bytes());
            for w in d {
                v.extend_from_slice(&w.to_le_bytes());
            }
        }
        let tag = mac(seal, &v).finalize().into_bytes();
        v.extend_from_slice(&tag);
        v
    }

    /// The meta's contents; its tag is checked by [`authentic`] once the
    /// seal's key is known (a sealed one only after the TPM unsealed it).
    pub fn decode(b: &[u8]) -> Result<Image, Bad> {
        let word = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
        if b.len() < HEAD {
            return Err(if b.len() >= 8 && &b[..8] != MAGIC { Bad::Magic } else { Bad::Short });
        }
        if &b[..8] != MAGIC {
            return Err(Bad::Magic);
        }
        let format = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if format != FORMAT {
            return Err(Bad::Format(format));
        }
        let form = u32::from_le_bytes(b[12..16].try_into().unwrap());
        let epoch = word(16);
        let n = word(24);
        let klen = word(32);
        let counted = word(40);
        let counter = word(48);
        if n == 0 || n > MAX_RECORDS {
            return Err(Bad::Count(n));
        }
        let key_ok = match form {
            0 => klen == 32,
            1 => klen > 0 && klen <= MAX_KEY as u64,
            _ => false,
        };
        if !key_ok {
            return Err(Bad::Key);
        }
        let counter = match (counted, form) {
            (0, 0) => None,
            (1, _) => Some(counter),
            _ => return Err(Bad::Counter),
        };
        let klen = klen as usize;
        let body = HEAD + klen;
        if b.len() != body + RECORD * n as usize + TAG {
            return Err(Bad::Short);
        }
        let raw = &b[HEAD..body];
        let key = if form == 0 { Key::Clear(raw.try_into().unwrap()) } else { Key::Sealed(raw.to_vec()) };
        let mut records = Vec::with_capacity(n as usize);
        let mut before = 0;
        for i in 0..n as usize {
            let at = body + RECORD * i;
            let k = word(at);
            let mut d = [0u64; WORDS];
            for (j, w) in d.iter_mut().enumerate() {
                *w = word(at + 8 + 8 * j);
            }
            let last = i + 1 == n as usize;
            if k != key_of(&d) || (k == 0) != last || (k == 0 && d[0] != 0) || (!last && k <= before) {
                return Err(Bad::Record(i));
            }
            // A record is sealed in the epoch whose BEGIN first saw its
            // content (an unchanged page keeps its record): never after
            // this checkpoint's; the kernel record in this one's.
            if d[4] == 0 || d[4] > epoch || (last && d[4] != epoch) {
                return Err(Bad::Epoch(i));
            }
            before = k;
            records.push((k, d));
        }
        Ok(Image { epoch, key, counter, records })
    }
}

impl Image {
    /// The records of this checkpoint that READ reported unchanged since it
    /// (docs/persistence.md, "Incremental checkpoints"): `count` records in
    /// frames `first` to `end - 1`, which must be exactly this image's
    /// records there (none of them the kernel record).
    pub fn unchanged(&self, first: u64, end: u64, count: u64) -> Result<&[(u64, [u64; WORDS])], Bad> {
        let frames = &self.records[..self.records.len().saturating_sub(1)];
        let lo = frames.partition_point(|r| r.0 < first);
        let hi = frames.partition_point(|r| r.0 < end);
        if first == 0 || first >= end || (hi - lo) as u64 != count {
            return Err(Bad::Run { first, end, count });
        }
        Ok(&frames[lo..hi])
    }
}

/// What the counter a checkpoint carries says of it, against the TPM's
/// checkpoint counter (docs/persistence.md, "Freshness").  A commit
/// writes the counter's value plus one, and increments the counter only
/// once the root is on the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    /// The newest checkpoint written: restore it.
    Current,
    /// The newest checkpoint written, whose increment did not happen (a
    /// cut between the root's flush and the increment): increment, then
    /// restore.
    Unacknowledged,
    /// Older than the last committed: an old area put back.
    RolledBack,
    /// Ahead of anything this TPM's checkpointer committed.
    Ahead,
}

pub fn judge(carried: u64, tpm: u64) -> Freshness {
    if carried == tpm {
        Freshness::Current
    } else if tpm.checked_add(1) == Some(carried) {
        Freshness::Unacknowledged
    } else if carried < tpm {
        Freshness::RolledBack
    } else {
        Freshness::Ahead
    }
}
