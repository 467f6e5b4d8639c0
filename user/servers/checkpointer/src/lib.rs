//! The checkpointer (docs/persistence.md): the checkpoint store on a range
//! of the disk ([`store`]), the probe state it checkpoints today
//! ([`probe`]), and the protocol of the checkpointer server.
//!
//! The server is started from the system description with a range of the
//! block server (`uses=blk blk=FIRST+SECTORS:rw`).  At start it opens the
//! area, takes the newest whole checkpoint (falling back to the other root,
//! with the reason, when the newest is not whole) and restores the probe
//! from it.  Its `arg` (the description's `arg=`): bits 0-31 the interval
//! of periodic checkpoints in ms (0: only on request); bit 32 makes it
//! print a line as each one begins and commits (the power-cut test's
//! record).
//!
//! The protocol (CHECKPOINT and STATUS, the administrator's only) is
//! defined in `abi/services/checkpointer.toml`; `tools/idlgen.py`
//! generates `protocol.rs` from it and the table in docs/persistence.md,
//! "The checkpointer's protocol".

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod pool;
pub mod protocol;
pub use protocol::*;
pub mod store;

#[cfg(test)]
mod tests;

/// Where a server with `checkpoint` in the description finds the kernel's
/// checkpoint object.
pub const CHECKPOINT_SLOT: u64 = 0xe;

/// The status of a failed commit.
pub fn status_of(e: &store::Error) -> u64 {
    match e {
        store::Error::Io(_) => IO_ERROR,
        store::Error::Full { .. } => FULL,
        store::Error::TooLarge { .. } => TOO_LARGE,
        store::Error::Changed { .. } => IO_ERROR,
    }
}

/// The administrator's side of the protocol.
#[cfg(not(test))]
#[derive(Clone, Copy)]
pub struct Admin(pub keep_abi::Sender);

/// A reply: its words and its string.
#[cfg(not(test))]
pub struct Reply {
    pub words: [u64; 4],
    pub text: alloc::string::String,
}

#[cfg(not(test))]
impl Admin {
    fn call(self, label: u64) -> Result<Reply, u64> {
        let m = self.0.call(keep_abi::Tag::new(label), [0; 4]);
        if m.err != keep_abi::err::OK {
            return Err(m.err);
        }
        let mut buf = alloc::vec![0u8; 4096];
        let n = if m.tag.has_string() { keep_rt::ipc_buffer().read_string(&mut buf) } else { 0 };
        buf.truncate(n);
        Ok(Reply { words: m.words, text: alloc::string::String::from_utf8_lossy(&buf).into_owned() })
    }
    /// Takes a checkpoint now.
    pub fn checkpoint(self) -> Result<Reply, u64> {
        self.call(CHECKPOINT)
    }
    /// The last checkpoint and the area's state.
    pub fn status(self) -> Result<Reply, u64> {
        self.call(STATUS)
    }
}
