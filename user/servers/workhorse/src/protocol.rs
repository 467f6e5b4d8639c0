// generated from abi/services/workhorse.toml by tools/idlgen.py; do not edit.
//! The `workhorse` protocol: Calls on a sender capability with payload 0, which init gives the shell; the reply's word 0 is the status, the results follow.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Runs the command line with the console as its terminal and answers when it ends: the wait status (Linux encoding). (interface ADMIN)
pub const RUN: u64 = 1;
/// The system calls refused since start. (interface ADMIN)
pub const STATS: u64 = 2;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// RUN: the command line is empty or its quotes are not closed.
pub const BAD_COMMAND: u64 = 2;
/// RUN: the program does not exist or is not an executable the server runs (word 1: the Linux errno).
pub const CANNOT_EXEC: u64 = 3;
/// RUN: a program is already running on the console.
pub const BUSY: u64 = 4;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        RUN => keep_abi::proto::payload::admin(payload),
        STATS => keep_abi::proto::payload::admin(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, RUN | STATS)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        BAD_COMMAND => "BAD_COMMAND",
        CANNOT_EXEC => "CANNOT_EXEC",
        BUSY => "BUSY",
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
/// definition (abi/services/workhorse.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// RUN (1): Runs the command line with the console as its terminal and answers when it ends: the wait status (Linux encoding). (string: a command line (PROGRAM ARGS..., quotes as in sh); if length is not 0, the bytes after its first length bytes are input typed ahead, which the terminal takes first) Results: wait_status.
    fn run(&mut self, m: &keep_abi::Msg, length: u64) -> keep_abi::proto::Answer;

    /// STATS (2): The system calls refused since start. Results: none.
    fn stats(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            RUN | STATS => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        RUN => server.run(m, m.words[0]),
        STATS => server.stats(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
