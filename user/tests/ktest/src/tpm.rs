//! The TPM's driver (user/drivers/tpm, docs/devices.md, "The TPM") as the
//! root task starts it: `tpm` from the boot image with only the CRB's page
//! of device memory; its answers and its refusals, and the driver without
//! the page (no TPM).  The machine of `qemu.py test` has a fresh swtpm.

use alloc::format;

use keep_abi::{DEVMEM, Sender, Tag, rights, slot};
use keep_loader::Grant;
use keep_tpm::*;

use crate::drivers::{Running, start_with, stop};
use crate::{Ctx, Cx, TestResult};

/// One call with `label`, word 0 `w0` and the string `s` (if any): (status,
/// word 1, string length).
fn call(cap: u64, label: u64, w0: u64, s: Option<&[u8]>) -> Result<(u64, u64, usize), alloc::string::String> {
    let buf = keep_rt::ipc_buffer();
    let mut tag = Tag::new(label);
    if let Some(s) = s {
        buf.set_string(s);
        tag = tag.with_string();
    }
    let m = Sender(cap).call(tag, [w0, 0, 0, 0]);
    ensure!(m.err == 0, "label {label}: the call failed ({})", keep_abi::Error(m.err));
    let n = if m.tag.has_string() { buf.received_len() } else { 0 };
    Ok((m.words[0], m.words[1], n))
}

fn start(cx: &mut Cx, crb: bool) -> Result<Running, alloc::string::String> {
    let page = cx.slot()?;
    let mut grants = alloc::vec![
        Grant { src: slot::CONSOLE, dest: slot::CONSOLE, rights: 0 },
        Grant { src: slot::ACCOUNT, dest: slot::ACCOUNT, rights: 0 },
        Grant { src: slot::TIMER, dest: slot::TIMER, rights: rights::READ },
    ];
    if crb {
        DEVMEM.restrict(0xfed4_0000, 1, page).ctx("RESTRICT")?;
        grants.push(Grant { src: page, dest: slot::DEVMEM, rights: 0 });
    }
    let r = start_with(cx, "tpm", &grants, 0);
    cx.drop_slot(page);
    r
}

fn quit(s: Sender) -> TestResult {
    let (st, _, _) = call(s.0, QUIT, 0, None)?;
    ensure!(st == OK, "QUIT answered {st}");
    Ok(())
}

pub fn tpm_server(cx: &mut Cx) -> TestResult {
    let r = start(cx, true)?;
    let c = r.cap;
    let (st, _, n) = call(c, RANDOM, 16, None)?;
    ensure!(st == OK && n == 16, "RANDOM 16 answered ({st}, {n} bytes): is there a TPM (qemu.py without --no-tpm)?");
    let (st, _, n) = call(c, PCR, 8, None)?;
    ensure!(st == OK && n == 32, "PCR 8 answered ({st}, {n} bytes)");
    let before: [u8; 32] = keep_rt::ipc_buffer().string[..32].try_into().unwrap();
    let mut e = [7u8; 32 + 5];
    e[32..].copy_from_slice(b"ktest");
    ensure!(call(c, EXTEND, 8, Some(&e))?.0 == OK, "EXTEND of PCR 8 refused");
    let (st, _, _) = call(c, PCR, 8, None)?;
    let after: [u8; 32] = keep_rt::ipc_buffer().string[..32].try_into().unwrap();
    ensure!(st == OK && after != before, "PCR 8 did not change with EXTEND");
    let (st, pcr, n) = call(c, LOG, 0, None)?;
    ensure!(st == OK && pcr == 8 && n == 37 && &keep_rt::ipc_buffer().string[32..37] == b"ktest",
            "LOG 0 answered ({st}, PCR {pcr}, {n} bytes)");
    ensure!(call(c, LOG, 1, None)?.0 == END, "LOG past the last entry not END");
    // Refusals, each changing nothing.
    let bad: [(u64, u64, Option<&[u8]>, u64, &str); 12] = [
        (EXTEND, 10, Some(&e), BAD_REQUEST, "EXTEND of PCR 10"),
        (EXTEND, 0, Some(&e), BAD_REQUEST, "EXTEND of PCR 0"),
        (EXTEND, 8, Some(&e[..31]), BAD_REQUEST, "EXTEND without a whole digest"),
        (PCR, 24, None, BAD_REQUEST, "PCR 24"),
        (RANDOM, 0, None, BAD_REQUEST, "RANDOM 0"),
        (RANDOM, MAX_RANDOM + 1, None, BAD_REQUEST, "RANDOM 65"),
        (SEAL, 0, Some(&[]), BAD_REQUEST, "SEAL of nothing"),
        (SEAL, 0, Some(&[1; 129]), BAD_REQUEST, "SEAL of 129 bytes"),
        (UNSEAL, 0, Some(&[0, 3, 1, 2, 3, 0, 0]), BAD_BLOB, "UNSEAL of a blob of no TPM"),
        (UNSEAL, 0, Some(&[1, 2, 3]), BAD_BLOB, "UNSEAL of what is no blob"),
        (0, 0, None, BAD_REQUEST, "label 0"),
        (99, 0, None, BAD_REQUEST, "label 99"),
    ];
    for (label, w0, s, want, what) in bad {
        let (st, _, _) = call(c, label, w0, s)?;
        ensure!(st == want, "{what}: answered {st} ({}), want {want}", status_name(st));
    }
    ensure!(call(c, LOG, 1, None)?.0 == END, "a refused EXTEND was logged");
    // A client's capability: no EXTEND, no QUIT; the rest as the root's.
    let client = cx.slot()?;
    r.child.process.mint(client, CLIENT, rights::WRITE | rights::CALL).ctx("MINT")?;
    ensure!(call(client, EXTEND, 8, Some(&e))?.0 == DENIED, "a client's EXTEND not DENIED");
    ensure!(call(client, QUIT, 0, None)?.0 == DENIED, "a client's QUIT not DENIED");
    let (st, _, n) = call(client, SEAL, 0, Some(b"k"))?;
    ensure!(st == OK && n > 0, "a client's SEAL answered ({st}, {n} bytes)");
    let mut blob = alloc::vec![0u8; n];
    keep_rt::ipc_buffer().read_string(&mut blob);
    let (st, _, n) = call(client, UNSEAL, 0, Some(&blob))?;
    ensure!(st == OK && n == 1 && keep_rt::ipc_buffer().string[0] == b'k', "a client's UNSEAL answered ({st}, {n} bytes)");
    // The PCRs change: the blob is refused, naming the cause.
    ensure!(call(c, EXTEND, 9, Some(&e))?.0 == OK, "EXTEND of PCR 9 refused");
    let (st, code, _) = call(client, UNSEAL, 0, Some(&blob))?;
    ensure!(st == PCR_CHANGED, "UNSEAL after a PCR change answered {st} (code {code:#x})");
    let (st, v0, _) = call(client, COUNTER, 0, None)?;
    let (st1, v1, _) = call(client, INCREMENT, 0, None)?;
    ensure!(st == OK && st1 == OK && v1 == v0 + 1, "COUNTER {v0} ({st}) then INCREMENT {v1} ({st1})");
    cx.drop_slot(client);
    stop(cx, r, quit)?;

    // Without the CRB's page: NO_TPM for everything, and it serves on.
    let r = start(cx, false)?;
    for (label, w0) in [(RANDOM, 16), (PCR, 8), (EXTEND, 8), (SEAL, 0), (COUNTER, 0), (LOG, 0)] {
        let got = call(r.cap, label, w0, Some(&e))?.0;
        ensure!(got == NO_TPM, "without the CRB label {label} answered {got}, want NO_TPM");
    }
    stop(cx, r, quit).map_err(|e| format!("without the CRB: {e}"))?;
    Ok(())
}
