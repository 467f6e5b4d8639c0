// generated from abi/services/tpm.toml by tools/idlgen.py; do not edit.
//! The `tpm` protocol: A call's label is the request; the reply's word 0 is the status, word 1 a result; byte strings travel in the IPC buffer's string. Every request answers NO_TPM when the machine has no TPM, TPM_ERROR with the TPM's response code in word 1 when the TPM refused, BAD_RESPONSE when the TPM did not answer in time or answered what does not parse.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Extends PCR 8 or 9 with the digest and logs the entry; the root task's capability (payload 0) only. (interface ANY)
pub const EXTEND: u64 = 1;
/// Reads a PCR (0-23). (interface ANY)
pub const PCR: u64 = 2;
/// Entry `index` of the measurement log: the PCR it extended. (interface ANY)
pub const LOG: u64 = 3;
/// Random bytes from the TPM (count 1-64). (interface ANY)
pub const RANDOM: u64 = 4;
/// Seals the secret to this TPM and to PCRs 8 and 9 as they hold now (keep_tpm::SEAL_PCRS). (interface ANY)
pub const SEAL: u64 = 5;
/// The secret of a blob SEAL made, while the PCRs hold what they held at the sealing. (interface ANY)
pub const UNSEAL: u64 = 6;
/// The value of an NV monotonic counter (made at its first use): 0 the shared one (index 0x014b4550), 1 the vault's (0x014b5654; payload VAULT only), 2 the checkpointer's (0x014b434b; payload CHECKPOINTER only). (interface ANY)
pub const COUNTER: u64 = 7;
/// Increments a counter, chosen as for COUNTER; its new value. (interface ANY)
pub const INCREMENT: u64 = 8;
/// The server exits after replying; the root task's capability (payload 0) only. (interface ANY)
pub const QUIT: u64 = 9;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// EXTEND or QUIT from a capability other than the root task's; the vault's or the checkpointer's counter from a capability other than theirs.
pub const DENIED: u64 = 2;
/// The machine has no TPM.
pub const NO_TPM: u64 = 3;
/// The TPM refused the command; word 1 its response code.
pub const TPM_ERROR: u64 = 4;
/// LOG: no entry at that index.
pub const END: u64 = 5;
/// UNSEAL: the PCRs are not those of the sealing (a changed boot image or description).
pub const PCR_CHANGED: u64 = 6;
/// UNSEAL: the string is no sealed blob of this TPM's.
pub const BAD_BLOB: u64 = 7;
/// EXTEND after 128 entries: nothing extended.
pub const LOG_FULL: u64 = 8;
/// The TPM did not answer in time, or its answer does not parse.
pub const BAD_RESPONSE: u64 = 9;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        EXTEND => keep_abi::proto::payload::any(payload),
        PCR => keep_abi::proto::payload::any(payload),
        LOG => keep_abi::proto::payload::any(payload),
        RANDOM => keep_abi::proto::payload::any(payload),
        SEAL => keep_abi::proto::payload::any(payload),
        UNSEAL => keep_abi::proto::payload::any(payload),
        COUNTER => keep_abi::proto::payload::any(payload),
        INCREMENT => keep_abi::proto::payload::any(payload),
        QUIT => keep_abi::proto::payload::any(payload),
        _ => false,
    }
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        DENIED => "DENIED",
        NO_TPM => "NO_TPM",
        TPM_ERROR => "TPM_ERROR",
        END => "END",
        PCR_CHANGED => "PCR_CHANGED",
        BAD_BLOB => "BAD_BLOB",
        LOG_FULL => "LOG_FULL",
        BAD_RESPONSE => "BAD_RESPONSE",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// COUNTER (7): The value of an NV monotonic counter (made at its first use): 0 the shared one (index 0x014b4550), 1 the vault's (0x014b5654; payload VAULT only), 2 the checkpointer's (0x014b434b; payload CHECKPOINTER only). Statuses: DENIED, NO_TPM, TPM_ERROR, BAD_RESPONSE.
    pub fn counter(self, counter: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, COUNTER, [counter, 0, 0, 0])?;
        Ok(w[0])
    }

    /// INCREMENT (8): Increments a counter, chosen as for COUNTER; its new value. Statuses: DENIED, NO_TPM, TPM_ERROR, BAD_RESPONSE.
    pub fn increment(self, counter: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, INCREMENT, [counter, 0, 0, 0])?;
        Ok(w[0])
    }

    /// QUIT (9): The server exits after replying; the root task's capability (payload 0) only. Statuses: DENIED.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }
}
