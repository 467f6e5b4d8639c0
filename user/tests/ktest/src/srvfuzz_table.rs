// generated from abi/services/*.toml by tools/idlgen.py; do not edit.
//! Every service's requests as data for the server fuzzers (srvfuzz.rs,
//! docs/fuzzing.md).

#![allow(dead_code)]

/// What edge values an argument gets (tools/idlgen.py KINDS, by its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind { Count, Offset, Handle, Rights, Word }

/// One argument word: its name in the definition and its kind.
#[derive(Clone, Copy, Debug)]
pub struct Arg { pub name: &'static str, pub kind: Kind }

/// One request of a service's definition.
#[derive(Clone, Copy, Debug)]
pub struct Request {
    pub name: &'static str,
    pub label: u64,
    /// The interface it is served on, and that interface's payload range
    /// (ADMIN, CLIENTS, ANY, ...: abi/services/common.toml).
    pub interface: &'static str,
    pub payload: &'static str,
    pub args: &'static [Arg],
    /// Words 1.. of an OK reply.
    pub results: u8,
    pub send_caps: u8,
    pub reply_caps: u8,
    pub send_string: bool,
    pub reply_string: bool,
    /// The statuses besides OK and BAD_REQUEST it may answer.
    pub statuses: &'static [u64],
    /// It may be answered only when something happens (`waits`): the
    /// fuzzer bounds it with a short time-out, which is no hang.
    pub waits: bool,
}

/// blk (abi/services/blk.toml).
pub mod blk {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10];

    pub const REQUESTS: &[Request] = &[
        Request { name: "ADD_CLIENT", label: 1, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "first", kind: Kind::Offset }, Arg { name: "sectors", kind: Kind::Count }, Arg { name: "rights", kind: Kind::Rights }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 5], waits: false },
        Request { name: "STATS", label: 2, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "QUIT", label: 3, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "INFO", label: 4, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "READ", label: 5, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "sector", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 3, 4], waits: false },
        Request { name: "WRITE", label: 6, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "sector", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 3, 4], waits: false },
        Request { name: "FLUSH", label: 7, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4], waits: false },
        Request { name: "ATTACH", label: 8, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[5, 7], waits: false },
        Request { name: "DETACH", label: 9, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[6, 8], waits: false },
        Request { name: "READ_DS", label: 10, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }, Arg { name: "offset", kind: Kind::Offset }, Arg { name: "sector", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6], waits: false },
        Request { name: "WRITE_DS", label: 11, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }, Arg { name: "offset", kind: Kind::Offset }, Arg { name: "sector", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6], waits: false },
        Request { name: "QUEUE_STATS", label: 12, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "CLIENT", label: 13, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[9], waits: false },
        Request { name: "READ_DS_V", label: 14, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }, Arg { name: "entries", kind: Kind::Count }], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: true,
                  statuses: &[2, 3, 4, 6], waits: false },
        Request { name: "WRITE_DS_V", label: 15, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }, Arg { name: "entries", kind: Kind::Count }], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: true,
                  statuses: &[2, 3, 4, 6], waits: false },
        Request { name: "DEVICE_STATS", label: 16, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "RING", label: 17, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "buffer", kind: Kind::Handle }, Arg { name: "offset", kind: Kind::Offset }], results: 1,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[6, 3, 8, 5, 10], waits: false },
        Request { name: "RING_END", label: 18, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[9], waits: false },
        Request { name: "KICK", label: 19, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
    ];
}

/// checkpointer (abi/services/checkpointer.toml).
pub mod checkpointer {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5];

    pub const REQUESTS: &[Request] = &[
        Request { name: "CHECKPOINT", label: 1, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 3, 4, 5], waits: false },
        Request { name: "STATUS", label: 2, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[], waits: false },
    ];
}

/// console (abi/services/console.toml).
pub mod console {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 8];

    pub const REQUESTS: &[Request] = &[
        Request { name: "WRITE", label: 1, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[3, 4, 5, 6], waits: false },
        Request { name: "READ", label: 2, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "max", kind: Kind::Word }], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[3, 5, 6, 8], waits: false },
        Request { name: "SET_NOTIFY", label: 3, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "bits", kind: Kind::Word }], results: 0,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 5, 6], waits: false },
        Request { name: "NEW", label: 16, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "kind", kind: Kind::Word }, Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[3, 5, 6], waits: false },
        Request { name: "VIEW", label: 17, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "vt", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[3, 5, 6], waits: false },
        Request { name: "SWITCH", label: 18, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "vt", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[3, 5], waits: false },
        Request { name: "LIST", label: 19, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[3, 5], waits: false },
    ];
}

/// constructor (abi/services/constructor.toml).
pub mod constructor {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8];

    pub const REQUESTS: &[Request] = &[
        Request { name: "NEW", label: 1, interface: "metaconstructor", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }, Arg { name: "length", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 8], waits: false },
        Request { name: "IMAGE", label: 2, interface: "builder", payload: "CLIENTS",
                  args: &[Arg { name: "offset", kind: Kind::Offset }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 3], waits: false },
        Request { name: "ADD_CAP", label: 3, interface: "builder", payload: "CLIENTS",
                  args: &[Arg { name: "slot", kind: Kind::Handle }], results: 0,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 8], waits: false },
        Request { name: "SEAL", label: 4, interface: "builder", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 8], waits: false },
        Request { name: "IS_CONFINED", label: 5, interface: "constructor", payload: "CLIENTS",
                  args: &[], results: 2,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3], waits: false },
        Request { name: "INSTANTIATE", label: 6, interface: "constructor", payload: "CLIENTS",
                  args: &[Arg { name: "limit", kind: Kind::Count }, Arg { name: "frames", kind: Kind::Count }, Arg { name: "arg0", kind: Kind::Word }], results: 0,
                  send_caps: 1, reply_caps: 2, send_string: false, reply_string: false,
                  statuses: &[2, 3, 5, 6, 7, 8], waits: false },
        Request { name: "BLOB", label: 7, interface: "builder", payload: "CLIENTS",
                  args: &[Arg { name: "length", kind: Kind::Count }], results: 0,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 8], waits: false },
    ];
}

/// counter (abi/services/counter.toml).
pub mod counter {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2];

    pub const REQUESTS: &[Request] = &[
        Request { name: "ADD", label: 1, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "n", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2], waits: false },
        Request { name: "GET", label: 2, interface: "ANY", payload: "ANY",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "QUIT", label: 3, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "CRASH", label: 4, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "after_ms", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
    ];
}

/// dataspace (abi/services/dataspace.toml).
pub mod dataspace {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];

    pub const REQUESTS: &[Request] = &[
        Request { name: "CREATE", label: 1, interface: "manager", payload: "ADMIN",
                  args: &[Arg { name: "pages", kind: Kind::Count }], results: 1,
                  send_caps: 1, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[6, 7, 9, 10], waits: false },
        Request { name: "STATS", label: 2, interface: "manager", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "QUIT", label: 3, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "INFO", label: 4, interface: "handle", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4, 11], waits: false },
        Request { name: "MAP", label: 5, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "vaddr", kind: Kind::Offset }, Arg { name: "first", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }, Arg { name: "rights", kind: Kind::Rights }], results: 1,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 7, 8, 11], waits: false },
        Request { name: "UNMAP", label: 6, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "mapping", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4, 5, 11], waits: false },
        Request { name: "SHARE", label: 7, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "rights", kind: Kind::Rights }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 4, 7, 11], waits: false },
        Request { name: "REVOKE", label: 8, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "handle", kind: Kind::Handle }], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4, 5, 11], waits: false },
        Request { name: "PIN", label: 9, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "first", kind: Kind::Offset }, Arg { name: "count", kind: Kind::Count }, Arg { name: "dev_addr", kind: Kind::Offset }, Arg { name: "rights", kind: Kind::Rights }], results: 1,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 3, 4, 7, 8, 11], waits: false },
        Request { name: "UNPIN", label: 10, interface: "handle", payload: "CLIENTS",
                  args: &[Arg { name: "pin", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4, 5, 11], waits: false },
        Request { name: "DESTROY", label: 11, interface: "handle", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 11], waits: false },
    ];
}

/// init (abi/services/init.toml).
pub mod init {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4];

    pub const REQUESTS: &[Request] = &[
        Request { name: "START", label: 16, interface: "CONTROL", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3], waits: false },
        Request { name: "STATUS", label: 17, interface: "CONTROL", payload: "ADMIN",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[], waits: false },
        Request { name: "STOP", label: 18, interface: "CONTROL", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "KILL", label: 19, interface: "CONTROL", payload: "ADMIN",
                  args: &[Arg { name: "entry", kind: Kind::Handle }, Arg { name: "delay_ms", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4], waits: false },
        Request { name: "ADMIN", label: 20, interface: "CONTROL", payload: "ADMIN",
                  args: &[Arg { name: "entry", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[4], waits: false },
        Request { name: "ENDED", label: 21, interface: "CONTROL", payload: "ADMIN",
                  args: &[Arg { name: "entry", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "DIED", label: 32, interface: "WATCHER", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: true },
    ];
}

/// names (abi/services/names.toml).
pub mod names {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4];

    pub const REQUESTS: &[Request] = &[
        Request { name: "LOOKUP", label: 1, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3], waits: false },
        Request { name: "GRANT", label: 2, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "payload", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[4], waits: false },
        Request { name: "TAKE_GONE", label: 3, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
    ];
}

/// net (abi/services/net.toml).
pub mod net {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8];

    pub const REQUESTS: &[Request] = &[
        Request { name: "ADD_STACK", label: 1, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "ip", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[4, 5], waits: false },
        Request { name: "REMOVE_STACK", label: 2, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "stack", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2], waits: false },
        Request { name: "STATS", label: 3, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "QUIT", label: 4, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "INFO", label: 5, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "SEND", label: 6, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 4, 5, 3, 7], waits: false },
        Request { name: "RECV", label: 7, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 4, 5, 6], waits: false },
        Request { name: "COUNTERS", label: 8, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "WAIT", label: 9, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "flags", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: true },
        Request { name: "ATTACH", label: 10, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5, 3, 8], waits: false },
        Request { name: "KICK", label: 11, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "RING_COUNTERS", label: 12, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "DEVICE_STATS", label: 13, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "RESET_NIC", label: 14, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "NOTIFY", label: 15, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "bits", kind: Kind::Word }, Arg { name: "flags", kind: Kind::Word }], results: 0,
                  send_caps: 1, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5, 3], waits: false },
    ];
}

/// pci (abi/services/pci.toml).
pub mod pci {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6];

    pub const REQUESTS: &[Request] = &[
        Request { name: "LIST", label: 1, interface: "public", payload: "ANY",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2], waits: false },
        Request { name: "OPEN", label: 2, interface: "public", payload: "ANY",
                  args: &[Arg { name: "ids", kind: Kind::Handle }, Arg { name: "instance", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 2, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6], waits: false },
        Request { name: "QUIT", label: 3, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
        Request { name: "CONFIG_READ", label: 4, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "offset", kind: Kind::Offset }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[5], waits: false },
        Request { name: "CONFIG_WRITE", label: 5, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "offset", kind: Kind::Offset }, Arg { name: "value", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[4, 5], waits: false },
        Request { name: "GET_BAR", label: 6, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 2,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "RELEASE", label: 7, interface: "session", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[5], waits: false },
        Request { name: "GET_IRQ", label: 8, interface: "session", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 5], waits: false },
        Request { name: "GET_MSI", label: 9, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "entry", kind: Kind::Handle }], results: 3,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 6, 5], waits: false },
        Request { name: "VIRTIO_READ", label: 10, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "offset", kind: Kind::Offset }, Arg { name: "width", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 5], waits: false },
        Request { name: "VIRTIO_WRITE", label: 11, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "offset", kind: Kind::Offset }, Arg { name: "width", kind: Kind::Count }, Arg { name: "value", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "VIRTIO_QUEUE", label: 12, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "queue", kind: Kind::Handle }, Arg { name: "size", kind: Kind::Count }, Arg { name: "used", kind: Kind::Offset }], results: 0,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6, 5], waits: false },
        Request { name: "VIRTIO_SUBMIT", label: 13, interface: "session", payload: "CLIENTS",
                  args: &[Arg { name: "queue", kind: Kind::Handle }], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 3, 4, 6, 5], waits: false },
        Request { name: "VIRTIO_STATS", label: 14, interface: "session", payload: "CLIENTS",
                  args: &[], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 5], waits: false },
    ];
}

/// pfilter (abi/services/pfilter.toml).
pub mod pfilter {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

    pub const REQUESTS: &[Request] = &[
        Request { name: "LOAD_PART", label: 1, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "offset", kind: Kind::Offset }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2], waits: false },
        Request { name: "LOAD", label: 2, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "size", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[3, 4, 5, 9], waits: false },
        Request { name: "RUN", label: 3, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "filter", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[7, 8, 6], waits: false },
        Request { name: "UNLOAD", label: 4, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "filter", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[6], waits: false },
        Request { name: "QUIT", label: 5, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[], waits: false },
    ];
}

/// rtc (abi/services/rtc.toml).
pub mod rtc {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3];

    pub const REQUESTS: &[Request] = &[
        Request { name: "NOW", label: 1, interface: "ANY", payload: "ANY",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[3], waits: false },
        Request { name: "QUIT", label: 2, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2], waits: false },
    ];
}

/// spacebank (abi/services/spacebank.toml).
pub mod spacebank {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8];

    pub const REQUESTS: &[Request] = &[
        Request { name: "ALLOC_PAGE", label: 1, interface: "ANY", payload: "ANY",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6, 7, 8], waits: false },
        Request { name: "ALLOC_CAPPAGE", label: 2, interface: "ANY", payload: "ANY",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6, 7, 8], waits: false },
        Request { name: "ALLOC_ACCOUNT", label: 3, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "frames", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6, 7, 8], waits: false },
        Request { name: "FUND", label: 4, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "handle", kind: Kind::Handle }, Arg { name: "frames", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 5, 6, 8], waits: false },
        Request { name: "FREE", label: 5, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "handle", kind: Kind::Handle }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4, 5], waits: false },
        Request { name: "CREATE_BANK", label: 6, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "limit", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 7, 8], waits: false },
        Request { name: "RESTRICT", label: 7, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "mask", kind: Kind::Rights }], results: 0,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[4, 7, 8], waits: false },
        Request { name: "INFO", label: 8, interface: "ANY", payload: "ANY",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4], waits: false },
        Request { name: "DESTROY", label: 9, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 4], waits: false },
        Request { name: "REPORT", label: 10, interface: "ANY", payload: "ANY",
                  args: &[], results: 2,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 4], waits: false },
        Request { name: "ALLOC_PAGES", label: 11, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "n", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 1, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 6, 7, 8], waits: false },
    ];
}

/// tpm (abi/services/tpm.toml).
pub mod tpm {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

    pub const REQUESTS: &[Request] = &[
        Request { name: "EXTEND", label: 1, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "pcr", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 8, 3, 4, 9], waits: false },
        Request { name: "PCR", label: 2, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "pcr", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[3, 4, 9], waits: false },
        Request { name: "LOG", label: 3, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[5, 3], waits: false },
        Request { name: "RANDOM", label: 4, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "count", kind: Kind::Count }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[3, 4, 9], waits: false },
        Request { name: "SEAL", label: 5, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: true,
                  statuses: &[3, 4, 9], waits: false },
        Request { name: "UNSEAL", label: 6, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: true,
                  statuses: &[6, 7, 3, 4, 9], waits: false },
        Request { name: "COUNTER", label: 7, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "counter", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 9], waits: false },
        Request { name: "INCREMENT", label: 8, interface: "ANY", payload: "ANY",
                  args: &[Arg { name: "counter", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3, 4, 9], waits: false },
        Request { name: "QUIT", label: 9, interface: "ANY", payload: "ANY",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2], waits: false },
    ];
}

/// vault (abi/services/vault.toml).
pub mod vault {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9];

    pub const REQUESTS: &[Request] = &[
        Request { name: "PUT", label: 1, interface: "described", payload: "CLIENTS",
                  args: &[Arg { name: "name_len", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[3, 4, 5, 6, 7, 8, 9], waits: false },
        Request { name: "GET", label: 2, interface: "described", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: true,
                  statuses: &[2, 5, 6, 7, 8, 9], waits: false },
        Request { name: "DELETE", label: 3, interface: "described", payload: "CLIENTS",
                  args: &[], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 5, 6, 7, 8, 9], waits: false },
        Request { name: "LIST", label: 4, interface: "described", payload: "CLIENTS",
                  args: &[Arg { name: "index", kind: Kind::Handle }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 5, 6, 7, 8, 9], waits: false },
        Request { name: "STATS", label: 5, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 3,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[], waits: false },
    ];
}

/// whfiles (abi/services/whfiles.toml).
pub mod whfiles {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3];

    pub const REQUESTS: &[Request] = &[
        Request { name: "READ", label: 1, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }, Arg { name: "offset", kind: Kind::Offset }, Arg { name: "len", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[2, 3], waits: false },
        Request { name: "WRITE", label: 2, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }, Arg { name: "offset", kind: Kind::Offset }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[3], waits: false },
        Request { name: "SIZE", label: 3, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3], waits: false },
        Request { name: "SYNC", label: 4, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[3], waits: false },
        Request { name: "REMOVE", label: 5, interface: "CLIENTS", payload: "CLIENTS",
                  args: &[Arg { name: "name_lo", kind: Kind::Word }, Arg { name: "name_hi", kind: Kind::Word }], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: false,
                  statuses: &[2, 3], waits: false },
    ];
}

/// workhorse (abi/services/workhorse.toml).
pub mod workhorse {
    use super::*;

    /// Every status the service defines (OK and BAD_REQUEST included).
    pub const STATUSES: &[u64] = &[0, 1, 2, 3, 4];

    pub const REQUESTS: &[Request] = &[
        Request { name: "RUN", label: 1, interface: "ADMIN", payload: "ADMIN",
                  args: &[Arg { name: "length", kind: Kind::Count }], results: 1,
                  send_caps: 0, reply_caps: 0, send_string: true, reply_string: false,
                  statuses: &[2, 3, 4], waits: false },
        Request { name: "STATS", label: 2, interface: "ADMIN", payload: "ADMIN",
                  args: &[], results: 0,
                  send_caps: 0, reply_caps: 0, send_string: false, reply_string: true,
                  statuses: &[], waits: false },
    ];
}
