//! A line editor for a VT100-style terminal on a serial line, as a pure
//! state machine: [`Editor::feed`] takes one input byte at a time and
//! appends what the terminal must be sent to an output buffer; it returns
//! the line when Enter is pressed.  No system calls, so it is tested on the
//! host (`cargo test -p keep-lineedit`).
//!
//! Keys (as a Linux shell's readline has them):
//!
//! | key | bytes | does |
//! |---|---|---|
//! | Left, Right | `ESC [ D`, `ESC [ C`, `ESC O D`, `ESC O C`, Ctrl-B, Ctrl-F | move one character |
//! | Ctrl-Left, Ctrl-Right | `ESC [ 1 ; 5 D`, `ESC [ 1 ; 5 C`, Alt-B, Alt-F | move one word |
//! | Home | `ESC [ H`, `ESC O H`, `ESC [ 1 ~`, `ESC [ 7 ~`, Ctrl-A | start of line |
//! | End | `ESC [ F`, `ESC O F`, `ESC [ 4 ~`, `ESC [ 8 ~`, Ctrl-E | end of line |
//! | Backspace | 0x7f, 0x08 | delete before the cursor |
//! | Delete | `ESC [ 3 ~`, Ctrl-D | delete under the cursor |
//! | Ctrl-K, Ctrl-U, Ctrl-W | | cut to the end, to the start, the word before the cursor |
//! | Ctrl-Y | | paste what was cut last |
//! | Up, Down | `ESC [ A`, `ESC [ B`, `ESC O A`, `ESC O B`, Ctrl-P, Ctrl-N | history; Down past the newest line returns to the line being edited |
//! | Tab | 0x09 | complete a unique match; else the common prefix, and a second Tab lists the matches |
//! | Ctrl-C | 0x03 | abandon the line: `^C` and a fresh prompt |
//! | Ctrl-L | 0x0c | clear the screen and redraw |
//! | Enter | CR, LF, or CR LF | hand the line over |
//!
//! Any other escape sequence (CSI `ESC [` parameters, intermediates and a
//! final byte; SS3 `ESC O` and one byte; `ESC` and one byte) is swallowed
//! whole, and other control bytes and bytes above 0x7e are ignored: only
//! printable ASCII enters the line.  The screen is updated with CR, BS,
//! `ESC [ K` and `ESC [ n D` / `ESC [ n C`; the editor assumes the prompt
//! and the line fit on one terminal row.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

use alloc::collections::VecDeque;
use alloc::string::String;
use alloc::vec::Vec;
use core::fmt::Write;

/// Lines the history keeps (the oldest is dropped first).
pub const HISTORY: usize = 32;
/// Longest line accepted; further characters ring the bell.
pub const MAX_LINE: usize = 256;
/// CSI parameter bytes kept for decoding (longer sequences are still
/// swallowed whole).
const MAX_PARAMS: usize = 8;

/// What Tab may complete to.
pub trait Completer {
    /// Pushes every word that may stand where the word being completed
    /// starts; `before` is the line up to that word (for the first word of
    /// the line it is empty or blanks).  The editor keeps those that start
    /// with what has been typed of the word.
    fn candidates(&self, before: &str, out: &mut Vec<String>);
}

/// A completer that never has anything to offer.
pub struct NoCompletion;

impl Completer for NoCompletion {
    fn candidates(&self, _before: &str, _out: &mut Vec<String>) {}
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Key {
    Char(u8),
    Left,
    Right,
    WordLeft,
    WordRight,
    Home,
    End,
    Up,
    Down,
    Backspace,
    Delete,
    KillEnd,
    KillStart,
    KillWord,
    Yank,
    Tab,
    Cancel,
    Clear,
    Enter,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seq {
    /// Not in an escape sequence.
    Ground,
    /// After ESC.
    Esc,
    /// After ESC [: parameters, intermediates, then a final byte.
    Csi,
    /// After ESC O: one more byte.
    Ss3,
}

/// The editor: the line being edited, the cursor, the history and the
/// state of the escape-sequence decoder.
pub struct Editor {
    prompt: String,
    line: Vec<u8>,
    cursor: usize,
    history: VecDeque<Vec<u8>>,
    /// Index into `history` of the line shown while browsing it.
    browsing: Option<usize>,
    /// The line being edited when browsing began.
    saved: Vec<u8>,
    /// What Ctrl-K, Ctrl-U or Ctrl-W cut last.
    cut: Vec<u8>,
    esc: Seq,
    params: Vec<u8>,
    /// The previous byte was CR (a following LF is the same Enter).
    after_cr: bool,
    /// The previous key was Tab (a second Tab lists the matches).
    after_tab: bool,
}

impl Editor {
    pub fn new(prompt: &str) -> Editor {
        Editor {
            prompt: String::from(prompt),
            line: Vec::new(),
            cursor: 0,
            history: VecDeque::new(),
            browsing: None,
            saved: Vec::new(),
            cut: Vec::new(),
            esc: Seq::Ground,
            params: Vec::new(),
            after_cr: false,
            after_tab: false,
        }
    }

    /// The line as it stands (only printable ASCII, so always UTF-8).
    pub fn line(&self) -> &str {
        core::str::from_utf8(&self.line).unwrap_or("")
    }

    /// The cursor's position in the line (0 = before the first character).
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// The history, oldest first.
    pub fn history(&self) -> impl Iterator<Item = &str> + '_ {
        self.history
            .iter()
            .map(|l| core::str::from_utf8(l).unwrap_or(""))
    }

    /// Starts a new line: writes the prompt.
    pub fn begin(&mut self, out: &mut Vec<u8>) {
        self.line.clear();
        self.cursor = 0;
        self.browsing = None;
        self.after_tab = false;
        out.extend_from_slice(self.prompt.as_bytes());
    }

    /// Erases the row the prompt is on, for a message to be printed in its
    /// place; [`Editor::redraw`] then puts the prompt and line back.
    pub fn clear_row(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"\r\x1b[K");
    }

    /// Redraws the prompt and the line on the current row and puts the
    /// cursor where it belongs.
    pub fn redraw(&self, out: &mut Vec<u8>) {
        out.push(b'\r');
        out.extend_from_slice(self.prompt.as_bytes());
        out.extend_from_slice(&self.line);
        out.extend_from_slice(b"\x1b[K");
        cursor_back(out, self.line.len() - self.cursor);
    }

    /// Takes one input byte; appends the terminal's update to `out`.
    /// Returns the line when the byte ends it (Enter); the caller runs it
    /// and calls [`Editor::begin`] for the next one.
    pub fn feed(
        &mut self,
        byte: u8,
        out: &mut Vec<u8>,
        completer: &dyn Completer,
    ) -> Option<String> {
        let skip_lf = self.after_cr && byte == b'\n';
        self.after_cr = byte == b'\r';
        if skip_lf {
            return None;
        }
        let key = self.decode(byte)?;
        let after_tab = core::mem::replace(&mut self.after_tab, false);
        self.apply(key, after_tab, out, completer)
    }

    /// Feeds every byte of `bytes`; returns the lines they finish.
    pub fn feed_all(
        &mut self,
        bytes: &[u8],
        out: &mut Vec<u8>,
        completer: &dyn Completer,
    ) -> Vec<String> {
        let mut lines = Vec::new();
        for &b in bytes {
            if let Some(l) = self.feed(b, out, completer) {
                lines.push(l);
                self.begin(out);
            }
        }
        lines
    }

    fn decode(&mut self, b: u8) -> Option<Key> {
        match self.esc {
            Seq::Ground => self.decode_ground(b),
            Seq::Esc => {
                self.esc = Seq::Ground;
                match b {
                    b'[' => {
                        self.esc = Seq::Csi;
                        self.params.clear();
                        None
                    }
                    b'O' => {
                        self.esc = Seq::Ss3;
                        None
                    }
                    // ESC ESC: the first one was a lone Escape.
                    0x1b => {
                        self.esc = Seq::Esc;
                        None
                    }
                    // Alt-B, Alt-F (what terminals send with Meta as ESC).
                    b'b' => Some(Key::WordLeft),
                    b'f' => Some(Key::WordRight),
                    // Alt-anything else, or a control byte after ESC.
                    _ => None,
                }
            }
            Seq::Ss3 => {
                self.esc = Seq::Ground;
                match b {
                    b'A' => Some(Key::Up),
                    b'B' => Some(Key::Down),
                    b'C' => Some(Key::Right),
                    b'D' => Some(Key::Left),
                    b'H' => Some(Key::Home),
                    b'F' => Some(Key::End),
                    // F1-F4 (ESC O P..S) and the keypad: nothing.
                    _ => None,
                }
            }
            Seq::Csi => match b {
                0x30..=0x3f => {
                    if self.params.len() < MAX_PARAMS {
                        self.params.push(b);
                    }
                    None
                }
                // Intermediate bytes carry nothing the editor uses.
                0x20..=0x2f => None,
                0x40..=0x7e => {
                    self.esc = Seq::Ground;
                    self.csi_key(b)
                }
                // A control byte breaks the sequence off and counts as
                // itself (Ctrl-C still cancels, ESC starts anew).
                _ => {
                    self.esc = Seq::Ground;
                    self.decode_ground(b)
                }
            },
        }
    }

    fn decode_ground(&mut self, b: u8) -> Option<Key> {
        Some(match b {
            0x1b => {
                self.esc = Seq::Esc;
                return None;
            }
            b'\r' | b'\n' => Key::Enter,
            0x01 => Key::Home,
            0x02 => Key::Left,
            0x03 => Key::Cancel,
            0x04 => Key::Delete,
            0x05 => Key::End,
            0x06 => Key::Right,
            0x08 | 0x7f => Key::Backspace,
            b'\t' => Key::Tab,
            0x0b => Key::KillEnd,
            0x0c => Key::Clear,
            0x0e => Key::Down,
            0x10 => Key::Up,
            0x15 => Key::KillStart,
            0x17 => Key::KillWord,
            0x19 => Key::Yank,
            0x20..=0x7e => Key::Char(b),
            _ => return None,
        })
    }

    /// The key a complete CSI sequence with final byte `f` stands for.
    fn csi_key(&self, f: u8) -> Option<Key> {
        // The first parameter, and whether a modifier (";5" Ctrl, ";3" Alt)
        // follows it.
        let mut parts = self.params.split(|&c| c == b';');
        let first = parts.next().unwrap_or(&[]);
        let modifier = parts.next().unwrap_or(&[]);
        let word = matches!(modifier, b"3" | b"5");
        match (f, first) {
            (b'A', _) => Some(Key::Up),
            (b'B', _) => Some(Key::Down),
            (b'C', _) if word => Some(Key::WordRight),
            (b'D', _) if word => Some(Key::WordLeft),
            (b'C', _) => Some(Key::Right),
            (b'D', _) => Some(Key::Left),
            (b'H', _) => Some(Key::Home),
            (b'F', _) => Some(Key::End),
            (b'~', b"1" | b"7") => Some(Key::Home),
            (b'~', b"4" | b"8") => Some(Key::End),
            (b'~', b"3") => Some(Key::Delete),
            _ => None,
        }
    }

    fn apply(
        &mut self,
        key: Key,
        after_tab: bool,
        out: &mut Vec<u8>,
        completer: &dyn Completer,
    ) -> Option<String> {
        match key {
            Key::Char(c) => self.insert(&[c], out),
            Key::Left if self.cursor > 0 => self.move_to(self.cursor - 1, out),
            Key::Right if self.cursor < self.line.len() => self.move_to(self.cursor + 1, out),
            Key::WordLeft => self.move_to(self.word_start(), out),
            Key::WordRight => self.move_to(self.word_end(), out),
            Key::Home => self.move_to(0, out),
            Key::End => self.move_to(self.line.len(), out),
            Key::Up => self.history_up(out),
            Key::Down => self.history_down(out),
            Key::Backspace if self.cursor > 0 => {
                self.cursor -= 1;
                self.line.remove(self.cursor);
                if self.cursor == self.line.len() {
                    out.extend_from_slice(b"\x08\x1b[K");
                } else {
                    self.redraw(out);
                }
            }
            Key::Delete if self.cursor < self.line.len() => {
                self.line.remove(self.cursor);
                self.redraw(out);
            }
            Key::KillEnd => {
                self.cut = self.line.split_off(self.cursor);
                out.extend_from_slice(b"\x1b[K");
            }
            Key::KillStart => self.cut_range(0, out),
            Key::KillWord => self.cut_range(self.word_start(), out),
            Key::Yank => {
                let cut = core::mem::take(&mut self.cut);
                self.insert(&cut, out);
                self.cut = cut;
            }
            Key::Tab => {
                self.complete(after_tab, out, completer);
                self.after_tab = true;
            }
            Key::Cancel => {
                out.extend_from_slice(b"^C\n");
                self.begin(out);
            }
            Key::Clear => {
                out.extend_from_slice(b"\x1b[H\x1b[2J");
                self.redraw(out);
            }
            Key::Enter => {
                out.push(b'\n');
                let line = core::mem::take(&mut self.line);
                self.cursor = 0;
                self.browsing = None;
                self.remember(&line);
                return Some(String::from_utf8(line).unwrap_or_default());
            }
            // Left at the start, Backspace on nothing and so on.
            _ => out.push(0x07),
        }
        None
    }

    /// Inserts `text` at the cursor (as much as fits).
    fn insert(&mut self, text: &[u8], out: &mut Vec<u8>) {
        let room = MAX_LINE - self.line.len();
        let text = &text[..text.len().min(room)];
        if text.is_empty() {
            out.push(0x07);
            return;
        }
        let at_end = self.cursor == self.line.len();
        self.line
            .splice(self.cursor..self.cursor, text.iter().copied());
        self.cursor += text.len();
        if at_end {
            out.extend_from_slice(text);
        } else {
            self.redraw(out);
        }
    }

    fn move_to(&mut self, to: usize, out: &mut Vec<u8>) {
        if to < self.cursor {
            cursor_back(out, self.cursor - to);
        } else if to > self.cursor {
            let _ = write!(Bytes(out), "\x1b[{}C", to - self.cursor);
        }
        self.cursor = to;
    }

    /// Cuts from `from` to the cursor.
    fn cut_range(&mut self, from: usize, out: &mut Vec<u8>) {
        self.cut = self.line.drain(from..self.cursor).collect();
        self.cursor = from;
        self.redraw(out);
    }

    /// Where the word before the cursor starts (blanks before the cursor
    /// are skipped first).
    fn word_start(&self) -> usize {
        let mut i = self.cursor;
        while i > 0 && self.line[i - 1] == b' ' {
            i -= 1;
        }
        while i > 0 && self.line[i - 1] != b' ' {
            i -= 1;
        }
        i
    }

    /// Where the word at or after the cursor ends.
    fn word_end(&self) -> usize {
        let mut i = self.cursor;
        while i < self.line.len() && self.line[i] == b' ' {
            i += 1;
        }
        while i < self.line.len() && self.line[i] != b' ' {
            i += 1;
        }
        i
    }

    /// Adds a finished line to the history: not blank ones, nor the same
    /// line twice in a row.
    fn remember(&mut self, line: &[u8]) {
        if line.iter().all(|&c| c == b' ') || self.history.back().is_some_and(|l| l == line) {
            return;
        }
        if self.history.len() == HISTORY {
            self.history.pop_front();
        }
        self.history.push_back(line.to_vec());
    }

    fn history_up(&mut self, out: &mut Vec<u8>) {
        let index = match self.browsing {
            None if !self.history.is_empty() => {
                self.saved = self.line.clone();
                self.history.len() - 1
            }
            Some(i) if i > 0 => i - 1,
            _ => {
                out.push(0x07);
                return;
            }
        };
        self.browsing = Some(index);
        self.show(self.history[index].clone(), out);
    }

    fn history_down(&mut self, out: &mut Vec<u8>) {
        let line = match self.browsing {
            None => {
                out.push(0x07);
                return;
            }
            Some(i) if i + 1 < self.history.len() => {
                self.browsing = Some(i + 1);
                self.history[i + 1].clone()
            }
            Some(_) => {
                self.browsing = None;
                core::mem::take(&mut self.saved)
            }
        };
        self.show(line, out);
    }

    /// Replaces the line, with the cursor at its end.
    fn show(&mut self, line: Vec<u8>, out: &mut Vec<u8>) {
        self.line = line;
        self.cursor = self.line.len();
        self.redraw(out);
    }

    fn complete(&mut self, listing: bool, out: &mut Vec<u8>, completer: &dyn Completer) {
        let start = self.line[..self.cursor]
            .iter()
            .rposition(|&c| c == b' ')
            .map_or(0, |i| i + 1);
        let before = core::str::from_utf8(&self.line[..start]).unwrap_or("");
        let word = core::str::from_utf8(&self.line[start..self.cursor]).unwrap_or("");
        let mut all = Vec::new();
        completer.candidates(before, &mut all);
        let mut matches: Vec<String> = all.into_iter().filter(|c| c.starts_with(word)).collect();
        matches.sort();
        matches.dedup();
        match matches.len() {
            0 => out.push(0x07),
            1 => {
                let mut rest = Vec::from(&matches[0].as_bytes()[word.len()..]);
                if self.line.get(self.cursor) != Some(&b' ') {
                    rest.push(b' ');
                }
                self.insert(&rest, out);
            }
            _ => {
                let common = common_prefix(&matches);
                if common > word.len() {
                    let rest = Vec::from(&matches[0].as_bytes()[word.len()..common]);
                    self.insert(&rest, out);
                } else if listing {
                    out.push(b'\n');
                    for (i, m) in matches.iter().enumerate() {
                        if i > 0 {
                            out.extend_from_slice(b"  ");
                        }
                        out.extend_from_slice(m.as_bytes());
                    }
                    out.push(b'\n');
                    self.redraw(out);
                } else {
                    out.push(0x07);
                }
            }
        }
    }
}

/// The length of the longest prefix all of `words` share.
fn common_prefix(words: &[String]) -> usize {
    let first = words[0].as_bytes();
    words[1..].iter().fold(first.len(), |n, w| {
        first[..n]
            .iter()
            .zip(w.as_bytes())
            .take_while(|(a, b)| a == b)
            .count()
    })
}

fn cursor_back(out: &mut Vec<u8>, n: usize) {
    if n > 0 {
        let _ = write!(Bytes(out), "\x1b[{n}D");
    }
}

/// `core::fmt::Write` into a byte vector.
struct Bytes<'a>(&'a mut Vec<u8>);

impl Write for Bytes<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

#[cfg(test)]
mod tests;
