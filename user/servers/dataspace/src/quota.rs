//! What the manager keeps for each dataspace, and the rule that bounds it
//! (docs/dataspaces.md, "Who pays").
//!
//! Every record of the manager's belongs to one dataspace: its handles
//! (the owner's and every share below it), the mappings and the pins made
//! through them.  A dataspace is paid by the bank its `CREATE` carried, and
//! each may hold at most [`HANDLES`] handles, [`MAPPINGS`] mappings and
//! [`PINS`] pins at once; `SHARE`, `MAP` and `PIN` past them are `FULL`
//! (word 1 [`REACHED`]) and change nothing.  The tables have no limit of
//! their own beyond that: so a client that shares and maps without end
//! fills only its own dataspace's part, and more parts cost it more
//! dataspaces, which its bank pays for.  `REVOKE`, `UNMAP`, `UNPIN` give
//! entries back; `DESTROY`, or the paying bank destroyed, gives back all of
//! a dataspace's.

use crate::FULL;

/// Handles of one dataspace at once: the owner's and 15 shares.
pub const HANDLES: usize = 16;
/// Mappings of one dataspace at once (into any address spaces).
pub const MAPPINGS: usize = 8;
/// Pins of one dataspace at once (into any DMA domains).
pub const PINS: usize = 8;

/// `FULL`'s word 1 when a dataspace's own quota is reached (0: the
/// manager's capability slots, which are its own, are exhausted).
pub const REACHED: u64 = 1;

/// What a dataspace holds now.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub handles: usize,
    pub mappings: usize,
    pub pins: usize,
}

/// The kind of record a request would add.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `SHARE` (the owner's handle comes with `CREATE`).
    Handle,
    /// `MAP`.
    Mapping,
    /// `PIN`.
    Pin,
}

/// May a dataspace holding `held` get one more record of `kind`?
/// Err: (status, word 1) = (`FULL`, [`REACHED`]).
pub fn may_add(held: Held, kind: Kind) -> Result<(), (u64, u64)> {
    let (n, max) = match kind {
        Kind::Handle => (held.handles, HANDLES),
        Kind::Mapping => (held.mappings, MAPPINGS),
        Kind::Pin => (held.pins, PINS),
    };
    if n < max { Ok(()) } else { Err((FULL, REACHED)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_each_quota_a_record_is_added() {
        let h = Held { handles: HANDLES - 1, mappings: MAPPINGS - 1, pins: PINS - 1 };
        assert_eq!(may_add(h, Kind::Handle), Ok(()));
        assert_eq!(may_add(h, Kind::Mapping), Ok(()));
        assert_eq!(may_add(h, Kind::Pin), Ok(()));
        assert_eq!(may_add(Held::default(), Kind::Pin), Ok(()));
    }

    #[test]
    fn at_a_quota_only_that_kind_is_refused() {
        let h = Held { handles: HANDLES, mappings: 0, pins: 0 };
        assert_eq!(may_add(h, Kind::Handle), Err((FULL, REACHED)));
        assert_eq!(may_add(h, Kind::Mapping), Ok(()));
        assert_eq!(may_add(h, Kind::Pin), Ok(()));
        let h = Held { handles: 1, mappings: MAPPINGS, pins: PINS };
        assert_eq!(may_add(h, Kind::Mapping), Err((FULL, REACHED)));
        assert_eq!(may_add(h, Kind::Pin), Err((FULL, REACHED)));
        assert_eq!(may_add(h, Kind::Handle), Ok(()));
    }

    #[test]
    fn past_a_quota_is_refused() {
        let h = Held { handles: usize::MAX, mappings: MAPPINGS + 5, pins: PINS + 1 };
        for k in [Kind::Handle, Kind::Mapping, Kind::Pin] {
            assert_eq!(may_add(h, k), Err((FULL, REACHED)));
        }
    }

    #[test]
    fn what_the_servers_need_fits() {
        // A dataspace attached to the block server PER_CLIENT times (a map
        // and a pin each) and mapped by its owner, or a ring (the network
        // server's map and pin, the stack's own map), stays inside.
        let blk = Held { handles: 1 + 4, mappings: 1 + 4, pins: 4 };
        assert_eq!(may_add(blk, Kind::Mapping), Ok(()));
        assert_eq!(may_add(blk, Kind::Pin), Ok(()));
        assert_eq!(may_add(blk, Kind::Handle), Ok(()));
    }
}
