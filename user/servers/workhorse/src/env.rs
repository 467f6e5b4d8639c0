//! The server's own resources: capability slots and the addresses in its
//! own address space where it maps the frames it gives Linux processes.
//! The server is one process and single threaded, so these live in one
//! global, reached through [`env`].

use alloc::vec::Vec;

use keep_abi::{Error, SELF_ASPACE, layout::CAPPAGE_SLOTS};

/// Capability address of the server's first extra cappage; slots are
/// handed out from there (the cappage at 0 keeps the well-known slots and
/// the ones [`main`](crate) names).
const SLOT_BASE: u64 = 0x0100_0000;
/// Where frames are mapped in the server's own space (one page each).
const LOCAL_BASE: u64 = 0x0000_2000_0000_0000;

/// Frames the server hands its Linux processes and files at most (256 MiB
/// of the 512 MiB machine), so that a program that eats memory meets
/// ENOMEM before the rest of the system does.
pub const MAX_FRAMES: u64 = 65536;
/// Frames of its bank the server keeps for itself: its heap (process and
/// file records, the /data store's tree, the sockets' buffers), the
/// cappages of its slots and of its runs.  Linux processes and files get
/// at most what the bank has at start less this, so that a program eating
/// memory meets ENOMEM while the server can still grow its heap (without
/// it the bank ran dry first and the server died of a failed allocation).
pub const RESERVE: u64 = 8192;

pub struct Env {
    /// Frames in use for Linux processes and files.
    pub frames: u64,
    /// Their limit: MAX_FRAMES, or less on a smaller bank ([`Env::set_limit`]).
    pub max_frames: u64,
    free_slots: Vec<u64>,
    next_slot: u64,
    free_locals: Vec<u64>,
    next_local: u64,
}

static mut ENV: Env = Env {
    frames: 0,
    max_frames: MAX_FRAMES,
    free_slots: Vec::new(),
    next_slot: SLOT_BASE,
    free_locals: Vec::new(),
    next_local: LOCAL_BASE,
};

/// The server's one environment.
#[allow(static_mut_refs)]
pub fn env() -> &'static mut Env {
    // SAFETY: the server is single threaded and no caller keeps the
    // reference across a call that takes it again.
    unsafe { &mut ENV }
}

impl Env {
    /// Sets the frame limit from what the bank has left (`available`,
    /// frames::available): at most MAX_FRAMES, and RESERVE below what the
    /// server could have.  Called once the root file system is in the heap
    /// (48 MiB of it), before the first Linux process; until then the
    /// limit is MAX_FRAMES.
    pub fn set_limit(&mut self, available: u64) {
        self.max_frames = MAX_FRAMES.min((self.frames + available).saturating_sub(RESERVE));
    }

    /// Frames Linux processes and files may still take.
    pub fn frames_left(&self) -> u64 {
        self.max_frames.saturating_sub(self.frames)
    }

    /// A free capability slot; maps a further cappage when needed.
    pub fn slot(&mut self) -> Result<u64, Error> {
        if let Some(s) = self.free_slots.pop() {
            return Ok(s);
        }
        if self.next_slot.is_multiple_of(CAPPAGE_SLOTS) {
            // The mapping keeps the cappage: its capability is needed only
            // until MAP_CAPPAGE.
            let base = self.next_slot;
            crate::frames::cappage(crate::SCRATCH_SLOT)?;
            let r = SELF_ASPACE.map_cappage(crate::SCRATCH_SLOT, base);
            let _ = SELF_ASPACE.delete_cap(crate::SCRATCH_SLOT);
            r?;
        }
        let s = self.next_slot;
        self.next_slot += 1;
        Ok(s)
    }

    pub fn free_slot(&mut self, s: u64) {
        let _ = SELF_ASPACE.delete_cap(s);
        self.free_slots.push(s);
    }

    /// A free page-sized address in the server's own space.
    pub fn local(&mut self) -> u64 {
        self.free_locals.pop().unwrap_or_else(|| {
            let a = self.next_local;
            self.next_local += 4096;
            a
        })
    }

    pub fn free_local(&mut self, a: u64) {
        self.free_locals.push(a);
    }
}
