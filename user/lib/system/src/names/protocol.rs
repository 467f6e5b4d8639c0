// generated from abi/services/names.toml by tools/idlgen.py; do not edit.
//! The `names` protocol: A call's label is the request; the reply's word 0 is the status. A program started from the description finds a capability to it in slot NAMES_SLOT.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

// Request labels.
/// A sender to the named server's current instance (the name: 16 bytes, little-endian, in words 0-1), minted for the asking program: payload CLIENT (bit 62) | its place in the description. (interface CLIENTS)
pub const LOOKUP: u64 = 1;
/// What the description grants, from the asking server, the client whose call came with payload. (interface CLIENTS)
pub const GRANT: u64 = 2;
/// A server whose line says notify, told by the notification bit GONE_BIT, asks which of its clients ended: up to two of their payloads (0: none) and how many more wait (init keeps at most MAX_GONE). Another program gets none. (interface CLIENTS)
pub const TAKE_GONE: u64 = 3;

/// Statuses: word 0 of every reply.
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
    /// The description does not let this program use that server (not in its uses, or no such server).
    pub const NOT_GRANTED: u64 = 2;
    /// The server is not running (ended, being restarted, or gave up).
    pub const NOT_RUNNING: u64 = 3;
    /// GRANT: the payload is no described client of the asking server, or the description grants it nothing.
    pub const NO_GRANT: u64 = 4;
}

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        LOOKUP => keep_abi::proto::payload::client(payload),
        GRANT => keep_abi::proto::payload::client(payload),
        TAKE_GONE => keep_abi::proto::payload::client(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, LOOKUP | GRANT | TAKE_GONE)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        status::OK => "OK",
        status::BAD_REQUEST => "BAD_REQUEST",
        status::NOT_GRANTED => "NOT_GRANTED",
        status::NOT_RUNNING => "NOT_RUNNING",
        status::NO_GRANT => "NO_GRANT",
        _ => "UNKNOWN_STATUS",
    }
}

/// The typed client: a sender capability to the server, one function per
/// request (arguments in words 0-3, results from words 1-3 of an `OK` reply)
/// that carries no capability and no string (the library makes those calls).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stub(pub Sender);

impl Stub {
    /// TAKE_GONE (3): A server whose line says notify, told by the notification bit GONE_BIT, asks which of its clients ended: up to two of their payloads (0: none) and how many more wait (init keeps at most MAX_GONE). Another program gets none. Statuses: none of its own.
    pub fn take_gone(self) -> Result<(u64, u64, u64), Refused> {
        let w = keep_abi::proto::call(self.0, TAKE_GONE, [0, 0, 0, 0])?;
        Ok((w[0], w[1], w[2]))
    }
}

/// The server's side of the protocol (its handler): one method per request, called by
/// [`dispatch`] once the request is known to be served through the
/// caller's payload range, with the request's arguments (words 0-3).
/// `m` is the whole message: its payload names the caller, its tag says
/// whether a string or capabilities came.  A new request in the
/// definition (abi/services/names.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// LOOKUP (1): A sender to the named server's current instance (the name: 16 bytes, little-endian, in words 0-1), minted for the asking program: payload CLIENT (bit 62) | its place in the description. Results: none.
    fn lookup(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64) -> keep_abi::proto::Answer;

    /// GRANT (2): What the description grants, from the asking server, the client whose call came with payload. Results: length.
    fn grant(&mut self, m: &keep_abi::Msg, payload: u64) -> keep_abi::proto::Answer;

    /// TAKE_GONE (3): A server whose line says notify, told by the notification bit GONE_BIT, asks which of its clients ended: up to two of their payloads (0: none) and how many more wait (init keeps at most MAX_GONE). Another program gets none. Results: first, second, more.
    fn take_gone(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            LOOKUP | GRANT | TAKE_GONE => status::BAD_REQUEST,
            _ => status::BAD_REQUEST,
        });
    }
    match label {
        LOOKUP => server.lookup(m, m.words[0], m.words[1]),
        GRANT => server.grant(m, m.words[0]),
        TAKE_GONE => server.take_gone(m),
        _ => keep_abi::proto::Answer::refuse(status::BAD_REQUEST),
    }
}
