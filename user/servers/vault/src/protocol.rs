// generated from abi/services/vault.toml by tools/idlgen.py; do not edit.
//! The `vault` protocol: A call's label is the request; names and values travel in the IPC string; the reply's word 0 is the status. Every request acts on the caller's own namespace, the one its capability names. A refused request changes nothing.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Sets the caller's key to the value (a new key, or a new value): written to the disk and the TPM's counter incremented before the reply; the store's new counter. (interface described)
pub const PUT: u64 = 1;
/// The value of the caller's key. (interface described)
pub const GET: u64 = 2;
/// Removes the caller's key, on the disk before the reply; the store's new counter. (interface described)
pub const DELETE: u64 = 3;
/// How many keys the caller has, and the name of one of them. (interface described)
pub const LIST: u64 = 4;
/// The store's state (0 open, else the status every client request answers), its keys, and the store's counter (the shell's `vault`). (interface ADMIN)
pub const STATS: u64 = 5;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// No key of that name in the caller's namespace (another client's key of the same name is not the caller's); LIST: no key at that index.
pub const NOT_FOUND: u64 = 2;
/// PUT of a new key past 16 keys in the caller's namespace or 128 in the store; nothing changed.
pub const FULL: u64 = 3;
/// PUT of a value of more than 256 bytes; nothing changed.
pub const TOO_LARGE: u64 = 4;
/// The TPM refused to unseal the store's key: the boot image or the description is not the one it was sealed under (PCRs 8 and 9), or this is another TPM. The store on the disk is kept untouched; every request is refused until a boot that matches.
pub const SEALED_ELSEWHERE: u64 = 5;
/// The newest whole copy of the store on the disk is older than the TPM's NV counter says (an old copy put back, or the store erased): it is not served, and kept untouched.
pub const ROLLBACK: u64 = 6;
/// The block server or the TPM failed a request of the vault's; a PUT or DELETE that answers it changed nothing (or, when word 1 is 1, is on the disk and its counter increment is retried before the next write).
pub const IO_ERROR: u64 = 7;
/// The store's area holds what no boot of this vault wrote: a torn or foreign key block beside a store, no copy that opens, a store ahead of the TPM's counter. Kept untouched; the reason is on the console and in STATS.
pub const DAMAGED: u64 = 8;
/// The machine has no TPM (or the vault no capability to its driver): nothing can be sealed, and nothing is served.
pub const NO_TPM: u64 = 9;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        PUT => crate::described(payload),
        GET => crate::described(payload),
        DELETE => crate::described(payload),
        LIST => crate::described(payload),
        STATS => keep_abi::proto::payload::admin(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, PUT | GET | DELETE | LIST | STATS)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        NOT_FOUND => "NOT_FOUND",
        FULL => "FULL",
        TOO_LARGE => "TOO_LARGE",
        SEALED_ELSEWHERE => "SEALED_ELSEWHERE",
        ROLLBACK => "ROLLBACK",
        IO_ERROR => "IO_ERROR",
        DAMAGED => "DAMAGED",
        NO_TPM => "NO_TPM",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/vault.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// PUT (1): Sets the caller's key to the value (a new key, or a new value): written to the disk and the TPM's counter incremented before the reply; the store's new counter. (string: the name (name_len bytes), then the value (0-256 bytes)) Results: counter.
    fn put(&mut self, m: &keep_abi::Msg, name_len: u64) -> keep_abi::proto::Answer;

    /// GET (2): The value of the caller's key. (string: the name) Results: len.
    fn get(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// DELETE (3): Removes the caller's key, on the disk before the reply; the store's new counter. (string: the name) Results: counter.
    fn delete(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// LIST (4): How many keys the caller has, and the name of one of them. Results: count.
    fn list(&mut self, m: &keep_abi::Msg, index: u64) -> keep_abi::proto::Answer;

    /// STATS (5): The store's state (0 open, else the status every client request answers), its keys, and the store's counter (the shell's `vault`). Results: state, keys, counter.
    fn stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            PUT | GET | DELETE | LIST | STATS => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        PUT => server.put(m, m.words[0]),
        GET => server.get(m),
        DELETE => server.delete(m),
        LIST => server.list(m, m.words[0]),
        STATS => server.stats(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
