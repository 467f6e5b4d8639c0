//! What a session's kernel objects cost, and who pays (docs/pci.md,
//! "The PCI server", "Each session's budget").
//!
//! A session's DMA domain grows page tables as its driver maps pages (at
//! a fresh GiB of device addresses a mapping takes two frames: the
//! directory and the table), and each device capability the server hands
//! the driver is a wrapper (a frame).  They come from an account of the
//! session's own with [`SESSION_FRAMES`] frames, made at `OPEN` and
//! destroyed whole at `RELEASE` (or when the function is opened again by
//! its driver): a driver that spends its budget gets `NO_MEMORY` from
//! `DMA_DOMAIN.MAP`, the other sessions are not touched, and an ended
//! session gives every frame back.  The account comes from the server's
//! bank where it has one (a constructor's instance: slot 12, charged
//! `SESSION_FRAMES + 1`), from the memory pool where it was started by
//! hand with one (slot 5), and only where it has neither from its own
//! account, shared by all sessions.

/// Frames of a session's account: the domain's object and top table, its
/// page tables, and the wrappers of what the driver was handed.
pub const SESSION_FRAMES: u64 = 128;

/// Where a session's account comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Funding {
    /// `ALLOC_ACCOUNT` from the server's bank; `FREE` at the session's end.
    Bank,
    /// `CREATE_ACCOUNT` and `DONATE` from the memory pool; `DESTROY_ALL`.
    Pool,
    /// The server's own account (no bank, no pool): no budget per session.
    Shared,
}

/// The bank first (what a constructor's instance has), then the pool.
pub fn funding(has_bank: bool, has_pool: bool) -> Funding {
    if has_bank {
        Funding::Bank
    } else if has_pool {
        Funding::Pool
    } else {
        Funding::Shared
    }
}

/// What a session's account costs the bank that pays for it: its frames
/// and the account's own.
pub const fn bank_charge() -> u64 {
    SESSION_FRAMES + 1
}

/// Frames a domain of `levels` table levels (3: 39-bit device addresses,
/// 4: 48) takes with mappings spread over `gib` GiB regions and `tables`
/// 2 MiB regions of device addresses (the leaf tables), below `top`
/// regions of 512 GiB: the object and the top table, then one table per
/// region at each level below the top.
pub const fn domain_frames(levels: u32, top: u64, gib: u64, tables: u64) -> u64 {
    2 + if levels >= 4 { top } else { 0 } + gib + tables
}

/// Wrappers a session's driver is handed at most by Keep's drivers: BAR 4
/// and one MSI line (or the INTx line).
pub const WRAPPERS: u64 = 2;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bank_pays_before_the_pool_and_the_pool_before_the_server() {
        assert_eq!(funding(true, true), Funding::Bank);
        assert_eq!(funding(true, false), Funding::Bank);
        assert_eq!(funding(false, true), Funding::Pool);
        assert_eq!(funding(false, false), Funding::Shared);
        assert_eq!(bank_charge(), SESSION_FRAMES + 1);
    }

    #[test]
    fn the_block_server_with_every_buffer_attached_fits() {
        // Its DMA pages at 0x10_0000_0000 (one GiB region, one leaf table)
        // and 64 buffer windows of 2 MiB from 0x18_0000_0000 (one GiB
        // region, 64 leaf tables); both below one 512 GiB region.
        for levels in [3, 4] {
            let need = domain_frames(levels, 1, 2, 1 + 64) + WRAPPERS;
            assert!(need <= SESSION_FRAMES, "{levels} levels: {need}");
        }
    }

    #[test]
    fn the_network_server_with_sixteen_rings_fits() {
        // DMA pages at 0x20_0000_0000, rings of 1 MiB from 0x30_0000_0000.
        let need = domain_frames(4, 1, 2, 1 + 8) + WRAPPERS;
        assert!(need <= SESSION_FRAMES);
    }

    #[test]
    fn a_page_at_every_gib_spends_the_budget_in_a_bounded_number_of_maps() {
        // Each such MAP takes a directory and a leaf table: the budget is
        // gone after at most (SESSION_FRAMES - 2) / 2 of them, and with it
        // only this session's account.
        let mut maps = 0;
        while domain_frames(3, 1, maps + 1, maps + 1) <= SESSION_FRAMES {
            maps += 1;
        }
        assert_eq!(maps, (SESSION_FRAMES - 2) / 2);
        assert!(maps < 64);
    }
}
