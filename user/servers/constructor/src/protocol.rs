// generated from abi/services/constructor.toml by tools/idlgen.py; do not edit.
//! The `constructor` protocol: A call's label is the request; the reply's word 0 is a status, the results follow.

#![allow(dead_code)]

use keep_abi::Sender;
pub use keep_abi::proto::Refused;

/// Request labels.
pub mod req {
    /// A new constructor named by name_lo, name_hi (16 bytes) for an image of length bytes (1 to MAX_IMAGE = 1 MiB): its builder and index. (interface metaconstructor)
    pub const NEW: u64 = 1;
    /// A piece of the image (up to 4 KiB). (interface builder)
    pub const IMAGE: u64 = 2;
    /// An initial capability for slot of every instance. (interface builder)
    pub const ADD_CAP: u64 = 3;
    /// Seals the constructor: its image and capabilities never change after; the requester's capability. (interface builder)
    pub const SEAL: u64 = 4;
    /// Whether the instances are confined for a requester who authorises up to 4 holes (capabilities sent): 1 or 0, and the first unsafe slot. (interface constructor)
    pub const IS_CONFINED: u64 = 5;
    /// An instance on a new sub-bank (limit) of the requester's bank, with an account of frames and arg0: its process and its bank (every right). (interface constructor)
    pub const INSTANTIATE: u64 = 6;
    /// The constructor's blob, length bytes (1 to MAX_BLOB = 256 MiB), from an address space whose capability slots 0, 1, ... hold its pages; at most once, before SEAL. (interface builder)
    pub const BLOB: u64 = 7;
}

/// Statuses: word 0 of every reply.
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// The label is no request of the interface the capability serves, or an argument is malformed; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
    /// The capability does not allow this request (a builder asked to instantiate, a constructor asked to change).
    pub const NO_RIGHTS: u64 = 2;
    /// The constructor is sealed (IMAGE, ADD_CAP, SEAL, BLOB) or not yet (the requests of a constructor).
    pub const BAD_STATE: u64 = 3;
    /// The image is not a valid program (at SEAL).
    pub const BAD_IMAGE: u64 = 4;
    /// The capability given as a bank is not one of the space bank's.
    pub const NOT_A_BANK: u64 = 5;
    /// The bank refused (word 1: the bank's status).
    pub const BANK: u64 = 6;
    /// Loading the instance failed (its bank is destroyed again).
    pub const LOAD: u64 = 7;
    /// The server's tables or heap are full.
    pub const FULL: u64 = 8;
}

/// The payload range each request is served on (`keep_abi::proto::payload`):
/// true when a request with `label` may come through a capability with
/// protected payload `payload`; false for a label that is no request.
pub fn serves(label: u64, payload: u64) -> bool {
    match label {
        req::NEW => crate::meta(payload),
        req::IMAGE => crate::builder(payload),
        req::ADD_CAP => crate::builder(payload),
        req::SEAL => crate::builder(payload),
        req::IS_CONFINED => crate::requester(payload),
        req::INSTANTIATE => crate::requester(payload),
        req::BLOB => crate::builder(payload),
        _ => false,
    }
}

/// Whether `label` is a request of the service's (on any interface): a
/// server that also receives messages of other kinds (the kernel's fault
/// messages, its interrupts) tells them apart with it before `dispatch`.
pub fn is_request(label: u64) -> bool {
    matches!(label, req::NEW | req::IMAGE | req::ADD_CAP | req::SEAL | req::IS_CONFINED | req::INSTANTIATE | req::BLOB)
}

/// A status's name, for messages.
pub fn status_name(s: u64) -> &'static str {
    match s {
        status::OK => "OK",
        status::BAD_REQUEST => "BAD_REQUEST",
        status::NO_RIGHTS => "NO_RIGHTS",
        status::BAD_STATE => "BAD_STATE",
        status::BAD_IMAGE => "BAD_IMAGE",
        status::NOT_A_BANK => "NOT_A_BANK",
        status::BANK => "BANK",
        status::LOAD => "LOAD",
        status::FULL => "FULL",
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
/// definition (abi/services/constructor.toml) is a new method here, which
/// the server must then implement.
pub trait Handler {
    /// NEW (1): A new constructor named by name_lo, name_hi (16 bytes) for an image of length bytes (1 to MAX_IMAGE = 1 MiB): its builder and index. Results: index.
    fn new(&mut self, m: &keep_abi::Msg, name_lo: u64, name_hi: u64, length: u64) -> keep_abi::proto::Answer;

    /// IMAGE (2): A piece of the image (up to 4 KiB). (string: the piece of the image at offset) Results: none.
    fn image(&mut self, m: &keep_abi::Msg, offset: u64) -> keep_abi::proto::Answer;

    /// ADD_CAP (3): An initial capability for slot of every instance. (capabilities: cap) Results: none.
    fn add_cap(&mut self, m: &keep_abi::Msg, slot: u64) -> keep_abi::proto::Answer;

    /// SEAL (4): Seals the constructor: its image and capabilities never change after; the requester's capability. Results: none.
    fn seal(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// IS_CONFINED (5): Whether the instances are confined for a requester who authorises up to 4 holes (capabilities sent): 1 or 0, and the first unsafe slot. (capabilities: holes) Results: confined, unsafe_slot.
    fn is_confined(&mut self, m: &keep_abi::Msg) -> keep_abi::proto::Answer;

    /// INSTANTIATE (6): An instance on a new sub-bank (limit) of the requester's bank, with an account of frames and arg0: its process and its bank (every right). (capabilities: bank) Results: none.
    fn instantiate(&mut self, m: &keep_abi::Msg, limit: u64, frames: u64, arg0: u64) -> keep_abi::proto::Answer;

    /// BLOB (7): The constructor's blob, length bytes (1 to MAX_BLOB = 256 MiB), from an address space whose capability slots 0, 1, ... hold its pages; at most once, before SEAL. (capabilities: pages) Results: none.
    fn blob(&mut self, m: &keep_abi::Msg, length: u64) -> keep_abi::proto::Answer;
}

/// Decodes one request and calls its method; `BAD_REQUEST` for a label that
/// is no request, or a request not served through the caller's payload.
pub fn dispatch<H: Handler + ?Sized>(server: &mut H, m: &keep_abi::Msg) -> keep_abi::proto::Answer {
    let label = m.tag.label();
    if !serves(label, m.payload) {
        return keep_abi::proto::Answer::refuse(match label {
            req::NEW | req::IMAGE | req::ADD_CAP | req::SEAL | req::IS_CONFINED | req::INSTANTIATE | req::BLOB => status::NO_RIGHTS,
            _ => status::BAD_REQUEST,
        });
    }
    match label {
        req::NEW => server.new(m, m.words[0], m.words[1], m.words[2]),
        req::IMAGE => server.image(m, m.words[0]),
        req::ADD_CAP => server.add_cap(m, m.words[0]),
        req::SEAL => server.seal(m),
        req::IS_CONFINED => server.is_confined(m),
        req::INSTANTIATE => server.instantiate(m, m.words[0], m.words[1], m.words[2]),
        req::BLOB => server.blob(m, m.words[0]),
        _ => keep_abi::proto::Answer::refuse(status::BAD_REQUEST),
    }
}
