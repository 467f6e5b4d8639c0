//! Free capability slots of the caller.  A program starts with one cappage
//! at capability address 0 (slots 0-255); a growable pool maps further
//! cappages at `GROW_BASE`, `GROW_BASE + 256`, ... when it runs out, paying
//! for each with a frame (of the memory pool, or from wherever the owner's
//! function gets one: its space bank, keep-frames) and one slot (which
//! keeps the cappage's capability).  Slots are handed back and reused.

use keep_abi::layout::CAPPAGE_SLOTS;
use keep_abi::slot::FIRST_FREE;
use keep_abi::{Aspace, Memory, ty};

/// Capability address of the first cappage a pool adds: far from the
/// addresses tests use for sparse mappings.
pub const GROW_BASE: u64 = 0x0100_0000;
/// Most cappages one pool manages (including the one at address 0).
pub const MAX_CAPPAGES: usize = 16;

const WORDS: usize = CAPPAGE_SLOTS as usize / 64;

/// A bitmap per cappage; the well-known slots below FIRST_FREE are never
/// handed out.
#[derive(Clone, Debug)]
pub struct SlotPool {
    used: [[u64; WORDS]; MAX_CAPPAGES],
    /// Cappages in use: index 0 is address 0, index i > 0 is
    /// GROW_BASE + (i - 1) * 256.
    cappages: usize,
    /// Where new cappages come from, and the own address space to map
    /// them into (None: fixed).
    grow: Option<(Grow, Aspace)>,
}

/// Where a growable pool's cappages come from.
#[derive(Clone, Copy, Debug)]
pub enum Grow {
    /// RETYPE from a memory pool.
    Pool(Memory),
    /// A function that puts a fresh cappage into the empty slot it is given
    /// (a space bank's, say: keep_frames::own_cappage).
    With(fn(u64) -> Result<(), keep_abi::Error>),
}

impl Default for SlotPool {
    fn default() -> Self {
        Self::new()
    }
}

impl SlotPool {
    /// A fixed pool over slots FIRST_FREE..256.
    pub const fn new() -> SlotPool {
        let mut used = [[0u64; WORDS]; MAX_CAPPAGES];
        let mut s = 0;
        while s < FIRST_FREE as usize {
            used[0][s / 64] |= 1 << (s % 64);
            s += 1;
        }
        SlotPool {
            used,
            cappages: 1,
            grow: None,
        }
    }

    /// A pool that maps another cappage (made from `memory`, mapped into
    /// `own`, the caller's address space) whenever it is about to run out.
    pub const fn growable(memory: Memory, own: Aspace) -> SlotPool {
        let mut p = Self::new();
        p.grow = Some((Grow::Pool(memory), own));
        p
    }

    /// A pool whose new cappages come from `make` (which fills the empty
    /// slot it is given with a cappage).
    pub const fn growable_from(make: fn(u64) -> Result<(), keep_abi::Error>, own: Aspace) -> SlotPool {
        let mut p = Self::new();
        p.grow = Some((Grow::With(make), own));
        p
    }

    /// The capability address of cappage `i` of the pool.
    pub const fn cappage_addr(i: usize) -> u64 {
        if i == 0 {
            0
        } else {
            GROW_BASE + (i as u64 - 1) * CAPPAGE_SLOTS
        }
    }

    /// (cappage index, slot within it) of a capability address the pool
    /// covers.
    fn locate(&self, slot: u64) -> Option<(usize, usize)> {
        let i = if slot < CAPPAGE_SLOTS {
            0
        } else if slot >= GROW_BASE {
            ((slot - GROW_BASE) / CAPPAGE_SLOTS) as usize + 1
        } else {
            return None;
        };
        (i < self.cappages).then(|| (i, (slot % CAPPAGE_SLOTS) as usize))
    }

    fn take_lowest(&mut self) -> Option<u64> {
        for i in 0..self.cappages {
            for (w, word) in self.used[i].iter_mut().enumerate() {
                if *word != u64::MAX {
                    let bit = word.trailing_ones() as usize;
                    *word |= 1 << bit;
                    return Some(Self::cappage_addr(i) + (w * 64 + bit) as u64);
                }
            }
        }
        None
    }

    /// The lowest free slot, now marked used.  A growable pool uses its last
    /// free slot for a new cappage's capability and carries on there.
    pub fn alloc(&mut self) -> Option<u64> {
        let s = self.take_lowest()?;
        if self.available() == 0 && self.cappages < MAX_CAPPAGES {
            if let Some((grow, own)) = self.grow {
                let addr = Self::cappage_addr(self.cappages);
                let made = match grow {
                    Grow::Pool(memory) => memory.retype(ty::CAPPAGE, s),
                    Grow::With(make) => make(s),
                };
                if made.is_ok() && own.map_cappage(s, addr).is_ok() {
                    self.cappages += 1;
                    return self.take_lowest();
                }
                if made.is_ok() {
                    let _ = own.delete_cap(s);
                }
            }
        }
        Some(s)
    }

    /// Marks a slot used that the caller filled some other way.
    pub fn reserve(&mut self, slot: u64) {
        if let Some((i, s)) = self.locate(slot) {
            self.used[i][s / 64] |= 1 << (s % 64);
        }
    }

    /// Hands a slot back; well-known slots and addresses outside the pool
    /// are ignored.
    pub fn free(&mut self, slot: u64) {
        if slot < FIRST_FREE {
            return;
        }
        if let Some((i, s)) = self.locate(slot) {
            self.used[i][s / 64] &= !(1 << (s % 64));
        }
    }

    pub fn available(&self) -> usize {
        self.used[..self.cappages]
            .iter()
            .flatten()
            .map(|w| w.count_zeros() as usize)
            .sum()
    }

    /// Cappages the pool covers (1 until it grows).
    pub fn cappages(&self) -> usize {
        self.cappages
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_free_slots_lowest_first_and_reuses_them() {
        let mut p = SlotPool::new();
        let total = (CAPPAGE_SLOTS - FIRST_FREE) as usize;
        assert_eq!(p.available(), total);
        assert_eq!(p.alloc(), Some(FIRST_FREE));
        assert_eq!(p.alloc(), Some(FIRST_FREE + 1));
        p.free(FIRST_FREE);
        assert_eq!(p.alloc(), Some(FIRST_FREE));
        p.reserve(FIRST_FREE + 2);
        assert_eq!(p.alloc(), Some(FIRST_FREE + 3));
    }

    #[test]
    fn runs_out_and_ignores_bad_frees() {
        let mut p = SlotPool::new();
        let got: Vec<_> = std::iter::from_fn(|| p.alloc()).collect();
        assert_eq!(got.len(), (CAPPAGE_SLOTS - FIRST_FREE) as usize);
        assert_eq!(*got.last().unwrap(), CAPPAGE_SLOTS - 1);
        assert_eq!(p.alloc(), None);
        p.free(1);
        p.free(CAPPAGE_SLOTS);
        p.free(GROW_BASE);
        p.free(u64::MAX);
        assert_eq!(p.alloc(), None);
        assert_eq!(p.cappages(), 1);
    }

    #[test]
    fn cappage_addresses() {
        assert_eq!(SlotPool::cappage_addr(0), 0);
        assert_eq!(SlotPool::cappage_addr(1), GROW_BASE);
        assert_eq!(SlotPool::cappage_addr(2), GROW_BASE + 256);
    }
}
