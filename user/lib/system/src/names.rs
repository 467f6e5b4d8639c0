//! The name service: a program started from the system description finds,
//! in slot [`NAMES_SLOT`], a capability to it, and asks it for the servers
//! it was granted by name.  The reply carries a sender capability to the
//! server's current instance, minted for this client (its payload is the
//! client's place in the description), so a server tells its clients
//! apart; after a server's restart the old capability is STALE and a new
//! LOOKUP gives one to the new instance.
//!
//! The protocol (LOOKUP, GRANT and their statuses) is defined in
//! `abi/services/names.toml`; `tools/idlgen.py` generates `names/protocol.rs`
//! from it and the table in docs/space-banks.md; `TAKE_GONE` is how a
//! server learns which clients ended ([`take_gone`]).
//!
//! The sender's payload is [`CLIENT`] | the client's index in the
//! description, so that a server can tell a described client from the
//! capabilities it mints itself (a device server's payload 0 is its
//! administrator's, and so on).  A server that hands out per-client
//! authority (the PCI server, the block server) asks `GRANT` the first
//! time a described client calls (docs/space-banks.md, "Devices").

use alloc::string::String;

use keep_abi::{Sender, Tag, err};

/// The tag of a name-service sender's payload.
pub const CLIENT: u64 = 1 << 62;

/// The client's index in the description, if `payload` is a name-service sender's.
pub fn client_of(payload: u64) -> Option<u64> {
    (payload & !0xffff == CLIENT).then_some(payload & 0xffff)
}

/// The payload of init's notices to a server whose line says `notify`
/// (docs/space-banks.md, "Clients that end"): no name-service sender
/// carries it (those are [`CLIENT`] | index), and a server must mint no
/// capability of its own with it, so a call with this payload comes from
/// init alone.
pub const NOTICE: u64 = keep_abi::proto::payload::NOTICE;

/// A notice as a call (payload [`NOTICE`], from whoever started a server
/// by hand: ktest): word 0 is the payload of an ended client's calls
/// ([`CLIENT`] | its index); the server lets go of what it holds of the
/// client's (its mapped dataspaces) and answers `OK`.
pub const GONE: u64 = 0x30;

/// init's notices to a server started from the description whose line
/// says `notify`: init binds a notification to the server's instance (its
/// messages carry the payload [`NOTICE`]) and signals this bit when a
/// client of it ends; the server then asks init which ([`TAKE_GONE`],
/// [`take_gone`]).  init never waits for the server.
pub const GONE_BIT: u64 = 1;

/// Where a program finds the name service.
pub const NAMES_SLOT: u64 = 0xd;

pub mod protocol;
pub use protocol::{GRANT, LOOKUP, TAKE_GONE};

/// The clients of this server that ended since it last asked (init's
/// notice, [`GONE_BIT`]), each given to `f` in the order they ended.
pub fn take_gone(names: u64, mut f: impl FnMut(u64)) -> Result<(), u64> {
    // Bounded: init keeps at most MAX_GONE of them.
    for _ in 0..MAX_GONE {
        let m = Sender(names).call(Tag::new(TAKE_GONE), [0; 4]);
        if m.err != err::OK {
            return Err(m.err);
        }
        if m.words[0] != status::OK {
            return Err(m.words[0]);
        }
        for &p in &m.words[1..3] {
            if p != 0 {
                f(p);
            }
        }
        if m.words[3] == 0 {
            break;
        }
    }
    Ok(())
}

/// The ended clients init keeps for a server that has not asked (older
/// ones are dropped; the server finds their pins gone at its next reap).
pub const MAX_GONE: usize = 64;

pub mod status {
    pub use super::protocol::status::*;

    pub fn name(s: u64) -> &'static str {
        match s {
            OK => "ok",
            BAD_REQUEST => "bad request",
            NOT_GRANTED => "not granted to this program",
            NOT_RUNNING => "not running",
            NO_GRANT => "no grant for that client",
            _ => "unknown status",
        }
    }
}

/// Asks the name service at `names` for `name`; the sender goes to the
/// caller's empty slot `dest`.  Err: the status, or the kernel's error
/// (`err` + 0x100) when the call itself failed.
pub fn lookup_at(names: u64, name: &str, dest: u64, buf: &mut keep_abi::IpcBuffer) -> Result<Sender, u64> {
    let (lo, hi) = keep_abi::pack_name(name);
    let tag = Tag::new(LOOKUP).with_slots(buf.set_recv_slots(&[dest]));
    let m = Sender(names).call(tag, [lo, hi, 0, 0]);
    if m.err != err::OK {
        return Err(0x100 + m.err);
    }
    if m.words[0] != status::OK {
        return Err(m.words[0]);
    }
    Ok(Sender(dest))
}

/// A server asks the name service at `names` what the description grants
/// the client whose call came with `payload`.  Err: the status, or the
/// kernel's error + 0x100.
pub fn grant(names: u64, payload: u64, buf: &keep_abi::IpcBuffer) -> Result<String, u64> {
    let m = Sender(names).call(Tag::new(GRANT), [payload, 0, 0, 0]);
    if m.err != err::OK {
        return Err(0x100 + m.err);
    }
    if m.words[0] != status::OK {
        return Err(m.words[0]);
    }
    let n = (m.words[1] as usize).min(buf.received_len()).min(256);
    let bytes: alloc::vec::Vec<u8> = (0..n).map(|i| buf.string_byte(i)).collect();
    String::from_utf8(bytes).map_err(|_| status::BAD_REQUEST)
}

/// Whether the capability at `slot` is live (a program started from the
/// description finds the name service at [`NAMES_SLOT`]; one started
/// otherwise finds that slot empty).
pub fn present(slot: u64) -> bool {
    keep_abi::SELF_ASPACE.identify_cap(slot).is_ok_and(|c| c.live && c.ty == keep_abi::ty::SENDER)
}

/// `lookup_at` of `name` into the empty slot `dest` through [`NAMES_SLOT`],
/// waiting out NOT_RUNNING (a server being restarted) for up to about 5
/// seconds: what a server does at its start for the servers it uses.
/// Err: the last status (or kernel error + 0x100).
pub fn lookup_patiently(name: &str, dest: u64, buf: &mut keep_abi::IpcBuffer) -> Result<Sender, u64> {
    let mut last = status::NOT_RUNNING;
    for _ in 0..50 {
        match lookup_at(NAMES_SLOT, name, dest, buf) {
            Ok(s) => return Ok(s),
            Err(status::NOT_RUNNING) => {
                // A receive with a time-out is the wait (no timer needed).
                let _ = keep_abi::recv(Tag::new(0), 100);
            }
            Err(e) => {
                last = e;
                break;
            }
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated protocol keeps the wire values init and its clients
    /// already use.
    #[test]
    fn wire_values() {
        assert_eq!((LOOKUP, GRANT, TAKE_GONE), (1, 2, 3));
        assert_eq!(
            (status::OK, status::BAD_REQUEST, status::NOT_GRANTED, status::NOT_RUNNING, status::NO_GRANT),
            (0, 1, 2, 3, 4)
        );
        assert_eq!(NOTICE, 1 << 61);
        assert!(protocol::serves(LOOKUP, CLIENT | 4) && !protocol::serves(LOOKUP, NOTICE));
        assert_eq!(status::name(status::NOT_RUNNING), "not running");
    }
}
