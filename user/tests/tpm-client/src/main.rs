//! A client of the TPM's driver from the system description (`tpm` in its
//! line; docs/trusted-core.md): reads PCR 8, seals a secret and unseals it,
//! reads the NV counter, and checks that EXTEND is refused to it.  Exit
//! code 0 when all of that holds, 1 when something did not, 2 without the
//! capability.

#![no_std]
#![no_main]

use keep_abi::{SELF_ASPACE, Sender};
use keep_rt::println;
use keep_tpm::{Client, DENIED, Failure, TPM_SLOT};

keep_rt::entry!(main);

const SECRET: &[u8] = b"a client's secret";

fn main(_: u64, _: u64) -> i32 {
    if SELF_ASPACE.identify_cap(TPM_SLOT).map_or(true, |c| !c.live) {
        println!("tpm-client: no capability to the TPM (no `tpm` in its line of the description)");
        return 2;
    }
    let mut c = Client(Sender(TPM_SLOT), keep_rt::ipc_buffer());
    let mut ok = true;
    match c.pcr(8) {
        Ok(d) => println!("tpm-client: PCR 8 starts {:02x}{:02x}{:02x}{:02x}", d[0], d[1], d[2], d[3]),
        Err(f) => {
            println!("tpm-client: PCR 8: {f}");
            return 1;
        }
    }
    let mut blob = [0u8; 512];
    let mut out = [0u8; 128];
    match c.seal(SECRET, &mut blob).and_then(|n| c.unseal(&blob[..n], &mut out)) {
        Ok(n) if &out[..n] == SECRET => println!("tpm-client: sealed and unsealed {} bytes", n),
        Ok(_) => {
            println!("tpm-client: unseal gave other bytes");
            ok = false;
        }
        Err(f) => {
            println!("tpm-client: seal and unseal: {f}");
            ok = false;
        }
    }
    match c.extend(8, &[0; 32], "tpm-client") {
        Err(Failure::Status(DENIED, _)) => println!("tpm-client: EXTEND refused: denied"),
        r => {
            println!("tpm-client: EXTEND was not refused ({r:?})");
            ok = false;
        }
    }
    match c.counter() {
        Ok(v) => println!("tpm-client: NV counter {v}"),
        Err(f) => {
            println!("tpm-client: NV counter: {f}");
            ok = false;
        }
    }
    // The vault's and the checkpointer's counters are theirs alone.
    for (name, which) in [("vault's", keep_tpm::VAULT_COUNTER), ("checkpointer's", keep_tpm::CHECKPOINT_COUNTER)] {
        match c.counter_of(which, true) {
            Err(Failure::Status(DENIED, _)) => println!("tpm-client: INCREMENT of the {name} counter refused: denied"),
            r => {
                println!("tpm-client: INCREMENT of the {name} counter was not refused ({r:?})");
                ok = false;
            }
        }
    }
    if ok { 0 } else { 1 }
}
