//! The protocol of `init` (user/servers/init), the server the root task
//! starts to carry out the servers of the description: it starts them,
//! answers the name service (LOOKUP, [`crate::names`]), and supervises
//! them — a watcher thread per server waits for its instance to end (exit
//! or fault) and tells init at once, which reaps it (destroys its bank) and
//! starts it again as its `restart` and `backoff` say, reporting each step
//! on the console.
//!
//! The root task loads init (stopped), puts in its capability space the
//! constructor of every server (slot [`slot::CTOR`] + its index in the
//! description) and the bank it runs on ([`slot::BANK`] + index), maps the
//! description's text read-only at [`DESC_VADDR`] (arg0 is its length),
//! starts it, and talks to it through a sender whose payload is
//! [`CONTROL`].
//!
//! The protocol (the root task's control requests and the watchers'
//! `DIED`) is defined in `abi/services/init.toml`; `tools/idlgen.py`
//! generates `init/protocol.rs` ([`req`], [`status`], [`serves`], the
//! client [`Stub`]) from it and the table in docs/space-banks.md.  A
//! program's name-service capability (payload: its index) is the name
//! service's ([`crate::names`]).

use keep_abi::{IpcBuffer, Sender, Tag, err};

pub mod protocol;
pub use protocol::{Stub, req, serves, status, status_name};

/// The longest delay KILL takes (ms): a minute.
pub const MAX_KILL_DELAY: u64 = 60_000;

/// The payload of the root task's capability.
pub const CONTROL: u64 = 0x100;
/// The payload of a watcher's capability: WATCHER | the entry's index.
pub const WATCHER: u64 = 0x200;

/// The root task's capability: the control interface's payload.
pub const fn control(payload: u64) -> bool {
    payload == CONTROL
}

/// A watcher's capability: the watcher interface's payloads.
pub const fn watcher(payload: u64) -> bool {
    payload & !WATCHER_INDEX == WATCHER
}
/// A watcher's answers: wait for the process in the slot again, or end.
pub const WATCH: u64 = 0;
pub const QUIT: u64 = 1;

/// Slots of init's capability space, each + the entry's index (below
/// [`crate::desc::MAX_ENTRIES`]): a region of MAX_ENTRIES slots per kind,
/// in cappages of their own from [`slot::BASE`] (the root task maps
/// [`slot::CAPPAGES`] of them, from init's bank, before it puts anything
/// there), so that init's first cappage is left to its slot pool (its
/// watchers' threads and senders).
pub mod slot {
    use keep_abi::layout::CAPPAGE_SLOTS;
    const N: u64 = crate::desc::MAX_ENTRIES as u64;
    /// The first region's address: init's second cappage.
    pub const BASE: u64 = CAPPAGE_SLOTS;
    /// The entry's constructor (the root task puts it there).
    pub const CTOR: u64 = BASE;
    /// The bank its instances are made on (the root task puts it there).
    pub const BANK: u64 = CTOR + N;
    /// The current instance's process and bank.
    pub const PROCESS: u64 = BANK + N;
    pub const INSTANCE_BANK: u64 = PROCESS + N;
    /// A watcher's DIED call, held until there is something to answer.
    pub const WAITER: u64 = INSTANCE_BANK + N;
    /// The first slot above these.
    pub const END: u64 = WAITER + N;
    /// The cappages the regions take, mapped at BASE, BASE + 256, ...
    pub const CAPPAGES: u64 = (END - BASE).div_ceil(CAPPAGE_SLOTS);
}

/// WATCHER | index: the index's bits.
pub const WATCHER_INDEX: u64 = 0xff;

// An entry's index fits a watcher's payload, init's 64-bit masks of the
// servers an entry uses, and STATUS's string (32 bytes an entry).
const _: () = assert!(crate::desc::MAX_ENTRIES as u64 <= WATCHER_INDEX + 1);
const _: () = assert!(crate::desc::MAX_ENTRIES <= 64);
const _: () = assert!(crate::desc::MAX_ENTRIES * 32 <= keep_abi::layout::MAX_STRING as usize);
const _: () = assert!(WATCHER & WATCHER_INDEX == 0);

/// Where init finds the description's text.
pub const DESC_VADDR: u64 = 0x5100_0000_0000;

/// `EntryStatus::phase`.
pub mod phase {
    /// Not a server (a program: the shell runs it), or not started yet.
    pub const IDLE: u64 = 0;
    pub const RUNNING: u64 = 1;
    /// Ended; a restart is due after its backoff.
    pub const WAITING: u64 = 2;
    /// Ended and not restarted (its restarts used up, or a restart failed).
    pub const DOWN: u64 = 3;
}

/// No process state / no bank.
pub const NONE: u64 = u64::MAX;

/// One entry of STATUS.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryStatus {
    /// The instance's process state (keep_abi::state), or NONE.
    pub state: u64,
    pub restarts: u64,
    /// The instance's bank's index in the bank server, or NONE.
    pub bank: u64,
    pub phase: u64,
}

impl EntryStatus {
    pub fn words(&self) -> [u64; 4] {
        [self.state, self.restarts, self.bank, self.phase]
    }
}

/// A call to init through `cap`: the reply's words (word 0 the status),
/// or the kernel's error when the call itself failed.
pub fn call(cap: u64, label: u64) -> Result<[u64; 4], u64> {
    call_with(cap, label, [0; 4])
}

pub fn call_with(cap: u64, label: u64, words: [u64; 4]) -> Result<[u64; 4], u64> {
    let m = Sender(cap).call(Tag::new(label), words);
    if m.err != err::OK { Err(m.err) } else { Ok(m.words) }
}

/// ADMIN of entry `entry`: the sender arrives at the empty slot `dest`.
/// Err: the kernel's error, or 0x100 + init's status.
pub fn admin(cap: u64, entry: u64, dest: u64, buf: &mut IpcBuffer) -> Result<Sender, u64> {
    let tag = Tag::new(req::ADMIN).with_slots(buf.set_recv_slots(&[dest]));
    let m = Sender(cap).call(tag, [entry, 0, 0, 0]);
    if m.err != err::OK {
        return Err(m.err);
    }
    if m.words[0] != status::OK {
        return Err(0x100 + m.words[0]);
    }
    Ok(Sender(dest))
}

/// STATUS: up to [`crate::desc::MAX_ENTRIES`] entries, decoded from the reply's string.
/// Err: the kernel's error, or 0x100 + init's status.
pub fn entry_status(cap: u64, buf: &IpcBuffer) -> Result<alloc::vec::Vec<EntryStatus>, u64> {
    let w = call(cap, req::STATUS)?;
    if w[0] != status::OK {
        return Err(0x100 + w[0]);
    }
    let n = (w[1] as usize).min(crate::desc::MAX_ENTRIES).min(buf.received_len() / 32);
    let word = |i: usize| {
        let mut b = [0u8; 8];
        for (k, x) in b.iter_mut().enumerate() {
            *x = buf.string_byte(i * 8 + k);
        }
        u64::from_le_bytes(b)
    };
    Ok((0..n).map(|e| EntryStatus { state: word(e * 4), restarts: word(e * 4 + 1), bank: word(e * 4 + 2), phase: word(e * 4 + 3) }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated protocol keeps the wire values the root task and
    /// init agree on, and each request is served only on its interface.
    #[test]
    fn labels_statuses_and_interfaces() {
        assert_eq!((req::START, req::STATUS, req::STOP, req::KILL, req::ADMIN, req::ENDED, req::DIED), (0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x20));
        assert_eq!((status::START_FAILED, status::BAD_STATE, status::NOT_RUNNING), (2, 3, 4));
        for r in [req::START, req::STATUS, req::STOP, req::KILL, req::ADMIN, req::ENDED] {
            assert!(serves(r, CONTROL) && !serves(r, WATCHER | 3) && !serves(r, 3) && !serves(r, 0));
        }
        assert!(serves(req::DIED, WATCHER) && serves(req::DIED, WATCHER | WATCHER_INDEX));
        assert!(!serves(req::DIED, CONTROL) && !serves(req::DIED, 3) && !serves(req::DIED, WATCHER << 1));
        assert!(!serves(crate::names::LOOKUP, CONTROL) && !serves(0x16, CONTROL));
        assert_eq!(status_name(status::BAD_STATE), "BAD_STATE");
    }
}
