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

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, EXTEND | PCR | LOG | RANDOM | SEAL | UNSEAL | COUNTER | INCREMENT | QUIT)
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

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/tpm.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// EXTEND (1): Extends PCR 8 or 9 with the digest and logs the entry; the root task's capability (payload 0) only. (string: a 32-byte SHA-256 digest, then the entry's name (at most 48 bytes)) Results: none.
    fn extend(&mut self, m: &keep_abi::Msg, pcr: u64) -> keep_abi::proto::Answer;

    /// PCR (2): Reads a PCR (0-23). Results: none.
    fn pcr(&mut self, m: &keep_abi::Msg, pcr: u64) -> keep_abi::proto::Answer;

    /// LOG (3): Entry `index` of the measurement log: the PCR it extended. Results: pcr.
    fn log(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;

    /// RANDOM (4): Random bytes from the TPM (count 1-64). Results: none.
    fn random(&mut self, m: &keep_abi::Msg, count: u64) -> keep_abi::proto::Answer;

    /// SEAL (5): Seals the secret to this TPM and to PCRs 8 and 9 as they hold now (keep_tpm::SEAL_PCRS). (string: the secret (1-128 bytes)) Results: none.
    fn seal(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// UNSEAL (6): The secret of a blob SEAL made, while the PCRs hold what they held at the sealing. (string: a sealed blob) Results: none.
    fn unseal(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// COUNTER (7): The value of an NV monotonic counter (made at its first use): 0 the shared one (index 0x014b4550), 1 the vault's (0x014b5654; payload VAULT only), 2 the checkpointer's (0x014b434b; payload CHECKPOINTER only). Results: value.
    fn counter(&mut self, m: &keep_abi::Msg, counter: u64) -> keep_abi::proto::Answer;

    /// INCREMENT (8): Increments a counter, chosen as for COUNTER; its new value. Results: value.
    fn increment(&mut self, m: &keep_abi::Msg, counter: u64) -> keep_abi::proto::Answer;

    /// QUIT (9): The server exits after replying; the root task's capability (payload 0) only. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            EXTEND | PCR | LOG | RANDOM | SEAL | UNSEAL | COUNTER | INCREMENT | QUIT => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        EXTEND => server.extend(m, m.words[0]),
        PCR => server.pcr(m, m.words[0]),
        LOG => server.log(m, m.words[0]),
        RANDOM => server.random(m, m.words[0]),
        SEAL => server.seal(m),
        UNSEAL => server.unseal(m),
        COUNTER => server.counter(m, m.words[0]),
        INCREMENT => server.increment(m, m.words[0]),
        QUIT => server.quit(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
