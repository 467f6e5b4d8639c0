//! The switch sequence: Ctrl-T, then a digit 1-9, gives the screen to
//! that terminal.  Ctrl-T twice sends one Ctrl-T to the terminal that has
//! the screen; Ctrl-T and anything else is dropped, both bytes.  QEMU's
//! `-serial mon:stdio` keeps only Ctrl-A for itself, so Ctrl-T reaches the
//! guest.

/// The escape byte: Ctrl-T.
pub const ESCAPE: u8 = 0x14;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    /// A byte for the terminal that has the screen.
    Byte(u8),
    /// Give the screen to this terminal.
    Switch(u64),
    /// Nothing (the escape, or an unknown sequence).
    None,
}

#[derive(Default)]
pub struct Keys {
    escaped: bool,
}

impl Keys {
    pub const fn new() -> Keys {
        Keys { escaped: false }
    }

    pub fn feed(&mut self, b: u8) -> Key {
        if !self.escaped {
            if b == ESCAPE {
                self.escaped = true;
                return Key::None;
            }
            return Key::Byte(b);
        }
        self.escaped = false;
        match b {
            ESCAPE => Key::Byte(ESCAPE),
            b'1'..=b'9' => Key::Switch((b - b'0') as u64),
            _ => Key::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> alloc::vec::Vec<Key> {
        let mut k = Keys::new();
        input.iter().map(|&b| k.feed(b)).filter(|k| *k != Key::None).collect()
    }

    #[test]
    fn plain_bytes_pass() {
        assert_eq!(all(b"ls\r"), [Key::Byte(b'l'), Key::Byte(b's'), Key::Byte(b'\r')]);
    }

    #[test]
    fn escape_digit_switches() {
        assert_eq!(all(b"a\x142b"), [Key::Byte(b'a'), Key::Switch(2), Key::Byte(b'b')]);
        assert_eq!(all(b"\x149"), [Key::Switch(9)]);
    }

    #[test]
    fn escape_twice_is_one_escape() {
        assert_eq!(all(b"\x14\x14"), [Key::Byte(ESCAPE)]);
        assert_eq!(all(b"\x14\x14\x141"), [Key::Byte(ESCAPE), Key::Switch(1)]);
    }

    #[test]
    fn unknown_sequences_are_dropped() {
        assert_eq!(all(b"\x140\x14x\x14\r"), []);
        // Across feeds: the state carries over.
        let mut k = Keys::new();
        assert_eq!(k.feed(ESCAPE), Key::None);
        assert_eq!(k.feed(b'3'), Key::Switch(3));
        assert_eq!(k.feed(b'3'), Key::Byte(b'3'));
    }
}
