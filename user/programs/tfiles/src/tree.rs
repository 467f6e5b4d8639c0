//! The Merkle tree over a file's block entries: leaves are the entries'
//! hashes (format.rs, `Entry::leaf`), a node is SHA-256 of 0x01 and its two
//! children, a level's odd last node goes up as it is; the root of no
//! leaves is SHA-256 of 0x02.  Kept whole in memory, so a block's change
//! costs the hashes of its path.

use alloc::vec::Vec;
use sha2::{Digest, Sha256};

pub type Hash = [u8; 32];

#[derive(Clone, Debug)]
pub struct Tree {
    /// levels[0] the leaves, the last level one node (when any leaf).
    levels: Vec<Vec<Hash>>,
}

fn node(l: &Hash, r: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(l);
    h.update(r);
    h.finalize().into()
}

impl Tree {
    pub fn new(leaves: Vec<Hash>) -> Tree {
        let mut levels = alloc::vec![leaves];
        while levels.last().unwrap().len() > 1 {
            let up = levels.last().unwrap().chunks(2).map(|c| if c.len() == 2 { node(&c[0], &c[1]) } else { c[0] }).collect();
            levels.push(up);
        }
        Tree { levels }
    }

    pub fn root(&self) -> Hash {
        match self.levels.last().and_then(|l| l.first()) {
            Some(h) => *h,
            None => Sha256::digest([2u8]).into(),
        }
    }

    pub fn len(&self) -> usize {
        self.levels[0].len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Changes leaf `i`; the nodes above it are hashed again.
    pub fn set(&mut self, i: usize, leaf: Hash) {
        self.update(i, &[leaf]);
    }

    /// A leaf more (a file that grows).
    pub fn push(&mut self, leaf: Hash) {
        self.update(self.len(), &[leaf]);
    }

    /// Sets the leaves from `start` on (`start` at most the number of
    /// leaves: those past the end are added); every node above them is
    /// hashed again, each once, so that a write of `k` neighbouring blocks
    /// costs about `k` nodes and a path, not `k` paths.
    pub fn update(&mut self, start: usize, leaves: &[Hash]) {
        assert!(start <= self.len(), "a leaf past the end");
        if leaves.is_empty() {
            return;
        }
        let end = start + leaves.len();
        if end > self.levels[0].len() {
            self.levels[0].resize(end, [0; 32]);
        }
        self.levels[0][start..end].copy_from_slice(leaves);
        // [lo, hi): the changed nodes of level l.
        let (mut lo, mut hi, mut l) = (start, end, 0);
        while self.levels[l].len() > 1 {
            let n = self.levels[l].len();
            if self.levels.len() == l + 1 {
                self.levels.push(Vec::new());
            }
            let (plo, phi) = (lo / 2, hi.div_ceil(2));
            let (below, above) = self.levels.split_at_mut(l + 1);
            let (below, up) = (&below[l], &mut above[0]);
            up.resize(n.div_ceil(2), [0; 32]);
            for (p, h) in up[plo..phi].iter_mut().enumerate().map(|(k, h)| (plo + k, h)) {
                *h = if 2 * p + 1 < n { node(&below[2 * p], &below[2 * p + 1]) } else { below[2 * p] };
            }
            (lo, hi, l) = (plo, phi, l + 1);
        }
    }
}
