// generated from abi/services/pfilter.toml by tools/idlgen.py; do not edit.
//! The `pfilter` protocol: A call's label is the request, words in registers, bytes in the IPC string; the reply's word 0 is the status, the results follow.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// A piece of the module at offset. (interface ANY)
pub const LOAD_PART: u64 = 1;
/// Verifies and loads the size bytes sent into a domain of their own: the filter id. (interface ANY)
pub const LOAD: u64 = 2;
/// Runs the filter over the packet: its verdict. (interface ANY)
pub const RUN: u64 = 3;
/// Unloads the filter. (interface ANY)
pub const UNLOAD: u64 = 4;
/// The server ends its handler thread and exits 0 after replying. (interface ANY)
pub const QUIT: u64 = 5;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// LOAD_PART past 256 KiB (MAX_MODULE).
pub const TOO_BIG: u64 = 2;
/// The verifier rejected the module: word 1 the offset of the instruction (or NO_OFFSET), its reason as the string.
pub const REJECTED: u64 = 3;
/// The module exports no filter function.
pub const NO_FILTER_ENTRY: u64 = 4;
/// The module could not be laid out or paid for (a reason as the string).
pub const LOAD_FAILED: u64 = 5;
/// The filter id names no loaded filter.
pub const NO_SUCH_FILTER: u64 = 6;
/// The filter faulted: words 1-3 the vector, the address and the rip offset. It stays loaded.
pub const FAULT: u64 = 7;
/// The filter ran longer than TIMEOUT_MS (50 ms) and was stopped. It stays loaded.
pub const TIMEOUT: u64 = 8;
/// The module imports a function the server does not offer (only pf_mtu).
pub const UNRESOLVED_IMPORT: u64 = 9;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        LOAD_PART => keep_abi::proto::payload::any(payload),
        LOAD => keep_abi::proto::payload::any(payload),
        RUN => keep_abi::proto::payload::any(payload),
        UNLOAD => keep_abi::proto::payload::any(payload),
        QUIT => keep_abi::proto::payload::any(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, LOAD_PART | LOAD | RUN | UNLOAD | QUIT)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        TOO_BIG => "TOO_BIG",
        REJECTED => "REJECTED",
        NO_FILTER_ENTRY => "NO_FILTER_ENTRY",
        LOAD_FAILED => "LOAD_FAILED",
        NO_SUCH_FILTER => "NO_SUCH_FILTER",
        FAULT => "FAULT",
        TIMEOUT => "TIMEOUT",
        UNRESOLVED_IMPORT => "UNRESOLVED_IMPORT",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// UNLOAD (4): Unloads the filter. Statuses: NO_SUCH_FILTER.
    pub fn unload(self, filter: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, UNLOAD, [filter, 0, 0, 0])?;
        Ok(())
    }

    /// QUIT (5): The server ends its handler thread and exits 0 after replying. Statuses: none of its own.
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
/// definition (abi/services/pfilter.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// LOAD_PART (1): A piece of the module at offset. (string: up to 4096 bytes of the module) Results: none.
    fn load_part(&mut self, m: &keep_abi::Msg, offset: u64) -> keep_abi::proto::Answer;

    /// LOAD (2): Verifies and loads the size bytes sent into a domain of their own: the filter id. Results: filter.
    fn load(&mut self, m: &keep_abi::Msg, size: u64) -> keep_abi::proto::Answer;

    /// RUN (3): Runs the filter over the packet: its verdict. (string: the packet (at most 4096 bytes)) Results: verdict.
    fn run(&mut self, m: &keep_abi::Msg, filter: u64) -> keep_abi::proto::Answer;

    /// UNLOAD (4): Unloads the filter. Results: none.
    fn unload(&mut self, m: &keep_abi::Msg, filter: u64) -> keep_abi::proto::Answer;

    /// QUIT (5): The server ends its handler thread and exits 0 after replying. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            LOAD_PART | LOAD | RUN | UNLOAD | QUIT => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        LOAD_PART => server.load_part(m, m.words[0]),
        LOAD => server.load(m, m.words[0]),
        RUN => server.run(m, m.words[0]),
        UNLOAD => server.unload(m, m.words[0]),
        QUIT => server.quit(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
