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

/// A server's answer to one request, as a generated protocol's `Server`
/// methods return it and its `dispatch` passes it on: the status (word 0),
/// up to three results (words 1-3), whether the handler put a string in
/// the IPC buffer or capabilities in its send slots, or that the request
/// is answered later (the handler kept the return capability: a request
/// that `waits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answer {
    pub status: u64,
    pub results: [u64; 3],
    pub string: bool,
    pub caps: u64,
    pub later: bool,
}

impl Answer {
    /// `OK` with `results`.
    pub const fn ok(results: [u64; 3]) -> Answer {
        Answer { status: status::OK, results, string: false, caps: 0, later: false }
    }
    /// `OK` with one result.
    pub const fn value(v: u64) -> Answer {
        Answer::ok([v, 0, 0])
    }
    /// A status other than `OK`, no results.
    pub const fn refuse(status: u64) -> Answer {
        Answer { status, results: [0; 3], string: false, caps: 0, later: false }
    }
    /// No reply now.
    pub const fn later() -> Answer {
        Answer { status: status::OK, results: [0; 3], string: false, caps: 0, later: true }
    }
    /// The same, with results (a status that reports a value beside it).
    pub const fn with_results(self, results: [u64; 3]) -> Answer {
        Answer { results, ..self }
    }
    /// The same, with the string the handler wrote to the IPC buffer.
    pub const fn with_string(self) -> Answer {
        Answer { string: true, ..self }
    }
    /// The same, with `n` capabilities from the send slots the handler named.
    pub const fn with_caps(self, n: u64) -> Answer {
        Answer { caps: n, ..self }
    }
    /// The reply's words.
    pub const fn words(&self) -> [u64; 4] {
        [self.status, self.results[0], self.results[1], self.results[2]]
    }
    /// The reply's tag (label 0).
    pub const fn tag(&self) -> Tag {
        let t = Tag::new(0).with_caps(self.caps);
        if self.string { t.with_string() } else { t }
    }
}

#[cfg(test)]
mod answer_tests {
    use super::*;

    #[test]
    fn an_answer_is_its_words_and_tag() {
        assert_eq!(Answer::value(7).words(), [status::OK, 7, 0, 0]);
        assert_eq!(Answer::refuse(5).with_results([1, 2, 3]).words(), [5, 1, 2, 3]);
        assert!(Answer::ok([0; 3]).with_string().tag().has_string());
        assert!(!Answer::ok([0; 3]).tag().has_string());
        assert_eq!(Answer::refuse(2).with_caps(1).tag().caps(), 1);
        assert!(Answer::later().later && !Answer::value(0).later);
    }
}
