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
    pub fn set(&mut self, mut i: usize, leaf: Hash) {
        self.levels[0][i] = leaf;
        for l in 1..self.levels.len() {
            let below = &self.levels[l - 1];
            let p = i / 2;
            let h = if 2 * p + 1 < below.len() { node(&below[2 * p], &below[2 * p + 1]) } else { below[2 * p] };
            self.levels[l][p] = h;
            i = p;
        }
    }

    /// A leaf more (a file that grows): the tree made again.
    pub fn push(&mut self, leaf: Hash) {
        let mut leaves = core::mem::take(&mut self.levels[0]);
        leaves.push(leaf);
        *self = Tree::new(leaves);
    }
}
