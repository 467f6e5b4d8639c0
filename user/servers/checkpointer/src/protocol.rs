// generated from abi/services/checkpointer.toml by tools/idlgen.py; do not edit.
//! The `checkpointer` protocol: A call's label is the request; the reply's word 0 is the status, the results follow in words 1-3; a failed CHECKPOINT's reason, and STATUS's report, travel in the reply's string.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Takes a checkpoint now and commits it before the reply: its sequence number, the data pages and the disk blocks it wrote. (interface ADMIN)
pub const CHECKPOINT: u64 = 1;
/// The last committed checkpoint: its sequence number (0: none), its time and its pages. (interface ADMIN)
pub const STATUS: u64 = 2;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// The area cannot hold the checkpoint: nothing was committed, the previous checkpoint is kept.
pub const FULL: u64 = 2;
/// The block server failed a request, a page changed between its hash and its write, or the TPM's checkpoint counter could not be incremented: nothing was committed, the previous checkpoint is kept.
pub const IO_ERROR: u64 = 3;
/// The checkpoint needs more map and meta blocks than a root can name: nothing was committed.
pub const TOO_LARGE: u64 = 4;
/// The kernel refused the capture (BEGIN, READ or SET_KEY; the string says which and why): nothing was written.
pub const KERNEL_REFUSED: u64 = 5;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        CHECKPOINT => keep_abi::proto::payload::admin(payload),
        STATUS => keep_abi::proto::payload::admin(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, CHECKPOINT | STATUS)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        FULL => "FULL",
        IO_ERROR => "IO_ERROR",
        TOO_LARGE => "TOO_LARGE",
        KERNEL_REFUSED => "KERNEL_REFUSED",
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
/// definition (abi/services/checkpointer.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// CHECKPOINT (1): Takes a checkpoint now and commits it before the reply: its sequence number, the data pages and the disk blocks it wrote. Results: sequence, pages_written, blocks_written.
    fn checkpoint(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// STATUS (2): The last committed checkpoint: its sequence number (0: none), its time and its pages. Results: sequence, time, pages.
    fn status(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            CHECKPOINT | STATUS => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        CHECKPOINT => server.checkpoint(m),
        STATUS => server.status(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
