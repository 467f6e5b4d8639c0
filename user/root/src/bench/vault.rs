//! The TPM's sealing (docs/trusted-core.md, "Sealing"): `vault.seal` is
//! one SEAL of a 32-byte secret through the driver (a trial session with
//! PolicyPCR, PolicyGetDigest, Create; the storage key made once before),
//! `vault.unseal` one UNSEAL of its blob (Load, a policy session with
//! PolicyPCR, Unseal, two flushes).  Each operation is timed on its own.
//! The figures are the guest's instructions (the root task's, the driver's
//! and the kernel's); the TPM itself is swtpm on the host, outside the
//! count, and the driver's polling between its 1 ms sleeps depends on how
//! fast the host answers, so these figures vary more than the others.
//!
//! `vault.store.put` and `vault.store.get` are the vault's store
//! (docs/trusted-core.md, "Secure storage") in the root task over a disk
//! and a counter in memory: one PUT of a 32-byte value into a store of 16
//! keys (the records, the new copy encrypted with XChaCha20-Poly1305 and
//! written to memory, the counter incremented) and one GET.  The vault
//! server adds the IPC round trip, the block server's write and flush and
//! the TPM's increment to a PUT, the IPC round trip to a GET.

use keep_tpm::Client;

use super::{BenchResult, Runs, Suite, RUNS, tsc};
use crate::Root;

/// The store's disk and TPM in memory (the benchmark is the store's own work).
struct Mem(alloc::vec::Vec<u8>);
struct Counter(u64, u8);

impl keep_vault::store::Disk for Mem {
    fn blocks(&self) -> u64 {
        (self.0.len() / keep_vault::store::BLOCK) as u64
    }
    fn read(&mut self, b: u64, buf: &mut keep_vault::store::Page) -> Result<(), keep_vault::store::IoError> {
        buf.copy_from_slice(&self.0[b as usize * 4096..][..4096]);
        Ok(())
    }
    fn write(&mut self, b: u64, buf: &keep_vault::store::Page) -> Result<(), keep_vault::store::IoError> {
        self.0[b as usize * 4096..][..4096].copy_from_slice(buf);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), keep_vault::store::IoError> {
        Ok(())
    }
}

impl keep_vault::store::Anchor for Counter {
    fn random(&mut self, out: &mut [u8]) -> Result<(), keep_vault::store::Refusal> {
        for b in out {
            self.1 = self.1.wrapping_mul(167).wrapping_add(13);
            *b = self.1;
        }
        Ok(())
    }
    fn seal(&mut self, secret: &[u8]) -> Result<alloc::vec::Vec<u8>, keep_vault::store::Refusal> {
        Ok(secret.to_vec())
    }
    fn unseal(&mut self, blob: &[u8]) -> Result<alloc::vec::Vec<u8>, keep_vault::store::Refusal> {
        Ok(blob.to_vec())
    }
    fn counter(&mut self) -> Result<u64, keep_vault::store::Refusal> {
        Ok(self.0)
    }
    fn increment(&mut self) -> Result<u64, keep_vault::store::Refusal> {
        self.0 += 1;
        Ok(self.0)
    }
}

fn store(s: &mut Suite) -> BenchResult {
    use keep_vault::{GET, OK, PUT};
    let disk = Mem(alloc::vec![0; keep_vault::store::AREA_BLOCKS as usize * keep_vault::store::BLOCK]);
    let mut v = keep_vault::store::Vault::open(disk, Counter(1, 7));
    let mut req = [0u8; 8 + 32];
    req[8..].fill(0x5a);
    for i in 0..16u8 {
        req[..8].copy_from_slice(b"key-00\0\0");
        req[4] = b'a' + i;
        if v.request(1, PUT, 8, &req).status != OK {
            return Err(alloc::format!("PUT: {}", keep_vault::status_text(v.state.status())));
        }
    }
    let mut runs = [0u64; RUNS];
    if s.wants("vault.store.put") {
        for r in runs.iter_mut() {
            let t0 = tsc();
            let st = v.request(1, PUT, 8, &req).status;
            *r = (tsc() - t0).saturating_sub(s.pair);
            if st != OK {
                return Err(alloc::format!("PUT: status {st}"));
            }
        }
        s.report("vault.store.put", "instructions", Runs(runs));
    }
    if s.wants("vault.store.get") {
        for r in runs.iter_mut() {
            let t0 = tsc();
            let rep = v.request(1, GET, 0, &req[..8]);
            *r = (tsc() - t0).saturating_sub(s.pair);
            if rep.status != OK || rep.text != req[8..] {
                return Err("GET gave other bytes".into());
            }
        }
        s.report("vault.store.get", "instructions", Runs(runs));
    }
    Ok(())
}

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
    if s.wants_any("vault.store.") {
        store(s)?;
    }
    if !s.wants("vault.seal") && !s.wants("vault.unseal") {
        return Ok(());
    }
    if root.tpm.is_none() {
        let img = root.image.as_ref().ok_or("no boot image")?;
        root.tpm = Some(crate::measure::start(&mut root.slots, img)?);
    }
    let sender = root.tpm.as_ref().unwrap().sender;
    let mut c = Client(sender, keep_rt::ipc_buffer());
    let secret = [0x5au8; 32];
    let mut blob = [0u8; 512];
    // The warm-up: the storage key, and a blob for unseal.
    let n = c.seal(&secret, &mut blob).map_err(|f| alloc::format!("SEAL: {f}"))?;
    let mut runs = [0u64; RUNS];
    if s.wants("vault.seal") {
        let mut other = [0u8; 512];
        for r in runs.iter_mut() {
            let t0 = tsc();
            c.seal(&secret, &mut other).map_err(|f| alloc::format!("SEAL: {f}"))?;
            *r = (tsc() - t0).saturating_sub(s.pair);
        }
        s.report("vault.seal", "instructions", Runs(runs));
    }
    if s.wants("vault.unseal") {
        let mut out = [0u8; 64];
        for r in runs.iter_mut() {
            let t0 = tsc();
            let k = c.unseal(&blob[..n], &mut out).map_err(|f| alloc::format!("UNSEAL: {f}"))?;
            *r = (tsc() - t0).saturating_sub(s.pair);
            if out[..k] != secret {
                return Err("UNSEAL gave other bytes".into());
            }
        }
        s.report("vault.unseal", "instructions", Runs(runs));
    }
    Ok(())
}
