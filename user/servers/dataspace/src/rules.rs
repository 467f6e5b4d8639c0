//! What the manager accepts of a request's arguments, before it touches
//! a dataspace (docs/dataspaces.md): each rule answers the status the
//! request gets when it is broken, and the manager checks them in this
//! order — malformed (BAD_REQUEST), then more rights than the handle
//! holds (NO_RIGHTS), then pages outside the dataspace (OUT_OF_RANGE).

use crate::{BAD_REQUEST, MAX_PAGES, MAX_PIN, NO_RIGHTS, OUT_OF_RANGE, PAGE, READ, WRITE};

/// CREATE: 1 to MAX_PAGES pages.
pub fn create(pages: u64) -> Result<(), u64> {
    if pages == 0 || pages > MAX_PAGES { Err(BAD_REQUEST) } else { Ok(()) }
}

/// Pages `first..first + count` of a dataspace of `pages`, `count` 1 to
/// `max` (overflow-safe).
pub fn range(pages: u64, first: u64, count: u64, max: u64) -> Result<(), u64> {
    if count == 0 || count > max {
        return Err(BAD_REQUEST);
    }
    if first >= pages || count > pages - first {
        return Err(OUT_OF_RANGE);
    }
    Ok(())
}

/// MAP through a handle with `held` rights of a dataspace of `pages`:
/// an address space sent (`cap`), rights READ or READ | WRITE, a
/// page-aligned address, rights the handle holds, pages of the dataspace.
pub fn map(cap: bool, vaddr: u64, first: u64, count: u64, rights: u64, held: u64, pages: u64) -> Result<(), u64> {
    if !cap || rights != READ && rights != READ | WRITE || vaddr % PAGE != 0 {
        return Err(BAD_REQUEST);
    }
    if rights & !held != 0 {
        return Err(NO_RIGHTS);
    }
    range(pages, first, count, MAX_PAGES)
}

/// PIN: a DMA domain sent, rights READ and/or WRITE (not none), a
/// page-aligned device address, rights the handle holds, 1 to MAX_PIN
/// pages of the dataspace.
pub fn pin(cap: bool, first: u64, count: u64, dev_addr: u64, rights: u64, held: u64, pages: u64) -> Result<(), u64> {
    if !cap || rights == 0 || rights & !(READ | WRITE) != 0 || dev_addr % PAGE != 0 {
        return Err(BAD_REQUEST);
    }
    if rights & !held != 0 {
        return Err(NO_RIGHTS);
    }
    range(pages, first, count, MAX_PIN)
}

/// SHARE: rights READ and/or WRITE (not none), no more than the handle's.
pub fn share(rights: u64, held: u64) -> Result<(), u64> {
    if rights == 0 || rights & !(READ | WRITE) != 0 {
        return Err(BAD_REQUEST);
    }
    if rights & !held != 0 { Err(NO_RIGHTS) } else { Ok(()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: u64 = READ | WRITE;

    #[test]
    fn create_takes_one_to_max_pages() {
        assert_eq!(create(1), Ok(()));
        assert_eq!(create(MAX_PAGES), Ok(()));
        assert_eq!(create(0), Err(BAD_REQUEST));
        assert_eq!(create(MAX_PAGES + 1), Err(BAD_REQUEST));
        assert_eq!(create(u64::MAX), Err(BAD_REQUEST));
    }

    #[test]
    fn a_range_is_inside_the_dataspace_without_overflow() {
        assert_eq!(range(8, 0, 8, MAX_PAGES), Ok(()));
        assert_eq!(range(8, 7, 1, MAX_PAGES), Ok(()));
        assert_eq!(range(8, 0, 0, MAX_PAGES), Err(BAD_REQUEST));
        assert_eq!(range(8, 0, MAX_PIN + 1, MAX_PIN), Err(BAD_REQUEST));
        assert_eq!(range(8, 8, 1, MAX_PAGES), Err(OUT_OF_RANGE));
        assert_eq!(range(8, 7, 2, MAX_PAGES), Err(OUT_OF_RANGE));
        assert_eq!(range(8, u64::MAX, 2, MAX_PAGES), Err(OUT_OF_RANGE));
        assert_eq!(range(8, 1, u64::MAX, u64::MAX), Err(OUT_OF_RANGE));
    }

    #[test]
    fn map_wants_a_space_aligned_rights_it_holds_and_its_pages() {
        assert_eq!(map(true, 0x1000, 0, 2, READ, READ, 2), Ok(()));
        assert_eq!(map(true, 0x1000, 0, 2, RW, RW, 2), Ok(()));
        assert_eq!(map(false, 0x1000, 0, 2, READ, RW, 2), Err(BAD_REQUEST));
        assert_eq!(map(true, 0x1001, 0, 2, READ, RW, 2), Err(BAD_REQUEST));
        for r in [0, WRITE, RW | 4, u64::MAX] {
            assert_eq!(map(true, 0x1000, 0, 2, r, RW, 2), Err(BAD_REQUEST), "rights {r:#x}");
        }
        assert_eq!(map(true, 0x1000, 0, 2, RW, READ, 2), Err(NO_RIGHTS));
        assert_eq!(map(true, 0x1000, 1, 2, READ, READ, 2), Err(OUT_OF_RANGE));
        // Malformed before rights, rights before range.
        assert_eq!(map(true, 0x1001, 5, 9, RW, READ, 2), Err(BAD_REQUEST));
        assert_eq!(map(true, 0x1000, 5, 9, RW, READ, 2), Err(NO_RIGHTS));
    }

    #[test]
    fn pin_wants_a_domain_device_rights_it_holds_and_at_most_max_pin() {
        assert_eq!(pin(true, 0, 1, 0x2000, WRITE, RW, 1), Ok(()));
        assert_eq!(pin(true, 0, 1, 0x2000, READ, READ, 1), Ok(()));
        assert_eq!(pin(false, 0, 1, 0x2000, READ, RW, 1), Err(BAD_REQUEST));
        assert_eq!(pin(true, 0, 1, 0x2000, 0, RW, 1), Err(BAD_REQUEST));
        assert_eq!(pin(true, 0, 1, 0x2000, RW | 8, RW, 1), Err(BAD_REQUEST));
        assert_eq!(pin(true, 0, 1, 0x2800, READ, RW, 1), Err(BAD_REQUEST));
        assert_eq!(pin(true, 0, 1, 0x2000, WRITE, READ, 1), Err(NO_RIGHTS));
        assert_eq!(pin(true, 0, MAX_PIN + 1, 0, READ, RW, MAX_PAGES), Err(BAD_REQUEST));
        assert_eq!(pin(true, 0, MAX_PIN, 0, READ, RW, MAX_PAGES), Ok(()));
        assert_eq!(pin(true, 1, 1, 0, READ, RW, 1), Err(OUT_OF_RANGE));
    }

    #[test]
    fn a_share_has_some_of_the_handles_rights() {
        assert_eq!(share(READ, RW), Ok(()));
        assert_eq!(share(RW, RW), Ok(()));
        assert_eq!(share(0, RW), Err(BAD_REQUEST));
        assert_eq!(share(RW | 4, RW), Err(BAD_REQUEST));
        assert_eq!(share(WRITE, READ), Err(NO_RIGHTS));
    }
}
