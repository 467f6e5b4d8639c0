//! The terminals and the screen.  Each terminal has a number, a name (its
//! program) and a kind; interactive terminals are vt1 to vt9 (what Ctrl-T
//! and a digit reach), output-only ones vt100 and up, in the order they
//! were made:
//!
//! - **interactive**: it can own the screen.  Its output appears while it
//!   owns the screen; while it does not, the output is kept (at most
//!   [`KEPT_MAX`] bytes; a terminal that writes more loses its own oldest
//!   output, counted) and shown when it gets the screen again, after the
//!   owner line, starting with the line that was unfinished when it lost
//!   the screen (a shell's prompt).  Input typed while it owns the screen
//!   is queued for it ([`INPUT_MAX`] bytes; more is dropped) and only it
//!   can read it.
//! - **output-only** (a server's log lines): shown at once, whoever owns
//!   the screen, with every control byte but Tab, Newline and Return
//!   removed; it never owns the screen and has no input.
//!
//! The owner line, `▌[keep: vtN NAME]` on a line of its own, is printed
//! on every switch; [`crate::filter`] keeps its marker out of every
//! client's output.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

use crate::filter::{Filter, MARKER};
use crate::keys::{Key, Keys};
use crate::ring::Ring;

/// Output kept per interactive terminal while it does not own the screen.
pub const KEPT_MAX: usize = 16 * 1024;
/// Input queued per terminal.
pub const INPUT_MAX: usize = 4096;
/// The unfinished line remembered per terminal (its tail beyond it goes).
pub const LINE_MAX: usize = 256;
/// Output a terminal may hold back for one write made of several
/// messages (`more`); past it, what is held is written.
pub const HOLD_MAX: usize = 4096;
/// Terminals at most (the shell's, init's and one or two per entry of
/// the largest description, keep-system's 64); interactive ones at most 9.
pub const MAX_TERMINALS: usize = 128;
pub const MAX_INTERACTIVE: usize = 9;
/// The first output-only terminal's number.
pub const FIRST_OUTPUT_ONLY: u64 = 100;
/// Longest name.
pub const NAME_MAX: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Interactive,
    OutputOnly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    /// No terminal has that number.
    NoSuchTerminal,
    /// The terminal is output-only: it cannot own the screen.
    OutputOnly,
    /// No more terminals.
    Full,
}

pub struct Vt {
    pub number: u64,
    pub name: String,
    pub kind: Kind,
    filter: Filter,
    kept: Ring,
    line: Vec<u8>,
    input: Ring,
    /// The first messages of a write that continues (`more`).
    held: Vec<u8>,
    /// Bytes written through the terminal, all told.
    pub written: u64,
}

impl Vt {
    /// Output bytes dropped (kept output that overflowed) and not yet
    /// reported by a switch.
    pub fn dropped(&self) -> u64 {
        self.kept.dropped()
    }

    /// Input bytes waiting.
    pub fn input_waiting(&self) -> usize {
        self.input.len()
    }
}

pub struct Screen {
    vts: Vec<Vt>,
    owner: Option<u64>,
    keys: Keys,
}

impl Default for Screen {
    fn default() -> Self {
        Self::new()
    }
}

/// Appends the owner line for `vt` to `out`.
fn owner_line(vt: &Vt, dropped: u64, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(MARKER);
    out.extend_from_slice(format!("[keep: vt{} {}]", vt.number, vt.name).as_bytes());
    if dropped > 0 {
        out.extend_from_slice(format!(" ({dropped} bytes of its output were dropped)").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
}

/// Appends a line of the multiplexer's own to `out`.
fn note(text: &str, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(MARKER);
    out.extend_from_slice(format!("[keep: {text}]").as_bytes());
    out.extend_from_slice(b"\r\n");
}

impl Screen {
    pub const fn new() -> Screen {
        Screen { vts: Vec::new(), owner: None, keys: Keys::new() }
    }

    fn index(&self, vt: u64) -> Option<usize> {
        self.vts.iter().position(|v| v.number == vt)
    }

    /// The terminal that has the screen.
    pub fn owner(&self) -> Option<u64> {
        self.owner
    }

    /// The terminals, in order.
    pub fn terminals(&self) -> &[Vt] {
        &self.vts
    }

    pub fn get(&self, vt: u64) -> Option<&Vt> {
        self.index(vt).map(|i| &self.vts[i])
    }

    /// A new terminal; the first interactive one gets the screen (its
    /// owner line goes to `out`).  The name is cut to NAME_MAX bytes and
    /// loses control bytes and the marker.
    pub fn add(&mut self, name: &str, kind: Kind, out: &mut Vec<u8>) -> Result<u64, Refused> {
        let same = self.vts.iter().filter(|v| v.kind == kind).count();
        if self.vts.len() >= MAX_TERMINALS || (kind == Kind::Interactive && same >= MAX_INTERACTIVE) {
            return Err(Refused::Full);
        }
        let number = same as u64 + if kind == Kind::Interactive { 1 } else { FIRST_OUTPUT_ONLY };
        let mut clean = Vec::new();
        Filter::new(true).apply(name.as_bytes(), &mut clean);
        clean.retain(|&b| b >= 0x20);
        let mut name = String::from_utf8_lossy(&clean).into_owned();
        while name.len() > NAME_MAX {
            name.pop();
        }
        self.vts.push(Vt {
            number,
            name,
            kind,
            filter: Filter::new(kind == Kind::OutputOnly),
            kept: Ring::new(KEPT_MAX),
            line: Vec::new(),
            input: Ring::new(INPUT_MAX),
            held: Vec::new(),
            written: 0,
        });
        if kind == Kind::Interactive && self.owner.is_none() {
            self.owner = Some(number);
            owner_line(self.vts.last().expect("pushed"), 0, out);
        }
        Ok(number)
    }

    /// Output of terminal `vt`: what goes on the serial line now is
    /// appended to `out`; the rest is kept.  With `more`, the bytes are
    /// held until the write's last message (at most HOLD_MAX of them), so
    /// that one print split into several messages is not cut by another
    /// terminal's output.  Returns the bytes taken (all).
    pub fn write_part(&mut self, vt: u64, data: &[u8], more: bool, out: &mut Vec<u8>) -> Result<usize, Refused> {
        let i = self.index(vt).ok_or(Refused::NoSuchTerminal)?;
        let v = &mut self.vts[i];
        if more && v.held.len() + data.len() <= HOLD_MAX {
            v.held.extend_from_slice(data);
            return Ok(data.len());
        }
        let mut all = core::mem::take(&mut v.held);
        all.extend_from_slice(data);
        self.write(vt, &all, out)?;
        Ok(data.len())
    }

    /// Output of terminal `vt`: what goes on the serial line now is
    /// appended to `out`; the rest is kept.  Returns the bytes taken (all).
    pub fn write(&mut self, vt: u64, data: &[u8], out: &mut Vec<u8>) -> Result<usize, Refused> {
        let i = self.index(vt).ok_or(Refused::NoSuchTerminal)?;
        let shown = self.vts[i].kind == Kind::OutputOnly || self.owner == Some(vt);
        let v = &mut self.vts[i];
        v.written += data.len() as u64;
        let mut clean = Vec::new();
        v.filter.apply(data, &mut clean);
        if v.kind == Kind::Interactive {
            match clean.iter().rposition(|&b| b == b'\n') {
                Some(at) => {
                    v.line.clear();
                    v.line.extend_from_slice(&clean[at + 1..]);
                }
                None => v.line.extend_from_slice(&clean),
            }
            if v.line.len() > LINE_MAX {
                let cut = v.line.len() - LINE_MAX;
                v.line.drain(..cut);
            }
        }
        if shown {
            out.extend_from_slice(&clean);
        } else {
            v.kept.push(&clean);
        }
        Ok(data.len())
    }

    /// Gives the screen to `vt`: the owner line and its kept output go to
    /// `out`.  The terminal that loses the screen keeps its unfinished
    /// line, to show it again first.
    pub fn switch(&mut self, vt: u64, out: &mut Vec<u8>) -> Result<(), Refused> {
        let i = self.index(vt).ok_or(Refused::NoSuchTerminal)?;
        if self.vts[i].kind == Kind::OutputOnly {
            return Err(Refused::OutputOnly);
        }
        if let Some(old) = self.owner.filter(|&o| o != vt).and_then(|o| self.index(o)) {
            let v = &mut self.vts[old];
            let line = core::mem::take(&mut v.line);
            v.kept.push(&line);
            v.line = line;
        }
        self.owner = Some(vt);
        let v = &mut self.vts[i];
        let dropped = v.kept.take_dropped();
        owner_line(v, dropped, out);
        v.kept.drain_into(out);
        Ok(())
    }

    /// Input from the console: switch sequences are done here (their
    /// output to `out`), the other bytes queued for the terminal that owns
    /// the screen.  Returns the terminal that got input, if any.
    pub fn input(&mut self, data: &[u8], out: &mut Vec<u8>) -> Option<u64> {
        let mut got = None;
        for &b in data {
            match self.keys.feed(b) {
                Key::None => {}
                Key::Switch(n) => match self.switch(n, out) {
                    Ok(()) => {}
                    Err(Refused::OutputOnly) => {
                        let name = self.get(n).map_or("", |v| v.name.as_str());
                        note(&format!("vt{n} {name} is output-only"), out);
                    }
                    Err(_) => note(&format!("there is no vt{n}"), out),
                },
                Key::Byte(b) => {
                    if let Some(o) = self.owner
                        && let Some(i) = self.index(o)
                    {
                        self.vts[i].input.push(&[b]);
                        got = Some(o);
                    }
                }
            }
        }
        got
    }

    /// Takes input of terminal `vt` (only its own) into `out`.
    pub fn read(&mut self, vt: u64, out: &mut [u8]) -> Result<usize, Refused> {
        let i = self.index(vt).ok_or(Refused::NoSuchTerminal)?;
        Ok(self.vts[i].input.take(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(out: &[u8]) -> String {
        String::from_utf8_lossy(out).into_owned()
    }

    /// vt1 shell, vt100 pci (output-only), vt2 workhorse (interactive).
    fn three() -> (Screen, Vec<u8>) {
        let mut s = Screen::new();
        let mut out = Vec::new();
        assert_eq!(s.add("shell", Kind::Interactive, &mut out), Ok(1));
        assert_eq!(s.add("pci", Kind::OutputOnly, &mut out), Ok(FIRST_OUTPUT_ONLY));
        assert_eq!(s.add("workhorse", Kind::Interactive, &mut out), Ok(2));
        (s, out)
    }

    #[test]
    fn the_first_interactive_terminal_gets_the_screen() {
        let (s, out) = three();
        assert_eq!(s.owner(), Some(1));
        assert_eq!(text(&out), "\r\n\u{258c}[keep: vt1 shell]\r\n");
    }

    #[test]
    fn input_reaches_only_the_owner() {
        let (mut s, mut out) = three();
        assert_eq!(s.input(b"ls\r", &mut out), Some(1));
        let mut buf = [0u8; 16];
        assert_eq!(s.read(2, &mut buf), Ok(0));
        assert_eq!(s.read(100, &mut buf), Ok(0));
        assert_eq!(s.read(1, &mut buf), Ok(3));
        assert_eq!(&buf[..3], b"ls\r");
        assert_eq!(s.read(1, &mut buf), Ok(0));
        assert_eq!(s.read(9, &mut buf), Err(Refused::NoSuchTerminal));
    }

    #[test]
    fn switch_keys_change_the_owner_and_are_not_input() {
        let (mut s, mut out) = three();
        out.clear();
        assert_eq!(s.input(b"\x142x", &mut out), Some(2));
        assert_eq!(s.owner(), Some(2));
        assert_eq!(text(&out), "\r\n\u{258c}[keep: vt2 workhorse]\r\n");
        let mut buf = [0u8; 16];
        assert_eq!(s.read(2, &mut buf), Ok(1));
        assert_eq!(buf[0], b'x');
        assert_eq!(s.read(1, &mut buf), Ok(0));
    }

    #[test]
    fn switch_to_output_only_or_missing_is_refused_with_a_note() {
        let (mut s, mut out) = three();
        assert_eq!(s.switch(100, &mut out), Err(Refused::OutputOnly));
        assert_eq!(s.switch(7, &mut out), Err(Refused::NoSuchTerminal));
        out.clear();
        assert_eq!(s.input(b"\x147", &mut out), None);
        assert_eq!(s.owner(), Some(1));
        assert_eq!(text(&out), "\r\n\u{258c}[keep: there is no vt7]\r\n");
    }

    #[test]
    fn hidden_output_is_kept_and_shown_on_switch() {
        let (mut s, mut out) = three();
        out.clear();
        s.write(1, b"keep> ", &mut out).unwrap();
        s.write(2, b"hidden\n", &mut out).unwrap();
        assert_eq!(text(&out), "keep> ");
        out.clear();
        s.switch(2, &mut out).unwrap();
        assert_eq!(text(&out), "\r\n\u{258c}[keep: vt2 workhorse]\r\nhidden\n");
        out.clear();
        s.write(1, b"ls", &mut out).unwrap();
        assert!(out.is_empty());
        s.switch(1, &mut out).unwrap();
        // The unfinished line from before the switch, then what came after.
        assert_eq!(text(&out), "\r\n\u{258c}[keep: vt1 shell]\r\nkeep> ls");
    }

    #[test]
    fn output_only_lines_show_whoever_owns_the_screen() {
        let (mut s, mut out) = three();
        s.switch(2, &mut out).unwrap();
        out.clear();
        s.write(100, b"pci: \x1b[2Jready\n", &mut out).unwrap();
        assert_eq!(text(&out), "pci: [2Jready\n");
    }

    #[test]
    fn no_client_writes_the_marker() {
        let (mut s, mut out) = three();
        out.clear();
        let fake = "\r\n\u{258c}[keep: vt1 shell]\r\n";
        s.write(1, fake.as_bytes(), &mut out).unwrap();
        s.write(100, fake.as_bytes(), &mut out).unwrap();
        assert!(!text(&out).contains('\u{258c}'));
        s.switch(2, &mut out).unwrap();
        out.clear();
        s.write(1, fake.as_bytes(), &mut out).unwrap();
        s.switch(1, &mut out).unwrap();
        assert_eq!(text(&out).matches('\u{258c}').count(), 1);
    }

    #[test]
    fn a_flooding_terminal_loses_only_its_own_oldest_output() {
        let (mut s, mut out) = three();
        s.switch(2, &mut out).unwrap();
        s.write(1, b"first\n", &mut out).unwrap();
        // vt2 is visible: its flood goes out; vt1's kept output stays.
        let flood = alloc::vec![b'y'; 3 * KEPT_MAX];
        s.write(2, &flood, &mut out).unwrap();
        s.switch(1, &mut out).unwrap();
        out.clear();
        // Now vt2 is hidden and floods: it drops its own oldest.
        let mut numbered = Vec::new();
        for i in 0..(KEPT_MAX / 4 + 100) {
            numbered.extend_from_slice(format!("{:03}\n", i % 1000).as_bytes());
        }
        s.write(2, &numbered, &mut out).unwrap();
        s.write(1, b"mine\n", &mut out).unwrap();
        assert_eq!(text(&out), "mine\n");
        assert!(s.get(2).unwrap().dropped() > 0);
        assert_eq!(s.get(1).unwrap().dropped(), 0);
        out.clear();
        s.switch(2, &mut out).unwrap();
        let t = text(&out);
        assert!(t.contains("bytes of its output were dropped"), "{t}");
        assert!(t.ends_with(&text(&numbered[numbered.len() - 100..])));
        assert!(out.len() <= KEPT_MAX + 100);
    }

    #[test]
    fn a_write_in_several_messages_is_not_cut() {
        let (mut s, mut out) = three();
        out.clear();
        s.write_part(1, b"kill: server blk ", true, &mut out).unwrap();
        s.write_part(100, b"pci: a line\n", false, &mut out).unwrap();
        s.write_part(1, b"killed\n", false, &mut out).unwrap();
        assert_eq!(text(&out), "pci: a line\nkill: server blk killed\n");
        // More than HOLD_MAX is written out, not held for ever.
        out.clear();
        for _ in 0..=HOLD_MAX / 32 {
            s.write_part(1, &[b'x'; 32], true, &mut out).unwrap();
        }
        assert!(out.len() > HOLD_MAX);
    }

    #[test]
    fn input_is_bounded() {
        let (mut s, mut out) = three();
        s.input(&alloc::vec![b'a'; INPUT_MAX + 10], &mut out);
        assert_eq!(s.get(1).unwrap().input_waiting(), INPUT_MAX);
    }

    #[test]
    fn names_are_cleaned_and_the_table_is_bounded() {
        let mut s = Screen::new();
        let mut out = Vec::new();
        let n = s.add("\u{258c}evil\x1b[2Jname-that-is-long", Kind::OutputOnly, &mut out).unwrap();
        assert_eq!(s.get(n).unwrap().name, "evil[2Jname-that");
        for i in 0..MAX_INTERACTIVE {
            assert_eq!(s.add("i", Kind::Interactive, &mut out), Ok(i as u64 + 1));
        }
        assert_eq!(s.add("i", Kind::Interactive, &mut out), Err(Refused::Full));
        for _ in 1 + MAX_INTERACTIVE..MAX_TERMINALS {
            s.add("x", Kind::OutputOnly, &mut out).unwrap();
        }
        assert_eq!(s.add("x", Kind::OutputOnly, &mut out), Err(Refused::Full));
    }
}
