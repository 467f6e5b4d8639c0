//! The TPM's sealing (docs/trusted-core.md, "Sealing"): `vault.seal` is
//! one SEAL of a 32-byte secret through the driver (a trial session with
//! PolicyPCR, PolicyGetDigest, Create; the storage key made once before),
//! `vault.unseal` one UNSEAL of its blob (Load, a policy session with
//! PolicyPCR, Unseal, two flushes).  Each operation is timed on its own.
//! The figures are the guest's instructions (the root task's, the driver's
//! and the kernel's); the TPM itself is swtpm on the host, outside the
//! count, and the driver's polling between its 1 ms sleeps depends on how
//! fast the host answers, so these figures vary more than the others.

use keep_tpm::Client;

use super::{BenchResult, Runs, Suite, RUNS, tsc};
use crate::Root;

pub fn run(root: &mut Root, s: &mut Suite) -> BenchResult {
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
