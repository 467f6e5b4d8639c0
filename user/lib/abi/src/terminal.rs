//! Virtual terminals of the console multiplexer (user/servers/console,
//! docs/trusted-core.md, "The trusted path"): the wire protocol and the
//! client side.  It lives here, beside the kernel's objects, because
//! `keep_rt`'s `print!` speaks it when a program's `CONSOLE` slot holds a
//! terminal instead of the kernel's debug console.
//!
//! A terminal is a SENDER to the multiplexer; its protected payload names
//! the terminal and what the capability may do (write, or write and
//! read); the multiplexer's control capability (payload 0) is the root
//! task's only.  The protocol is defined in `abi/services/console.toml`;
//! `tools/idlgen.py` generates `terminal/protocol.rs` from it (the labels,
//! re-exported here, and the statuses, which are the kernel's error
//! numbers) and the table in docs/trusted-core.md.  `WRITE_WORDS` and
//! `MORE` (below) are label ranges, kept here.

use crate::{Error, Result, Tag};

pub mod protocol;
pub use protocol::{LIST, NEW, READ, SET_NOTIFY, SWITCH, VIEW, WRITE};

/// `WRITE_WORDS + len`: up to 32 bytes in the words, no IPC string (so a
/// print does not disturb the IPC buffer of the program).
pub const WRITE_WORDS: u64 = 0x100;
/// Added to WRITE_WORDS' label: more of the same write follows (the
/// multiplexer shows it all at once, at most 4 KiB).
pub const MORE: u64 = 0x200;

/// Terminal kinds (NEW word 0).
pub const INTERACTIVE: u64 = 0;
pub const OUTPUT_ONLY: u64 = 1;

/// Most bytes one READ returns.
pub const READ_MAX: usize = 16;
/// Most bytes one WRITE_WORDS carries.
pub const WORDS_MAX: usize = 32;
/// Where `terminal` in the system description puts an entry's own
/// interactive terminal (docs/space-banks.md); the constructor places
/// initial capabilities only in slots 1, 2, 5, 7 and 8-15.
pub const SLOT: u64 = 0xb;

/// Most bytes one WRITE carries.
pub const WRITE_MAX: usize = 4096;

/// Packs up to 32 bytes into four words (little-endian).
pub fn pack(bytes: &[u8]) -> [u64; 4] {
    let mut w = [0u64; 4];
    for (i, &b) in bytes.iter().take(WORDS_MAX).enumerate() {
        w[i / 8] |= (b as u64) << ((i % 8) * 8);
    }
    w
}

/// The `n` bytes packed in `words` (at most 32).
pub fn unpack(words: &[u64], n: usize, out: &mut [u8]) -> usize {
    let n = n.min(words.len() * 8).min(out.len());
    for (i, o) in out[..n].iter_mut().enumerate() {
        *o = (words[i / 8] >> ((i % 8) * 8)) as u8;
    }
    n
}

/// A terminal capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Terminal(pub u64);

impl Terminal {
    fn status(m: &crate::Msg) -> Result<[u64; 4]> {
        m.result()?;
        Error::check(m.words[0])?;
        Ok(m.words)
    }

    /// Writes up to 32 bytes in the message's words; returns how many
    /// were taken.
    pub fn write_words(self, bytes: &[u8]) -> Result<usize> {
        self.write_words_more(bytes, false)
    }

    fn write_words_more(self, bytes: &[u8], more: bool) -> Result<usize> {
        let n = bytes.len().min(WORDS_MAX);
        if n == 0 {
            return Ok(0);
        }
        let label = WRITE_WORDS + n as u64 + if more { MORE } else { 0 };
        let m = crate::Sender(self.0).call(Tag::new(label), pack(&bytes[..n]));
        Ok(Self::status(&m)?[1] as usize)
    }

    /// Writes all of `bytes`, 32 at a time, as one write (MORE on all
    /// messages but the last).
    pub fn write_all_words(self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let n = self.write_words_more(bytes, bytes.len() > WORDS_MAX)?;
            if n == 0 {
                return Err(Error::INVALID_ARG);
            }
            bytes = &bytes[n.min(bytes.len())..];
        }
        Ok(())
    }

    /// Writes up to 4096 bytes as the IPC string of `buffer` (the
    /// caller's IPC buffer, whose string area this overwrites).
    pub fn write_string(self, buffer: &mut crate::IpcBuffer, bytes: &[u8]) -> Result<usize> {
        let n = bytes.len().min(WRITE_MAX);
        buffer.set_string(&bytes[..n]);
        let m = crate::Sender(self.0).call(Tag::new(WRITE).with_string(), [0; 4]);
        Ok(Self::status(&m)?[1] as usize)
    }

    /// Reads what input is waiting (at most 16 bytes); `WOULD_BLOCK` when
    /// none is.
    pub fn read(self, out: &mut [u8]) -> Result<usize> {
        let max = out.len().min(READ_MAX) as u64;
        if max == 0 {
            return Err(Error::INVALID_ARG);
        }
        let m = crate::Sender(self.0).call(Tag::new(READ), [max, 0, 0, 0]);
        let w = Self::status(&m)?;
        Ok(unpack(&w[2..4], w[1] as usize, out))
    }

    /// Asks the multiplexer to signal `bits` on the notification at
    /// `notification` (sent through `buffer`) whenever input arrives.
    pub fn set_notify(self, buffer: &mut crate::IpcBuffer, notification: u64, bits: u64) -> Result<()> {
        let n = buffer.set_send_caps(&[(notification, 0)]);
        let m = crate::Sender(self.0).call(Tag::new(SET_NOTIFY).with_caps(n), [bits, 0, 0, 0]);
        Self::status(&m).map(|_| ())
    }
}

/// One terminal as LIST tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed {
    pub vt: u64,
    pub output_only: bool,
    pub has_screen: bool,
    pub name: [u8; 16],
}

/// The multiplexer's control capability (the root task's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Control(pub u64);

impl Control {
    fn call(self, buffer: &mut crate::IpcBuffer, label: u64, words: [u64; 4], dest: Option<u64>) -> Result<[u64; 4]> {
        let mut t = Tag::new(label);
        if let Some(d) = dest {
            t = t.with_slots(buffer.set_recv_slots(&[d]));
        }
        let m = crate::Sender(self.0).call(t, words);
        Terminal::status(&m)
    }

    /// A new terminal named `name` (at most 16 bytes) of `kind`, its
    /// capability placed at `dest`; returns its number.
    pub fn new_terminal(self, buffer: &mut crate::IpcBuffer, kind: u64, name: &str, dest: u64) -> Result<u64> {
        let (a, b) = crate::pack_name(name);
        Ok(self.call(buffer, NEW, [kind, a, b, 0], Some(dest))?[1])
    }

    /// A write-only capability to terminal `vt` at `dest`.
    pub fn view(self, buffer: &mut crate::IpcBuffer, vt: u64, dest: u64) -> Result<()> {
        self.call(buffer, VIEW, [vt, 0, 0, 0], Some(dest)).map(|_| ())
    }

    /// Gives the screen to terminal `vt`.
    pub fn switch(self, buffer: &mut crate::IpcBuffer, vt: u64) -> Result<()> {
        self.call(buffer, SWITCH, [vt, 0, 0, 0], None).map(|_| ())
    }

    /// The terminal at `index` of the list (None past the last).
    pub fn list(self, buffer: &mut crate::IpcBuffer, index: u64) -> Option<Listed> {
        let w = self.call(buffer, LIST, [index, 0, 0, 0], None).ok()?;
        let mut name = [0u8; 16];
        name[..8].copy_from_slice(&w[2].to_le_bytes());
        name[8..].copy_from_slice(&w[3].to_le_bytes());
        Some(Listed { vt: w[1] & 0xffff_ffff, output_only: w[1] >> 32 & 1 != 0, has_screen: w[1] >> 33 & 1 != 0, name })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated protocol keeps the wire values, and its statuses are
    /// the kernel's error numbers, which the clients decode as such.
    #[test]
    fn labels_and_statuses_are_the_wire_values() {
        use crate::err;
        use protocol::status;
        assert_eq!((WRITE, READ, SET_NOTIFY, NEW, VIEW, SWITCH, LIST), (1, 2, 3, 0x10, 0x11, 0x12, 0x13));
        for (s, e) in [(status::WRONG_TYPE, err::WRONG_TYPE), (status::NO_RIGHTS, err::NO_RIGHTS), (status::INVALID_METHOD, err::INVALID_METHOD),
                       (status::INVALID_ARG, err::INVALID_ARG), (status::NO_MEMORY, err::NO_MEMORY), (status::WOULD_BLOCK, err::WOULD_BLOCK)] {
            assert_eq!(s, e);
        }
        assert!(protocol::serves(NEW, 0) && !protocol::serves(NEW, (1 << 62) | 3));
        assert!(protocol::serves(WRITE, (1 << 62) | (1 << 32) | 3) && !protocol::serves(WRITE, 0));
    }

    #[test]
    fn pack_round_trip() {
        let s = b"0123456789abcdefghijklmnopqrstuv";
        let w = pack(s);
        let mut out = [0u8; 32];
        assert_eq!(unpack(&w, 32, &mut out), 32);
        assert_eq!(&out, s);
        let mut short = [0u8; 3];
        assert_eq!(unpack(&w, 32, &mut short), 3);
        assert_eq!(&short, b"012");
    }
}
