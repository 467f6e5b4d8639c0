//! The probe: the state the checkpointer checkpoints until the kernel can
//! capture processes (docs/persistence.md, "What is built").  It stands in
//! for a persistent program's memory: [`PAGES`] pages, each holding a
//! pattern of its key and the step that last wrote it.  Step `s` rewrites
//! the pages [`dirtied`] names, a function of `s` alone, so the state after
//! any step is known without having seen the steps: a restored probe can
//! check that it is exactly the state of the step its checkpoint names,
//! not a mix of two.

use alloc::vec::Vec;

use crate::store::{BLOCK, Page};

pub const PAGES: usize = 64;
const MAGIC: u64 = 0x626f_7270_746b_6370; // "pcktprob"

fn mix(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// The pages step `s` rewrites: 1 to 5 of them (distinct).
pub fn dirtied(s: u64) -> Vec<usize> {
    let k = 1 + (mix(s) % 5) as usize;
    let mut v: Vec<usize> = Vec::new();
    let mut i = 0;
    while v.len() < k {
        let p = (mix(s.wrapping_mul(31).wrapping_add(i)) % PAGES as u64) as usize;
        if !v.contains(&p) {
            v.push(p);
        }
        i += 1;
    }
    v
}

/// Page `key`'s content as step `generation` wrote it (0: never written).
pub fn fill(out: &mut Page, key: usize, generation: u64) {
    for (i, w) in out.chunks_exact_mut(8).enumerate() {
        w.copy_from_slice(&mix((key as u64) << 48 ^ generation << 12 ^ i as u64).to_le_bytes());
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Probe {
    pub step: u64,
    /// The step that last wrote each page.
    pub gens: [u64; PAGES],
}

impl Default for Probe {
    fn default() -> Self {
        Probe { step: 0, gens: [0; PAGES] }
    }
}

impl Probe {
    /// The state after `step` steps from nothing.
    pub fn replay(step: u64) -> Probe {
        let mut p = Probe::default();
        while p.step < step {
            p.advance();
        }
        p
    }

    /// One step of work: returns the pages it rewrote.
    pub fn advance(&mut self) -> Vec<usize> {
        self.step += 1;
        let d = dirtied(self.step);
        for &k in &d {
            self.gens[k] = self.step;
        }
        d
    }

    /// The probe's object record (the checkpoint's meta).
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(16 + 8 * PAGES);
        v.extend_from_slice(&MAGIC.to_le_bytes());
        v.extend_from_slice(&self.step.to_le_bytes());
        for g in self.gens {
            v.extend_from_slice(&g.to_le_bytes());
        }
        v
    }

    /// The probe from its record; None when the record is not a probe's.
    pub fn decode(b: &[u8]) -> Option<Probe> {
        if b.len() != 16 + 8 * PAGES {
            return None;
        }
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        if w(0) != MAGIC {
            return None;
        }
        let mut p = Probe { step: w(1), gens: [0; PAGES] };
        for (k, g) in p.gens.iter_mut().enumerate() {
            *g = w(2 + k);
        }
        Some(p)
    }

    /// Whether `page` is page `key` of this state.
    pub fn page_ok(&self, key: usize, page: &Page) -> bool {
        let mut want = [0u8; BLOCK];
        fill(&mut want, key, self.gens[key]);
        want[..] == page[..]
    }
}
