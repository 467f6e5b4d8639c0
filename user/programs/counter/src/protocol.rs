// generated from abi/services/counter.toml by tools/idlgen.py; do not edit.
//! The `counter` protocol: A call's label is the request, word 0 its argument; the reply's word 0 is the status, word 1 the result. The server keeps one counter per payload.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// Add n to the caller's counter; the new value. (interface ANY)
pub const ADD: u64 = 1;
/// Read the caller's counter. (interface ANY)
pub const GET: u64 = 2;
/// The server exits after replying. (interface ANY)
pub const QUIT: u64 = 3;
/// After replying, the server waits after_ms ms (or for the next message) and then faults: a server that dies while nobody is looking, for the supervisor's test. (interface ANY)
pub const CRASH: u64 = 4;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// The counter would pass 2^63; nothing changed.
pub const OVERFLOW: u64 = 2;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        ADD => keep_abi::proto::payload::any(payload),
        GET => keep_abi::proto::payload::any(payload),
        QUIT => keep_abi::proto::payload::any(payload),
        CRASH => keep_abi::proto::payload::any(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, ADD | GET | QUIT | CRASH)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        OVERFLOW => "OVERFLOW",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// ADD (1): Add n to the caller's counter; the new value. Statuses: OVERFLOW.
    pub fn add(self, n: u64) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, ADD, [n, 0, 0, 0])?;
        Ok(w[0])
    }

    /// GET (2): Read the caller's counter. Statuses: none of its own.
    pub fn get(self) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, GET, [0, 0, 0, 0])?;
        Ok(w[0])
    }

    /// QUIT (3): The server exits after replying. Statuses: none of its own.
    pub fn quit(self) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, QUIT, [0, 0, 0, 0])?;
        Ok(())
    }

    /// CRASH (4): After replying, the server waits after_ms ms (or for the next message) and then faults: a server that dies while nobody is looking, for the supervisor's test. Statuses: none of its own.
    pub fn crash(self, after_ms: u64) -> Result<(), Refused> {
        let _ = keep_abi::proto::call(self.0, CRASH, [after_ms, 0, 0, 0])?;
        Ok(())
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/counter.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// ADD (1): Add n to the caller's counter; the new value. Results: value.
    fn add(&mut self, m: &keep_abi::Msg, n: u64) -> keep_abi::proto::Answer;

    /// GET (2): Read the caller's counter. Results: value.
    fn get(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// QUIT (3): The server exits after replying. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// CRASH (4): After replying, the server waits after_ms ms (or for the next message) and then faults: a server that dies while nobody is looking, for the supervisor's test. Results: none.
    fn crash(&mut self, m: &keep_abi::Msg, after_ms: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            ADD | GET | QUIT | CRASH => BAD_REQUEST,
            _ => BAD_REQUEST,
        });
    }
    match label {
        ADD => server.add(m, m.words[0]),
        GET => server.get(m),
        QUIT => server.quit(m),
        CRASH => server.crash(m, m.words[0]),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
