//! What every user-level protocol shares (abi/services/common.toml): the
//! reply convention (word 0 of a reply is a status, `OK` or
//! `BAD_REQUEST` or the service's own from 2 up; the results follow in
//! words 1-3), the payload ranges a server's interfaces are served on, and
//! the one call the generated client stubs make.  tools/idlgen.py writes
//! each service's labels, statuses and stubs from its
//! abi/services/<service>.toml into the service's crate.

use crate::{Error, Sender, Tag, err};

/// Statuses every service shares (word 0 of a reply).
pub mod status {
    /// The request was done.
    pub const OK: u64 = 0;
    /// Not a request of the interface the capability serves, or a
    /// malformed argument; nothing changed.
    pub const BAD_REQUEST: u64 = 1;
}

/// The protected-payload ranges of a server's interfaces.
pub mod payload {
    /// The administrator: the capability the server's starter keeps.
    pub const ADMIN: u64 = 0;
    /// The first client payload (clients are 1 ..= LAST_CLIENT).
    pub const FIRST_CLIENT: u64 = 1;
    pub const LAST_CLIENT: u64 = u64::MAX - 2;
    /// Init's notices.
    pub const NOTICE: u64 = u64::MAX - 1;
    /// Messages the kernel makes: interrupts and faults.
    pub const KERNEL: u64 = u64::MAX;
}

/// Why a request did not return its results.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// The call itself failed (the kernel's error).
    Call(Error),
    /// The server answered with a status other than `OK`.
    Status(u64),
}

/// Calls `server` with `label` and `args`; the reply's words 1-3 when its
/// status (word 0) is `OK`.
pub fn call(server: Sender, label: u64, args: [u64; 4]) -> Result<[u64; 3], Refused> {
    let m = server.call(Tag::new(label), args);
    if m.err != err::OK {
        return Err(Refused::Call(Error(m.err)));
    }
    match m.words[0] {
        status::OK => Ok([m.words[1], m.words[2], m.words[3]]),
        s => Err(Refused::Status(s)),
    }
}
