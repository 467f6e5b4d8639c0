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

/// The protected-payload ranges of a server's interfaces
/// (abi/services/common.toml): the values and one predicate per range.
pub mod payload {
    /// The administrator: the capability the server's starter keeps.
    pub const ADMIN: u64 = 0;
    /// Init's notices (a client ended) to a server whose line says notify.
    pub const NOTICE: u64 = 1 << 61;
    /// The server's own interrupt messages, through the sender it bound
    /// its interrupt line to.
    pub const INTERRUPT: u64 = u64::MAX - 1;
    /// The kernel's fault messages for the server's DMA domain.
    pub const FAULT: u64 = u64::MAX;

    pub const fn admin(p: u64) -> bool {
        p == ADMIN
    }
    /// Every payload a client may hold: not the administrator's, init's
    /// or the kernel's.
    pub const fn client(p: u64) -> bool {
        p != ADMIN && p != NOTICE && p < INTERRUPT
    }
    pub const fn any(p: u64) -> bool {
        admin(p) || client(p)
    }
    pub const fn notice(p: u64) -> bool {
        p == NOTICE
    }
    pub const fn interrupt(p: u64) -> bool {
        p == INTERRUPT
    }
    pub const fn fault(p: u64) -> bool {
        p == FAULT
    }
}

#[cfg(test)]
mod tests {
    use super::payload::*;

    #[test]
    fn payload_ranges_do_not_overlap() {
        for p in [0, 1, 2, 1 << 61, (1 << 62) | 5, u64::MAX - 2, u64::MAX - 1, u64::MAX] {
            let n = [admin(p), client(p), notice(p), interrupt(p), fault(p)].iter().filter(|&&b| b).count();
            assert_eq!(n, 1, "payload {p:#x} is in {n} ranges");
            assert_eq!(any(p), admin(p) || client(p));
        }
        assert!(admin(0) && client(1) && client((1 << 62) | 3) && notice(1 << 61));
        assert!(interrupt(u64::MAX - 1) && fault(u64::MAX) && !any(u64::MAX - 1));
    }
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
