// generated from abi/services/rtc.toml by tools/idlgen.py; do not edit.
//! The `rtc` protocol: A call's label is the request; the reply's word 0 is the status, the results follow in words 1-3.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// The time: the Unix time in seconds (UTC). (interface ANY)
pub const NOW: u64 = 1;
/// The server exits after replying; from a client (a described client's payload) DENIED. (interface ADMIN)
pub const QUIT: u64 = 2;

// Statuses: word 0 of every reply.
/// The request was done.
pub const OK: u64 = 0;
/// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
pub const BAD_REQUEST: u64 = 1;
/// The request is the administrator's and came from a client.
pub const DENIED: u64 = 2;
/// The instance holds no ports 0x70-0x71, or the clock reads no valid date.
pub const NO_CLOCK: u64 = 3;

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        NOW => keep_abi::proto::payload::any(payload),
        QUIT => keep_abi::proto::payload::admin(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, NOW | QUIT)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        OK => "OK",
        BAD_REQUEST => "BAD_REQUEST",
        DENIED => "DENIED",
        NO_CLOCK => "NO_CLOCK",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// NOW (1): The time: the Unix time in seconds (UTC). Statuses: NO_CLOCK.
    pub fn now(self) -> Result<u64, Refused> {
        let w = keep_abi::proto::call(self.0, NOW, [0, 0, 0, 0])?;
        Ok(w[0])
    }

    /// QUIT (2): The server exits after replying; from a client (a described client's payload) DENIED. Statuses: DENIED.
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
/// definition (abi/services/rtc.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// NOW (1): The time: the Unix time in seconds (UTC). Results: seconds.
    fn now(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// QUIT (2): The server exits after replying; from a client (a described client's payload) DENIED. Results: none.
    fn quit(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            NOW | QUIT => DENIED,
            _ => BAD_REQUEST,
        });
    }
    match label {
        NOW => server.now(m),
        QUIT => server.quit(m),
        _ => keep_abi::proto::Answer::refuse(BAD_REQUEST),
    }
}
