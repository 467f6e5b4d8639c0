//! Measured boot (docs/trusted-core.md, "The trust anchor"): before any
//! other program runs, the root task hashes (SHA-256) the boot image, each
//! program in it and the system description into a measurement log, starts
//! the TPM's driver (the first program it starts, itself measured with the
//! others) and has it extend each entry into its PCR:
//!
//! - PCR 8: the boot image's header and file table ("boot-image"), then
//!   each file of it (programs, descriptions, the workhorse's root file
//!   system), in the image's order;
//! - PCR 9: the system description the root task builds the system from.
//!
//! Only then does the system start.  Without a TPM the log is still made
//! and the system boots; nothing is extended.

use alloc::vec::Vec;

use keep_abi::{DEVMEM, SELF_ASPACE, Sender, rights, slot};
use keep_loader::{BootImage, Child, Grant, Loader, Spec};
use keep_rt::println;
use keep_tpm::{Client, Entry, Failure, NO_TPM, PCR_DESCRIPTION, PCR_PROGRAMS};
use sha2::{Digest, Sha256};

/// The TPM's CRB, the one page of device memory the driver gets.
const CRB: u64 = 0xfed4_0000;

pub fn sha256(b: &[u8]) -> [u8; 32] {
    Sha256::digest(b).into()
}

/// The boot image's header and file table (docs/boot.md): 16 bytes and
/// 64 per file.
fn table<'a>(img: &BootImage<'a>) -> &'a [u8] {
    let b = img.bytes();
    &b[..(16 + 64 * img.len()).min(b.len())]
}

/// The log of a boot from `img` with the description `file`: the image's
/// table, then every file of it, each hashed once.
pub fn log(img: &BootImage<'_>, file: &str) -> Vec<Entry> {
    let mut log = alloc::vec![Entry::new(PCR_PROGRAMS, sha256(table(img)), "boot-image")];
    for e in img.entries() {
        log.push(Entry::new(PCR_PROGRAMS, sha256(e.data), e.name));
    }
    if let Some(d) = img.find(file) {
        log.push(Entry::new(PCR_DESCRIPTION, sha256(d.data), d.name));
    }
    log
}

/// The bytes `log` hashes.
fn log_bytes(img: &BootImage<'_>, file: &str) -> usize {
    table(img).len() + img.entries().map(|e| e.data.len()).sum::<usize>() + img.find(file).map_or(0, |d| d.data.len())
}

/// The TPM's driver as the root task runs it.
pub struct Tpm {
    pub child: Child,
    pub sender: Sender,
    /// The shell's current sealed blob (`tpm seal`, `tpm blob`).
    pub blob: Vec<u8>,
}

/// Starts the driver with the CRB's page, the console and the timer.
pub fn start(slots: &mut keep_loader::SlotPool, img: &BootImage<'_>) -> Result<Tpm, alloc::string::String> {
    let elf = img.find("tpm").ok_or("no program 'tpm' in the boot image")?.data;
    let page = slots.alloc().ok_or("no free slot")?;
    DEVMEM.restrict(CRB, 1, page).map_err(|e| alloc::format!("RESTRICT of the CRB's page: {e}"))?;
    let grants = [
        Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
        Grant { src: slot::ACCOUNT, dest: slot::ACCOUNT, rights: 0 },
        Grant { src: slot::TIMER, dest: slot::TIMER, rights: rights::READ },
        Grant { src: page, dest: slot::DEVMEM, rights: 0 },
    ];
    let spec = Spec { name: "tpm", elf, arg0: 0, arg1: 0, grants: &grants, blob: None };
    let loaded = Loader::new(slots).load(&spec);
    let _ = SELF_ASPACE.delete_cap(page);
    slots.free(page);
    let child = loaded.map_err(|e| alloc::format!("load: {e:?}"))?;
    let cap = slots.alloc().ok_or("no free slot")?;
    child.process.mint(cap, 0, rights::WRITE | rights::CALL).map_err(|e| alloc::format!("MINT: {e}"))?;
    child.process.start().map_err(|e| alloc::format!("START: {e}"))?;
    Ok(Tpm { child, sender: Sender(cap), blob: Vec::new() })
}

/// The root task's slot of the capability the description's `tpm` gives
/// (payload CLIENT: not the root task's, so EXTEND is refused); 0: none.
static CLIENT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub fn client_cap() -> Option<u64> {
    match CLIENT.load(core::sync::atomic::Ordering::Relaxed) {
        0 => None,
        c => Some(c),
    }
}

/// The vault's capability (payload VAULT: a client's, and the vault's NV
/// counter besides); 0: none.
static VAULT: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub fn vault_cap() -> Option<u64> {
    match VAULT.load(core::sync::atomic::Ordering::Relaxed) {
        0 => None,
        c => Some(c),
    }
}

/// The checkpointer's capability (payload CHECKPOINTER: a client's, and the
/// checkpointer's NV counter besides); 0: none.
static CHECKPOINTER: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

pub fn checkpointer_cap() -> Option<u64> {
    match CHECKPOINTER.load(core::sync::atomic::Ordering::Relaxed) {
        0 => None,
        c => Some(c),
    }
}

/// Measures the boot and starts the driver; None without one.
pub fn boot(root: &mut crate::Root, file: &str) -> Option<Tpm> {
    let img = root.image.as_ref()?;
    let t0 = keep_abi::TIMER.now_ms().unwrap_or(0);
    let log = log(img, file);
    let ms = keep_abi::TIMER.now_ms().unwrap_or(0).saturating_sub(t0);
    let tpm = match start(&mut root.slots, img) {
        Ok(t) => t,
        Err(e) => {
            println!("measured boot: the TPM's driver: {e}; {} measurements not extended", log.len());
            return None;
        }
    };
    if let Some(cap) = root.slots.alloc() {
        if tpm.child.process.mint(cap, keep_tpm::CLIENT, rights::WRITE | rights::CALL).is_ok() {
            CLIENT.store(cap, core::sync::atomic::Ordering::Relaxed);
        }
    }
    if let Some(cap) = root.slots.alloc() {
        if tpm.child.process.mint(cap, keep_tpm::VAULT, rights::WRITE | rights::CALL).is_ok() {
            VAULT.store(cap, core::sync::atomic::Ordering::Relaxed);
        }
    }
    if let Some(cap) = root.slots.alloc() {
        if tpm.child.process.mint(cap, keep_tpm::CHECKPOINTER, rights::WRITE | rights::CALL).is_ok() {
            CHECKPOINTER.store(cap, core::sync::atomic::Ordering::Relaxed);
        }
    }
    let mut c = Client(tpm.sender, keep_rt::ipc_buffer());
    for e in &log {
        match c.extend(e.pcr, &e.digest, e.name()) {
            Ok(()) => {}
            Err(Failure::Status(NO_TPM, _)) => {
                println!("measured boot: no TPM; {} measurements not extended", log.len());
                return Some(tpm);
            }
            Err(f) => {
                println!("measured boot: EXTEND of {}: {f}", e.name());
                return Some(tpm);
            }
        }
    }
    println!(
        "measured boot: {} measurements in PCRs {PCR_PROGRAMS} and {PCR_DESCRIPTION} ({} KiB hashed in {ms} ms)",
        log.len(),
        log_bytes(img, file) / 1024
    );
    Some(tpm)
}

fn hex(b: &[u8]) -> alloc::string::String {
    b.iter().map(|x| alloc::format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len()).step_by(2).map(|i| s.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok())).collect()
}

/// The shell's `tpm [seal TEXT | blob [HEX] | unseal | extend TEXT |
/// increment | random]`: without a word, the PCRs of the measured boot,
/// the log and the NV counter.  A sealed blob is the shell's current one
/// and is printed as `blob HEX` lines, which `tpm blob HEX` (after
/// `tpm blob` empties it) puts back, in this boot or a later one.
pub fn command(root: &mut crate::Root, line: &str) {
    let Some(tpm) = root.tpm.as_mut() else {
        println!("tpm: the TPM's driver is not running (no 'tpm' in the boot image, or it did not start)");
        return;
    };
    let mut c = Client(tpm.sender, keep_rt::ipc_buffer());
    let line = line.trim();
    let (word, rest) = line.split_once(' ').map_or((line, ""), |(w, r)| (w, r.trim()));
    match (word, rest) {
        ("", _) => {
            for p in [PCR_PROGRAMS, PCR_DESCRIPTION] {
                match c.pcr(p) {
                    Ok(d) => println!("PCR {p}  {}", hex(&d)),
                    Err(f) => {
                        println!("tpm: PCR {p}: {f}");
                        return;
                    }
                }
            }
            println!("measurement log (PCR, SHA-256, what):");
            for i in 0.. {
                match c.log(i) {
                    Ok(Some(e)) => println!("  {}  {}  {}", e.pcr, hex(&e.digest), e.name()),
                    Ok(None) => break,
                    Err(f) => {
                        println!("tpm: log entry {i}: {f}");
                        break;
                    }
                }
            }
            match c.counter() {
                Ok(v) => println!("NV counter {:#x}: {v}", keep_tpm::COUNTER_INDEX),
                Err(f) => println!("tpm: NV counter: {f}"),
            }
        }
        ("seal", s) if !s.is_empty() => {
            let mut blob = [0u8; 512];
            match c.seal(s.as_bytes(), &mut blob) {
                Ok(n) => {
                    tpm.blob = blob[..n].to_vec();
                    println!("tpm: sealed {} bytes to PCRs {PCR_PROGRAMS} and {PCR_DESCRIPTION}: a blob of {n} bytes", s.len());
                    for chunk in blob[..n].chunks(64) {
                        println!("blob {}", hex(chunk));
                    }
                }
                Err(f) => println!("tpm: seal refused: {f}"),
            }
        }
        ("blob", "") => {
            tpm.blob.clear();
            println!("tpm: the blob is empty");
        }
        ("blob", h) => match unhex(h) {
            Some(b) if tpm.blob.len() + b.len() <= 512 => {
                tpm.blob.extend_from_slice(&b);
                println!("tpm: the blob has {} bytes", tpm.blob.len());
            }
            Some(_) => println!("tpm: a blob has 512 bytes at most"),
            None => println!("tpm: blob: want hexadecimal digits, two per byte"),
        },
        ("unseal", "") => {
            let mut out = [0u8; 256];
            let blob = core::mem::take(&mut tpm.blob);
            match c.unseal(&blob, &mut out) {
                Ok(n) => println!("tpm: unsealed: {}", core::str::from_utf8(&out[..n]).unwrap_or("(not UTF-8)")),
                Err(f) => println!("tpm: unseal refused: {f}"),
            }
            tpm.blob = blob;
        }
        ("extend", s) if !s.is_empty() => {
            let name = alloc::format!("shell: {s}");
            match c.extend(PCR_DESCRIPTION, &sha256(s.as_bytes()), &name) {
                Ok(()) => println!("tpm: PCR {PCR_DESCRIPTION} extended with SHA-256 of '{s}'"),
                Err(f) => println!("tpm: extend: {f}"),
            }
        }
        ("increment", "") => match c.increment() {
            Ok(v) => println!("tpm: NV counter incremented: {v}"),
            Err(f) => println!("tpm: increment: {f}"),
        },
        ("random", "") => {
            let mut r = [0u8; 16];
            match c.random(&mut r) {
                Ok(n) => println!("tpm: random {}", hex(&r[..n])),
                Err(f) => println!("tpm: random: {f}"),
            }
        }
        _ => println!("tpm: usage: tpm [seal TEXT | blob [HEX] | unseal | extend TEXT | increment | random]"),
    }
}
