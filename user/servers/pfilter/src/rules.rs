//! What the packet filter accepts of a request's arguments before it
//! touches its staging buffer or the SFI runtime: each rule answers the
//! status the request gets when it is broken.

use crate::{BAD_REQUEST, MAX_MODULE, TOO_BIG};

/// LOAD_PART: `len` bytes at `offset` of the module being received end
/// inside MAX_MODULE (overflow-safe); the end of the piece.
pub fn load_part(offset: u64, len: usize) -> Result<usize, u64> {
    let offset = usize::try_from(offset).map_err(|_| TOO_BIG)?;
    match offset.checked_add(len) {
        Some(end) if offset <= MAX_MODULE && end <= MAX_MODULE => Ok(end),
        _ => Err(TOO_BIG),
    }
}

/// LOAD: a module of `size` bytes, no more than were received (`staged`).
pub fn load(size: u64, staged: usize) -> Result<usize, u64> {
    match usize::try_from(size) {
        Ok(n) if n <= staged => Ok(n),
        _ => Err(BAD_REQUEST),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_ends_inside_the_largest_module() {
        assert_eq!(load_part(0, 4096), Ok(4096));
        assert_eq!(load_part(MAX_MODULE as u64 - 1, 1), Ok(MAX_MODULE));
        assert_eq!(load_part(MAX_MODULE as u64, 0), Ok(MAX_MODULE));
        assert_eq!(load_part(MAX_MODULE as u64 - 1, 2), Err(TOO_BIG));
        assert_eq!(load_part(MAX_MODULE as u64 + 1, 0), Err(TOO_BIG));
        assert_eq!(load_part(u64::MAX, 1), Err(TOO_BIG));
        assert_eq!(load_part(u64::MAX, 0), Err(TOO_BIG));
    }

    #[test]
    fn a_module_is_no_longer_than_what_came() {
        assert_eq!(load(0, 0), Ok(0));
        assert_eq!(load(100, 100), Ok(100));
        assert_eq!(load(101, 100), Err(BAD_REQUEST));
        assert_eq!(load(u64::MAX, MAX_MODULE), Err(BAD_REQUEST));
    }
}
