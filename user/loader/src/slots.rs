//! Free capability slots of the caller.  A capability space has only 256
//! slots in this kernel version, so slots are handed back and reused.

use keep_abi::layout::CSPACE_SLOTS;
use keep_abi::slot::FIRST_FREE;

const WORDS: usize = CSPACE_SLOTS as usize / 64;

/// A bitmap of the slots from FIRST_FREE up; the well-known slots below it
/// are never handed out.
#[derive(Clone, Debug)]
pub struct SlotPool {
    used: [u64; WORDS],
}

impl Default for SlotPool {
    fn default() -> Self {
        Self::new()
    }
}

impl SlotPool {
    pub const fn new() -> SlotPool {
        let mut used = [0u64; WORDS];
        let mut s = 0;
        while s < FIRST_FREE as usize {
            used[s / 64] |= 1 << (s % 64);
            s += 1;
        }
        SlotPool { used }
    }

    /// The lowest free slot, now marked used.
    pub fn alloc(&mut self) -> Option<u64> {
        for (w, word) in self.used.iter_mut().enumerate() {
            if *word != u64::MAX {
                let bit = word.trailing_ones() as usize;
                *word |= 1 << bit;
                return Some((w * 64 + bit) as u64);
            }
        }
        None
    }

    /// Marks a slot used that the caller filled some other way.
    pub fn reserve(&mut self, slot: u64) {
        if slot < CSPACE_SLOTS {
            self.used[slot as usize / 64] |= 1 << (slot % 64);
        }
    }

    /// Hands a slot back; well-known slots and out-of-range numbers are
    /// ignored.
    pub fn free(&mut self, slot: u64) {
        if (FIRST_FREE..CSPACE_SLOTS).contains(&slot) {
            self.used[slot as usize / 64] &= !(1 << (slot % 64));
        }
    }

    pub fn available(&self) -> usize {
        self.used.iter().map(|w| w.count_zeros() as usize).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hands_out_free_slots_lowest_first_and_reuses_them() {
        let mut p = SlotPool::new();
        let total = (CSPACE_SLOTS - FIRST_FREE) as usize;
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
        assert_eq!(got.len(), (CSPACE_SLOTS - FIRST_FREE) as usize);
        assert_eq!(*got.last().unwrap(), CSPACE_SLOTS - 1);
        assert_eq!(p.alloc(), None);
        p.free(1);
        p.free(CSPACE_SLOTS);
        p.free(u64::MAX);
        assert_eq!(p.alloc(), None);
    }
}
