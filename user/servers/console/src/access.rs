//! Who may make which request.  A terminal capability may write; one that
//! may read (an interactive terminal's own, not the write-only view the
//! shell's programs get, nor an output-only terminal) may also read and
//! set its notification; the control requests (NEW, VIEW, SWITCH, LIST)
//! come only through the control capability, which may do nothing else.

use keep_abi::Error;
use keep_abi::terminal as proto;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    Control,
    Terminal { readable: bool },
}

/// Whether `holder` may make request `label`: Err(NO_RIGHTS) for a
/// request it may not make, Err(INVALID_METHOD) for none at all.
pub fn check(holder: Holder, label: u64) -> Result<(), Error> {
    let write = label == proto::WRITE
        || (proto::WRITE_WORDS + 1..=proto::WRITE_WORDS + proto::WORDS_MAX as u64).contains(&(label & !proto::MORE));
    let read = label == proto::READ || label == proto::SET_NOTIFY;
    let control = matches!(label, proto::NEW | proto::VIEW | proto::SWITCH | proto::LIST);
    if !write && !read && !control {
        return Err(Error::INVALID_METHOD);
    }
    let ok = match holder {
        Holder::Control => control,
        Holder::Terminal { readable } => write || (read && readable),
    };
    if ok { Ok(()) } else { Err(Error::NO_RIGHTS) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: Holder = Holder::Terminal { readable: true };
    const WO: Holder = Holder::Terminal { readable: false };

    #[test]
    fn terminals_write_and_only_readable_ones_read() {
        for h in [RW, WO] {
            assert_eq!(check(h, proto::WRITE), Ok(()));
            assert_eq!(check(h, proto::WRITE_WORDS + 1), Ok(()));
            assert_eq!(check(h, proto::WRITE_WORDS + 32 + proto::MORE), Ok(()));
        }
        assert_eq!(check(RW, proto::READ), Ok(()));
        assert_eq!(check(RW, proto::SET_NOTIFY), Ok(()));
        assert_eq!(check(WO, proto::READ), Err(Error::NO_RIGHTS));
        assert_eq!(check(WO, proto::SET_NOTIFY), Err(Error::NO_RIGHTS));
    }

    #[test]
    fn only_the_control_capability_controls() {
        for l in [proto::NEW, proto::VIEW, proto::SWITCH, proto::LIST] {
            assert_eq!(check(RW, l), Err(Error::NO_RIGHTS));
            assert_eq!(check(WO, l), Err(Error::NO_RIGHTS));
            assert_eq!(check(Holder::Control, l), Ok(()));
        }
        assert_eq!(check(Holder::Control, proto::WRITE), Err(Error::NO_RIGHTS));
        assert_eq!(check(Holder::Control, proto::READ), Err(Error::NO_RIGHTS));
    }

    #[test]
    fn unknown_requests_and_bad_lengths_are_no_method() {
        for l in [0, 0x77, proto::WRITE_WORDS, proto::WRITE_WORDS + 33, 0xffff] {
            assert_eq!(check(RW, l), Err(Error::INVALID_METHOD), "{l:#x}");
            assert_eq!(check(Holder::Control, l), Err(Error::INVALID_METHOD));
        }
    }
}
