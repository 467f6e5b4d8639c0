//! What MAP and PIN may be pointed at.  The manager invokes the capability
//! a client sends with MAP as an address space and the one sent with PIN as
//! a DMA domain; a capability of any other type is refused before the
//! manager invokes it, with the error the kernel gives a method of the wrong
//! type (KERNEL, WRONG_TYPE).  A SENDER above all: invoking one is a
//! call, to the manager itself (it would wait for its own answer and serve
//! no one again) or to another server (whose reply it would take for the
//! kernel's).

use keep_abi::{Error, ty};

/// What a request maps into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// MAP: an ASPACE.
    Aspace,
    /// PIN: a DMA_DOMAIN.
    Domain,
}

/// `sent`: the type of the capability the request carried (IDENTIFY_CAP),
/// None if the slot is empty.  Err(WRONG_TYPE) unless it is `target`'s.
pub fn check(target: Target, sent: Option<u64>) -> Result<(), Error> {
    let want = match target {
        Target::Aspace => ty::ASPACE,
        Target::Domain => ty::DMA_DOMAIN,
    };
    match sent {
        Some(t) if t == want => Ok(()),
        _ => Err(Error::WRONG_TYPE),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_targets_type_is_invoked() {
        assert_eq!(check(Target::Aspace, Some(ty::ASPACE)), Ok(()));
        assert_eq!(check(Target::Domain, Some(ty::DMA_DOMAIN)), Ok(()));
        for t in 0..=0x20 {
            if t != ty::ASPACE {
                assert_eq!(check(Target::Aspace, Some(t)), Err(Error::WRONG_TYPE), "type {t:#x} for MAP");
            }
            if t != ty::DMA_DOMAIN {
                assert_eq!(check(Target::Domain, Some(t)), Err(Error::WRONG_TYPE), "type {t:#x} for PIN");
            }
        }
        // A SENDER (to the manager itself or another server) and nothing at all.
        assert_eq!(check(Target::Aspace, Some(ty::SENDER)), Err(Error::WRONG_TYPE));
        assert_eq!(check(Target::Domain, Some(ty::SENDER)), Err(Error::WRONG_TYPE));
        assert_eq!(check(Target::Aspace, None), Err(Error::WRONG_TYPE));
        assert_eq!(check(Target::Domain, None), Err(Error::WRONG_TYPE));
    }
}
