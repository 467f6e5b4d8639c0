//! What the block server holds for each client, and the rule that bounds
//! it (docs/block.md, "The block server", "Buffers per client").
//!
//! The server's buffer table (`TABLE` entries: a 2 MiB window each in its
//! address space and its DMA domain) is shared by all clients.  No client
//! may hold more than `PER_CLIENT` of its entries at once, so that one
//! client attaching share after share cannot keep the others' `ATTACH`
//! refused; beyond it, and when the table is full, `ATTACH` is
//! `NO_RESOURCES`.  A client gives its entries back with `DETACH`, by
//! revoking its shares (the server reaps unpinned buffers), and at its end
//! (init's `GONE`).

use crate::NO_RESOURCES;

/// Entries of the server's buffer table (its buffer windows).
pub const TABLE: usize = 64;

/// Buffers one client may have attached at once.  Every client of Keep's
/// attaches one (disktest, the workhorse's `/data`) and the tests at most
/// two; four leaves room, and sixteen clients at their limit fill the table.
pub const PER_CLIENT: usize = 4;

/// May a client that holds `held` buffers attach one more, with `free`
/// entries of the table free?  Err: the status (`NO_RESOURCES`).
pub fn may_attach(held: usize, free: usize) -> Result<(), u64> {
    if held >= PER_CLIENT || free == 0 { Err(NO_RESOURCES) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_client_below_its_limit_attaches() {
        for held in 0..PER_CLIENT {
            assert_eq!(may_attach(held, 1), Ok(()));
            assert_eq!(may_attach(held, TABLE - held), Ok(()));
        }
    }

    #[test]
    fn a_client_at_its_limit_is_refused_whatever_is_free() {
        assert_eq!(may_attach(PER_CLIENT, TABLE - PER_CLIENT), Err(NO_RESOURCES));
        assert_eq!(may_attach(PER_CLIENT + 1, TABLE), Err(NO_RESOURCES));
        assert_eq!(may_attach(usize::MAX, TABLE), Err(NO_RESOURCES));
    }

    #[test]
    fn a_full_table_refuses_everyone() {
        assert_eq!(may_attach(0, 0), Err(NO_RESOURCES));
    }

    #[test]
    fn one_client_cannot_fill_the_table() {
        // What one client can hold leaves the rest for others.
        assert!(PER_CLIENT < TABLE);
        let mut held = 0;
        while may_attach(held, TABLE - held).is_ok() {
            held += 1;
        }
        assert_eq!(held, PER_CLIENT);
        assert_eq!(may_attach(0, TABLE - held), Ok(()));
    }
}
