//! What the constructor accepts of a request's arguments, and the part of
//! the confinement rule that a capability's type and rights decide alone
//! (docs/space-banks.md, "Constructors").  Each argument rule answers the
//! status the request gets when it is broken.

use crate::{MAX_BLOB, MAX_CAPS, MAX_IMAGE, status, valid_instance_slot};
use keep_abi::{rights, ty};

/// NEW: an image of 1 to MAX_IMAGE bytes.
pub fn new_length(length: u64) -> Result<(), u64> {
    if length == 0 || length > MAX_IMAGE { Err(status::BAD_REQUEST) } else { Ok(()) }
}

/// IMAGE: a piece of `n` bytes (a string came) at `offset` inside an
/// image of `length` bytes (overflow-safe).
pub fn image_piece(offset: u64, n: u64, length: u64) -> Result<(), u64> {
    match offset.checked_add(n) {
        Some(end) if n > 0 && end <= length => Ok(()),
        _ => Err(status::BAD_REQUEST),
    }
}

/// ADD_CAP: one capability for an instance slot initial capabilities may
/// fill, not filled yet (`taken`), and room for it (`held` of MAX_CAPS).
pub fn add_cap(caps_in: u64, slot: u64, taken: bool, held: usize) -> Result<(), u64> {
    if caps_in != 1 || !valid_instance_slot(slot) || taken || held >= MAX_CAPS {
        Err(status::BAD_REQUEST)
    } else {
        Ok(())
    }
}

/// BLOB: one capability (an address space, checked by the server) and 1
/// to MAX_BLOB bytes, once (`had`: the constructor has a blob already).
pub fn blob(caps_in: u64, length: u64, had: bool) -> Result<(), u64> {
    if caps_in != 1 || length == 0 || length > MAX_BLOB || had { Err(status::BAD_REQUEST) } else { Ok(()) }
}

/// INSTANTIATE: one capability (the bank), a limit, an account of at most
/// `max_fund` frames.
pub fn instantiate(caps_in: u64, limit: u64, frames: u64, max_fund: u64) -> Result<(), u64> {
    if caps_in != 1 || limit == 0 || frames > max_fund { Err(status::BAD_REQUEST) } else { Ok(()) }
}

/// Is a live capability of type `t` with `r` rights safe for an instance
/// to hold by its type and rights alone?  Holders of an address space or
/// a cappage could fetch or map the capabilities inside: only a weak one
/// (whose fetches are weakened) is.  Device memory, I/O ports, interrupts
/// and the console are side effects others see, a return or a wrapper may
/// stand for anything: never.  Anything else is safe if it cannot write
/// (no WRITE) or is weak.  A capability this says no to may still be safe
/// as a confined constructor of the same server or as a hole the
/// requester authorised (the server checks those).
pub fn safe_by_type(t: u64, r: u64) -> bool {
    let weak = r & rights::WEAK != 0;
    let no_write = r & rights::WRITE == 0;
    match t {
        ty::ASPACE | ty::CAPPAGE => weak,
        ty::DEVMEM | ty::IOPORT | ty::INTERRUPT | ty::CONSOLE | ty::RETURN | ty::WRAPPER => false,
        _ => no_write || weak,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BAD: Result<(), u64> = Err(status::BAD_REQUEST);

    #[test]
    fn an_image_is_one_byte_to_max_and_its_pieces_inside_it() {
        assert_eq!(new_length(1), Ok(()));
        assert_eq!(new_length(MAX_IMAGE), Ok(()));
        assert_eq!(new_length(0), BAD);
        assert_eq!(new_length(MAX_IMAGE + 1), BAD);
        assert_eq!(image_piece(0, 4096, 4096), Ok(()));
        assert_eq!(image_piece(4095, 1, 4096), Ok(()));
        assert_eq!(image_piece(0, 0, 4096), BAD);
        assert_eq!(image_piece(4095, 2, 4096), BAD);
        assert_eq!(image_piece(u64::MAX, 2, 4096), BAD);
    }

    #[test]
    fn an_initial_capability_fills_one_free_allowed_slot() {
        assert_eq!(add_cap(1, 8, false, 0), Ok(()));
        assert_eq!(add_cap(1, 1, false, MAX_CAPS - 1), Ok(()));
        assert_eq!(add_cap(0, 8, false, 0), BAD);
        assert_eq!(add_cap(2, 8, false, 0), BAD);
        for s in [0, 3, 4, 6, crate::INSTANCE_BANK, 16, u64::MAX] {
            assert_eq!(add_cap(1, s, false, 0), BAD, "slot {s}");
        }
        assert_eq!(add_cap(1, 8, true, 1), BAD);
        assert_eq!(add_cap(1, 8, false, MAX_CAPS), BAD);
    }

    #[test]
    fn a_blob_comes_once_with_its_length_and_an_instance_with_a_bank() {
        assert_eq!(blob(1, 1, false), Ok(()));
        assert_eq!(blob(1, MAX_BLOB, false), Ok(()));
        assert_eq!(blob(0, 1, false), BAD);
        assert_eq!(blob(1, 0, false), BAD);
        assert_eq!(blob(1, MAX_BLOB + 1, false), BAD);
        assert_eq!(blob(1, 1, true), BAD);
        assert_eq!(instantiate(1, 64, 16, 16), Ok(()));
        assert_eq!(instantiate(1, 64, 0, 16), Ok(()));
        assert_eq!(instantiate(0, 64, 16, 16), BAD);
        assert_eq!(instantiate(2, 64, 16, 16), BAD);
        assert_eq!(instantiate(1, 0, 16, 16), BAD);
        assert_eq!(instantiate(1, 64, 17, 16), BAD);
    }

    #[test]
    fn confinement_by_type_and_rights() {
        let (w, weak) = (rights::WRITE | rights::READ, rights::WEAK | rights::READ);
        for t in [ty::ASPACE, ty::CAPPAGE] {
            assert!(!safe_by_type(t, w) && !safe_by_type(t, rights::READ) && safe_by_type(t, weak | rights::WRITE));
        }
        for t in [ty::DEVMEM, ty::IOPORT, ty::INTERRUPT, ty::CONSOLE, ty::RETURN, ty::WRAPPER] {
            assert!(!safe_by_type(t, weak) && !safe_by_type(t, rights::READ), "type {t:#x}");
        }
        assert!(safe_by_type(ty::PAGE, rights::READ));
        assert!(!safe_by_type(ty::PAGE, w));
        assert!(safe_by_type(ty::PAGE, w | rights::WEAK));
        assert!(!safe_by_type(ty::SENDER, rights::WRITE | rights::CALL));
    }
}
