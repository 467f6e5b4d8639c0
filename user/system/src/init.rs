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
//! [`CONTROL`]:
//!
//! | label | words | reply (word 0 status) |
//! |---|---|---|
//! | `START` 0x10 | - | the servers started in order; on a failure word 1 the entry, word 2 the constructor's status, word 3 its detail |
//! | `STATUS` 0x11 | - | the string: a [`EntryStatus`] (4 words) per entry of the description |
//! | `STOP` 0x12 | - | every instance destroyed (its bank), supervision ended |
//! | `KILL` 0x13 | the entry; a delay in ms (0: now; at most [`MAX_KILL_DELAY`]) | its instance destroyed at once, or after the delay (its bank), as if it had crashed: supervision restarts it as for any end |
//! | `ADMIN` 0x14 | the entry | cap: a sender to its instance with payload 0 (a device server's administrator's capability: the shell's `disk`, `devices`) |
//! | `ENDED` 0x15 | the entry of a program | the servers in its `uses` that say `notify` told that it is gone (the root task asks before it destroys the bank of a program it ran); `BAD_REQUEST` for a server's entry |
//!
//! A program's name-service capability (payload: its index) may only ask
//! LOOKUP; a watcher's (payload [`WATCHER`] | index) only `DIED` 0x20.

use keep_abi::{IpcBuffer, Sender, Tag, err};

pub mod req {
    pub const START: u64 = 0x10;
    pub const STATUS: u64 = 0x11;
    pub const STOP: u64 = 0x12;
    pub const KILL: u64 = 0x13;
    pub const ADMIN: u64 = 0x14;
    pub const ENDED: u64 = 0x15;
    /// A watcher: the instance it waits for has ended (or was destroyed).
    /// The reply (word 0: [`super::WATCH`] or [`super::QUIT`]) comes when
    /// there is a new instance to wait for, or none will come.
    pub const DIED: u64 = 0x20;
}

pub mod status {
    pub const OK: u64 = 0;
    pub const BAD_REQUEST: u64 = 1;
    /// START: a server could not be started (word 1: which).
    pub const START_FAILED: u64 = 2;
    /// START twice, or after STOP.
    pub const BAD_STATE: u64 = 3;
    /// KILL, ADMIN: no such server, or it is not running.
    pub const NOT_RUNNING: u64 = 4;
}

/// The longest delay KILL takes (ms): a minute.
pub const MAX_KILL_DELAY: u64 = 60_000;

/// The payload of the root task's capability.
pub const CONTROL: u64 = 0x100;
/// The payload of a watcher's capability: WATCHER | the entry's index.
pub const WATCHER: u64 = 0x200;
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
