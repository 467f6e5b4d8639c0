//! The name service: a program started from the system description finds,
//! in slot [`NAMES_SLOT`], a capability to it, and asks it for the servers
//! it was granted by name.  The reply carries a sender capability to the
//! server's current instance, minted for this client (its payload is the
//! client's place in the description), so a server tells its clients
//! apart; after a server's restart the old capability is STALE and a new
//! LOOKUP gives one to the new instance.
//!
//! | label | words | reply (word 0 status) |
//! |---|---|---|
//! | `LOOKUP` | the name, 16 bytes little-endian in words 0-1 | cap: the server's sender |

use keep_abi::{Sender, Tag, err};

/// Where a program finds the name service.
pub const NAMES_SLOT: u64 = 0xd;

pub const LOOKUP: u64 = 1;

pub mod status {
    pub const OK: u64 = 0;
    pub const BAD_REQUEST: u64 = 1;
    /// The description does not let this program use that server.
    pub const NOT_GRANTED: u64 = 2;
    /// The server is not running (ended, being restarted, or gave up).
    pub const NOT_RUNNING: u64 = 3;

    pub fn name(s: u64) -> &'static str {
        match s {
            OK => "ok",
            BAD_REQUEST => "bad request",
            NOT_GRANTED => "not granted to this program",
            NOT_RUNNING => "not running",
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
