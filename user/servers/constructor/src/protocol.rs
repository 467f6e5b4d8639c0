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
        req::NEW => keep_abi::proto::payload::client(payload),
        req::IMAGE => keep_abi::proto::payload::client(payload),
        req::ADD_CAP => keep_abi::proto::payload::client(payload),
        req::SEAL => keep_abi::proto::payload::client(payload),
        req::IS_CONFINED => keep_abi::proto::payload::client(payload),
        req::INSTANTIATE => keep_abi::proto::payload::client(payload),
        req::BLOB => keep_abi::proto::payload::client(payload),
        _ => false,
    }
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
