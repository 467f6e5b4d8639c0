//! The TPM (docs/devices.md, "The TPM"; docs/trusted-core.md, "The trust
//! anchor"): the `tpm` server drives a TPM 2.0 through its CRB interface
//! (one page of device memory at 0xfed40000, the only device capability
//! it holds), keeps the measurement log of the boot and answers its
//! clients.  This library is its protocol, the TPM 2.0 marshalling
//! ([`cmd`], host-tested), the log's policy and the client side;
//! `main.rs` is the server.
//!
//! The protocol is defined in `abi/services/tpm.toml`; `tools/idlgen.py`
//! generates from it `protocol.rs` (labels, statuses, payload ranges, the
//! typed [`Stub`] for the requests without strings) and the table in
//! docs/devices.md, "The TPM".  [`Client`] makes the calls with strings.

#![no_std]

pub mod cmd;
pub mod protocol;
pub use protocol::*;

use keep_abi::{IpcBuffer, Sender, Tag, err};

/// The PCRs of the measured boot (docs/trusted-core.md, "PCRs"): the
/// boot image and each program in it, then the system description.
pub const PCR_PROGRAMS: u32 = 8;
pub const PCR_DESCRIPTION: u32 = 9;
/// The PCRs EXTEND may extend.
pub const PCRS: [u32; 2] = [PCR_PROGRAMS, PCR_DESCRIPTION];
/// What SEAL binds a secret to: PCRs 8 and 9 (a bit per PCR).
pub const SEAL_PCRS: u32 = (1 << PCR_PROGRAMS) | (1 << PCR_DESCRIPTION);

/// Where a program of the system description with `tpm` finds its
/// capability to the server (a client's: EXTEND is refused).
pub const TPM_SLOT: u64 = 0xb;
/// The payload of that capability (the root task's is 0).
pub const CLIENT: u64 = 1;

/// The NV index of the monotonic counter (the owner's range, Part 2
/// TPM_HT_NV_INDEX; "KEP" in its low bytes).
pub const COUNTER_INDEX: u32 = 0x014b_4550;
/// The vault's counter (docs/trusted-core.md, "Secure storage"): its own
/// NV index ("KVT"), which only the vault's capability reads and
/// increments, so that no other client can make the vault's store look
/// rolled back.
pub const VAULT_COUNTER_INDEX: u32 = 0x014b_5654;
/// COUNTER's and INCREMENT's word 0 for it.
pub const VAULT_COUNTER: u64 = 1;
/// The payload of the vault's capability (the root task gives it to the
/// description's server with program=vault and `tpm`).
pub const VAULT: u64 = 2;

/// The checkpointer's counter (docs/persistence.md, "Freshness"): its own
/// NV index ("KCK"), which only the checkpointer's capability reads and
/// increments, so that no other client can make the last checkpoint look
/// rolled back (or an old one look new).
pub const CHECKPOINT_COUNTER_INDEX: u32 = 0x014b_434b;
/// COUNTER's and INCREMENT's word 0 for it.
pub const CHECKPOINT_COUNTER: u64 = 2;
/// The payload of the checkpointer's capability (the root task gives it to
/// the description's servers of program `checkpointer` with `checkpoint`
/// and `tpm`).
pub const CHECKPOINTER: u64 = 3;

/// The NV index COUNTER and INCREMENT with word 0 `which` act on for a
/// caller with `payload`; Err is the status to answer.
pub fn counter_index(payload: u64, which: u64) -> Result<u32, u64> {
    match which {
        0 => Ok(COUNTER_INDEX),
        VAULT_COUNTER if payload == VAULT => Ok(VAULT_COUNTER_INDEX),
        CHECKPOINT_COUNTER if payload == CHECKPOINTER => Ok(CHECKPOINT_COUNTER_INDEX),
        VAULT_COUNTER | CHECKPOINT_COUNTER => Err(DENIED),
        _ => Err(BAD_REQUEST),
    }
}

/// How many entries the log keeps, and how long a name may be.
pub const LOG_ENTRIES: usize = 128;
pub const NAME_LEN: usize = 48;
/// The most RANDOM gives in one call.
pub const MAX_RANDOM: u64 = 64;

/// One entry of the measurement log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub pcr: u32,
    pub digest: cmd::Digest,
    name: [u8; NAME_LEN],
    name_len: u8,
}

impl Entry {
    /// An entry; a name longer than NAME_LEN is cut (at a character).
    pub fn new(pcr: u32, digest: cmd::Digest, name: &str) -> Entry {
        let mut n = name.len().min(NAME_LEN);
        while !name.is_char_boundary(n) {
            n -= 1;
        }
        let mut e = Entry { pcr, digest, name: [0; NAME_LEN], name_len: n as u8 };
        e.name[..n].copy_from_slice(&name.as_bytes()[..n]);
        e
    }
    pub fn name(&self) -> &str {
        core::str::from_utf8(&self.name[..self.name_len as usize]).unwrap_or("?")
    }
}

/// The measurement log as the server keeps it.
pub struct Log {
    entries: [Option<Entry>; LOG_ENTRIES],
    len: usize,
}

impl Default for Log {
    fn default() -> Self {
        Self::new()
    }
}

impl Log {
    pub const fn new() -> Log {
        Log { entries: [None; LOG_ENTRIES], len: 0 }
    }
    /// Whether an EXTEND of `pcr` from a caller with `payload` with a
    /// string of `len` bytes is accepted: the root task's (payload 0),
    /// a PCR of [`PCRS`], a digest; Err is the status to answer.
    pub fn check(&self, payload: u64, pcr: u64, len: usize) -> Result<(), u64> {
        if payload != 0 {
            return Err(DENIED);
        }
        if !PCRS.iter().any(|&p| p as u64 == pcr) || len < 32 {
            return Err(BAD_REQUEST);
        }
        if self.len == LOG_ENTRIES {
            return Err(LOG_FULL);
        }
        Ok(())
    }
    pub fn push(&mut self, e: Entry) -> bool {
        if self.len == LOG_ENTRIES {
            return false;
        }
        self.entries[self.len] = Some(e);
        self.len += 1;
        true
    }
    pub fn get(&self, i: usize) -> Option<&Entry> {
        self.entries.get(i).and_then(|e| e.as_ref())
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The value a PCR holds after extending it with `digests` from zero
/// (what the TPM computes: each time, SHA-256 of the old value and the
/// digest).  `hash` is SHA-256 of its argument's concatenation.
pub fn replay(digests: impl Iterator<Item = cmd::Digest>, hash: impl Fn(&[u8]) -> cmd::Digest) -> cmd::Digest {
    let mut pcr = [0u8; 32];
    for d in digests {
        let mut b = [0u8; 64];
        b[..32].copy_from_slice(&pcr);
        b[32..].copy_from_slice(&d);
        pcr = hash(&b);
    }
    pcr
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "ok",
        BAD_REQUEST => "bad request",
        DENIED => "denied",
        NO_TPM => "no TPM",
        TPM_ERROR => "the TPM refused",
        END => "end of the log",
        PCR_CHANGED => "the PCRs are not those of the sealing (a changed boot image or description)",
        BAD_BLOB => "not a sealed blob of this TPM",
        LOG_FULL => "the log is full",
        BAD_RESPONSE => "the TPM did not answer, or its response does not parse",
        _ => "the call failed",
    }
}

/// Why a client's request failed: the server's status (with the TPM's
/// response code for TPM_ERROR), or the kernel's error of the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    Status(u64, u32),
    Call(u64),
}

impl core::fmt::Display for Failure {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match *self {
            Failure::Status(TPM_ERROR, code) => {
                f.write_str("the TPM refused: ")?;
                cmd::rc_name(code, f)
            }
            Failure::Status(s, _) => f.write_str(status_name(s)),
            Failure::Call(e) => write!(f, "the call failed: {}", keep_abi::Error(e)),
        }
    }
}

/// The client side: a sender capability to the server and the caller's
/// IPC buffer (`keep_rt::ipc_buffer()`), through which byte strings go.
pub struct Client<'a>(pub Sender, pub &'a mut IpcBuffer);

impl Client<'_> {
    fn call(&mut self, label: u64, w0: u64, send: Option<&[u8]>, out: &mut [u8]) -> Result<(u64, usize), Failure> {
        let buf = &mut *self.1;
        let mut tag = Tag::new(label);
        if let Some(s) = send {
            buf.set_string(s);
            tag = tag.with_string();
        }
        let m = self.0.call(tag, [w0, 0, 0, 0]);
        if m.err != err::OK {
            return Err(Failure::Call(m.err));
        }
        match m.words[0] {
            OK => {
                let n = if m.tag.has_string() { buf.read_string(out) } else { 0 };
                Ok((m.words[1], n))
            }
            s => Err(Failure::Status(s, m.words[1] as u32)),
        }
    }

    /// EXTEND `pcr` with `digest`, logged as `name`.
    pub fn extend(&mut self, pcr: u32, digest: &cmd::Digest, name: &str) -> Result<(), Failure> {
        let mut s = [0u8; 32 + NAME_LEN];
        let n = name.len().min(NAME_LEN);
        s[..32].copy_from_slice(digest);
        s[32..32 + n].copy_from_slice(&name.as_bytes()[..n]);
        self.call(EXTEND, pcr as u64, Some(&s[..32 + n]), &mut []).map(drop)
    }

    pub fn pcr(&mut self, pcr: u32) -> Result<cmd::Digest, Failure> {
        let mut d = [0u8; 32];
        self.call(PCR, pcr as u64, None, &mut d)?;
        Ok(d)
    }

    /// Entry `i` of the log; Ok(None) past the last.
    pub fn log(&mut self, i: usize) -> Result<Option<Entry>, Failure> {
        let mut s = [0u8; 32 + NAME_LEN];
        match self.call(LOG, i as u64, None, &mut s) {
            Ok((pcr, n)) if n >= 32 => {
                let name = core::str::from_utf8(&s[32..n]).unwrap_or("?");
                Ok(Some(Entry::new(pcr as u32, s[..32].try_into().unwrap(), name)))
            }
            Ok(_) => Err(Failure::Status(BAD_REQUEST, 0)),
            Err(Failure::Status(END, _)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Fills `out` (at most MAX_RANDOM bytes) from the TPM's generator.
    pub fn random(&mut self, out: &mut [u8]) -> Result<usize, Failure> {
        self.call(RANDOM, out.len() as u64, None, out).map(|(_, n)| n)
    }

    /// SEAL `secret`; the blob goes into `blob` (512 bytes suffice),
    /// its length is returned.
    pub fn seal(&mut self, secret: &[u8], blob: &mut [u8]) -> Result<usize, Failure> {
        self.call(SEAL, 0, Some(secret), blob).map(|(_, n)| n)
    }

    /// UNSEAL `blob`; the secret goes into `out`.
    pub fn unseal(&mut self, blob: &[u8], out: &mut [u8]) -> Result<usize, Failure> {
        self.call(UNSEAL, 0, Some(blob), out).map(|(_, n)| n)
    }

    pub fn counter(&mut self) -> Result<u64, Failure> {
        self.call(COUNTER, 0, None, &mut []).map(|(v, _)| v)
    }

    pub fn increment(&mut self) -> Result<u64, Failure> {
        self.call(INCREMENT, 0, None, &mut []).map(|(v, _)| v)
    }

    /// COUNTER or INCREMENT of counter `which` (0, [`VAULT_COUNTER`] or
    /// [`CHECKPOINT_COUNTER`]).
    pub fn counter_of(&mut self, which: u64, increment: bool) -> Result<u64, Failure> {
        self.call(if increment { INCREMENT } else { COUNTER }, which, None, &mut []).map(|(v, _)| v)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// The generated protocol keeps the wire values the root task, the
    /// vault and the checkpointer were built with.
    #[test]
    fn wire_values() {
        let labels = [EXTEND, PCR, LOG, RANDOM, SEAL, UNSEAL, COUNTER, INCREMENT, QUIT];
        assert_eq!(labels, [1, 2, 3, 4, 5, 6, 7, 8, 9]);
        let statuses = [OK, BAD_REQUEST, DENIED, NO_TPM, TPM_ERROR, END, PCR_CHANGED, BAD_BLOB, LOG_FULL, BAD_RESPONSE];
        assert_eq!(statuses, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
        assert!(labels.iter().all(|&l| serves(l, 0) && serves(l, CHECKPOINTER)));
        assert!(!serves(10, 0));
        assert_eq!(status_name(PCR_CHANGED), "the PCRs are not those of the sealing (a changed boot image or description)");
    }

    #[test]
    fn the_vaults_counter_is_the_vaults() {
        assert_eq!(counter_index(CLIENT, 0), Ok(COUNTER_INDEX));
        assert_eq!(counter_index(VAULT, 0), Ok(COUNTER_INDEX));
        assert_eq!(counter_index(VAULT, VAULT_COUNTER), Ok(VAULT_COUNTER_INDEX));
        assert_eq!(counter_index(CLIENT, VAULT_COUNTER), Err(DENIED));
        assert_eq!(counter_index(0, VAULT_COUNTER), Err(DENIED), "not the root task's either");
        assert_eq!(counter_index(VAULT, 3), Err(BAD_REQUEST));
    }

    #[test]
    fn the_checkpointers_counter_is_the_checkpointers() {
        assert_eq!(counter_index(CHECKPOINTER, CHECKPOINT_COUNTER), Ok(CHECKPOINT_COUNTER_INDEX));
        assert_eq!(counter_index(CHECKPOINTER, 0), Ok(COUNTER_INDEX));
        assert_eq!(counter_index(CHECKPOINTER, VAULT_COUNTER), Err(DENIED));
        assert_eq!(counter_index(VAULT, CHECKPOINT_COUNTER), Err(DENIED));
        assert_eq!(counter_index(CLIENT, CHECKPOINT_COUNTER), Err(DENIED));
        assert_eq!(counter_index(0, CHECKPOINT_COUNTER), Err(DENIED), "not the root task's either");
    }

    #[test]
    fn extend_is_the_root_tasks_on_its_pcrs() {
        let mut log = Log::new();
        assert_eq!(log.check(0, 8, 32), Ok(()));
        assert_eq!(log.check(0, 9, 40), Ok(()));
        assert_eq!(log.check(3, 8, 32), Err(DENIED));
        assert_eq!(log.check(0, 0, 32), Err(BAD_REQUEST), "a firmware PCR");
        assert_eq!(log.check(0, 10, 32), Err(BAD_REQUEST));
        assert_eq!(log.check(0, 8, 31), Err(BAD_REQUEST), "no whole digest");
        for i in 0..LOG_ENTRIES {
            assert!(log.push(Entry::new(8, [i as u8; 32], "p")));
        }
        assert_eq!(log.check(0, 8, 32), Err(LOG_FULL));
        assert!(!log.push(Entry::new(8, [0; 32], "p")));
        assert_eq!(log.len(), LOG_ENTRIES);
        assert_eq!(log.get(3).unwrap().digest, [3; 32]);
        assert!(log.get(LOG_ENTRIES).is_none());
    }

    #[test]
    fn names_are_cut_at_a_character() {
        let long = "é".repeat(40);
        let e = Entry::new(8, [0; 32], &long);
        assert_eq!(e.name().len(), NAME_LEN);
        let odd = alloc_free_concat("a", &"é".repeat(30));
        let e = Entry::new(8, [0; 32], &odd);
        assert_eq!(e.name().len(), NAME_LEN - 1);
        assert_eq!(Entry::new(9, [1; 32], "system").name(), "system");
    }

    fn alloc_free_concat(a: &str, b: &str) -> std::string::String {
        std::format!("{a}{b}")
    }

    #[test]
    fn replay_chains_the_digests() {
        // A stand-in hash (not SHA-256): the test is of the chaining.
        let h = |b: &[u8]| {
            let mut d = [0u8; 32];
            for (i, x) in b.iter().enumerate() {
                d[i % 32] = d[i % 32].wrapping_mul(31).wrapping_add(*x);
            }
            d
        };
        assert_eq!(replay([].into_iter(), h), [0; 32]);
        let one = replay([[1; 32]].into_iter(), h);
        let mut b = [0u8; 64];
        b[32..].copy_from_slice(&[1; 32]);
        assert_eq!(one, h(&b));
        assert_ne!(replay([[1; 32], [2; 32]].into_iter(), h), replay([[2; 32], [1; 32]].into_iter(), h));
    }
}
