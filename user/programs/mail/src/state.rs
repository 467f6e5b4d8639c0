//! The reader's own state, kept as a trusted file (`state`): the highest
//! mailbox sequence number it has taken, and each message it took with
//! its read flag; what a fetch may change in it; the note's encoding; the
//! commands of its terminal and how text is shown.
//!
//! `state` is `KMAILST1`, the highest sequence number (u64), the count
//! (u32), then each message: its id (u64), its flags (u8, bit 0 read), its
//! text's length (u32) and the text.  The note (trusted file `note`) is
//! its length (u32) and its text.  Bytes after the encoding (a shorter
//! state written over a longer one) are not read.

use alloc::string::String;
use alloc::vec::Vec;

use crate::{MAX_TEXT, MailboxError, MessageError, Opened};

pub const STATE_MAGIC: &[u8; 8] = b"KMAILST1";
/// Messages the reader keeps, at most.
pub const MAX_KEPT: usize = 48;
/// The note, at most (bytes of UTF-8).
pub const MAX_NOTE: usize = 512;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    pub id: u64,
    pub read: bool,
    pub text: Vec<u8>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct State {
    /// The highest mailbox sequence number taken (0: none yet).
    pub seq: u64,
    /// In id order.
    pub messages: Vec<Msg>,
}

/// Why a fetch changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportError {
    /// The whole mailbox is refused.
    Mailbox(MailboxError),
    /// An authentic mailbox older than one already taken: an old copy
    /// put back (its sequence number and the highest seen).
    Replayed(u64, u64),
}

impl core::fmt::Display for ImportError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            ImportError::Mailbox(e) => e.fmt(f),
            ImportError::Replayed(found, seen) => write!(
                f,
                "REPLAYED: an old mailbox (sequence {found}; the reader has taken sequence {seen}): refused, nothing changed"
            ),
        }
    }
}

/// What a fetch did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Imported {
    pub seq: u64,
    /// Ids of the messages taken.
    pub new: Vec<u64>,
    /// Messages already kept.
    pub known: usize,
    /// Refused messages: id and why.
    pub refused: Vec<(u64, MessageError)>,
    /// Authentic messages not taken: the reader keeps MAX_KEPT.
    pub no_room: Vec<u64>,
}

impl State {
    pub fn find(&self, id: u64) -> Option<&Msg> {
        self.messages.iter().find(|m| m.id == id)
    }

    /// Takes what an authentic mailbox brings: refused when it is older
    /// than one already taken (a replayed mailbox; the same sequence again
    /// is the same mailbox, and brings what it did not bring before, a
    /// message refused then and whole now).  A message already kept keeps
    /// its text and its flag.  On Err nothing changed.
    pub fn import(&mut self, opened: Result<Opened, MailboxError>) -> Result<Imported, ImportError> {
        let opened = opened.map_err(ImportError::Mailbox)?;
        if opened.seq < self.seq {
            return Err(ImportError::Replayed(opened.seq, self.seq));
        }
        let mut r = Imported { seq: opened.seq, ..Imported::default() };
        for (id, m) in opened.messages {
            match m {
                Err(e) => r.refused.push((id, e)),
                Ok(_) if self.find(id).is_some() => r.known += 1,
                Ok(_) if self.messages.len() >= MAX_KEPT => r.no_room.push(id),
                Ok(text) => {
                    let at = self.messages.partition_point(|m| m.id < id);
                    self.messages.insert(at, Msg { id, read: false, text });
                    r.new.push(id);
                }
            }
        }
        self.seq = opened.seq;
        Ok(r)
    }

    /// Marks a message read: Some(true) if it was not, None if there is
    /// no such message.
    pub fn mark_read(&mut self, id: u64) -> Option<bool> {
        let m = self.messages.iter_mut().find(|m| m.id == id)?;
        let was = m.read;
        m.read = true;
        Some(!was)
    }

    pub fn unread(&self) -> usize {
        self.messages.iter().filter(|m| !m.read).count()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(STATE_MAGIC);
        v.extend_from_slice(&self.seq.to_le_bytes());
        v.extend_from_slice(&(self.messages.len() as u32).to_le_bytes());
        for m in &self.messages {
            v.extend_from_slice(&m.id.to_le_bytes());
            v.push(m.read as u8);
            v.extend_from_slice(&(m.text.len() as u32).to_le_bytes());
            v.extend_from_slice(&m.text);
        }
        v
    }

    /// The state of `encode`; None for anything else (the trusted file
    /// authenticated it, so this is a check of the program's own bytes).
    pub fn decode(b: &[u8]) -> Option<State> {
        let mut r = Reader(b);
        if r.take(8)? != STATE_MAGIC {
            return None;
        }
        let seq = r.u64()?;
        let n = r.u32()? as usize;
        if n > MAX_KEPT {
            return None;
        }
        let mut messages: Vec<Msg> = Vec::with_capacity(n);
        for _ in 0..n {
            let id = r.u64()?;
            let flags = r.take(1)?[0];
            let len = r.u32()? as usize;
            if flags > 1 || len > MAX_TEXT || messages.last().is_some_and(|m| m.id >= id) {
                return None;
            }
            let text = r.take(len)?.to_vec();
            core::str::from_utf8(&text).ok()?;
            messages.push(Msg { id, read: flags == 1, text });
        }
        Some(State { seq, messages })
    }
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Some(a)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

pub fn encode_note(note: &str) -> Vec<u8> {
    let mut v = (note.len() as u32).to_le_bytes().to_vec();
    v.extend_from_slice(note.as_bytes());
    v
}

pub fn decode_note(b: &[u8]) -> Option<String> {
    let mut r = Reader(b);
    let n = r.u32()? as usize;
    if n > MAX_NOTE {
        return None;
    }
    Some(String::from(core::str::from_utf8(r.take(n)?).ok()?))
}

/// Text as the terminal shows it: every control character but Newline and
/// Tab shown as `?` (so a message cannot move the cursor, clear the
/// screen or recolour it), a newline as CR LF.
pub fn printable(text: &str) -> String {
    let mut s = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            '\n' => s.push_str("\r\n"),
            '\t' => s.push('\t'),
            c if c.is_control() => s.push('?'),
            c => s.push(c),
        }
    }
    s
}

/// A message's subject as the list shows it: its first line, at most 48
/// characters.
pub fn subject(text: &[u8]) -> String {
    let t = core::str::from_utf8(text).unwrap_or("");
    let line = t.lines().next().unwrap_or("");
    let line = line.strip_prefix("Subject: ").unwrap_or(line);
    let mut s: String = line.chars().take(48).collect();
    if line.chars().count() > 48 {
        s.push_str("...");
    }
    printable(&s)
}

/// A command typed at the reader's terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command<'a> {
    Empty,
    Help,
    /// Shows the reader's public key.
    Key,
    /// Trusts a sender's public key.
    Trust([u8; 32]),
    /// Reads the mailbox the workhorse keeps, checks it, takes it.
    Fetch,
    List,
    /// Shows a message by id and marks it read.
    Show(u64),
    /// Shows the note, or sets it.
    Note(Option<&'a str>),
    /// Seals a message to the sender into the workhorse's outbox.
    Send(&'a str),
    /// Not a command: why.
    Bad(&'static str),
}

pub fn parse(line: &str) -> Command<'_> {
    let line = line.trim();
    let (word, rest) = match line.find(' ') {
        Some(i) => (&line[..i], line[i + 1..].trim()),
        None => (line, ""),
    };
    match word {
        "" => Command::Empty,
        "help" | "?" if rest.is_empty() => Command::Help,
        "key" if rest.is_empty() => Command::Key,
        "trust" => match crate::parse_key(rest) {
            Some(k) => Command::Trust(k),
            None => Command::Bad("trust takes the sender's public key: 64 hex digits"),
        },
        "fetch" if rest.is_empty() => Command::Fetch,
        "list" | "ls" if rest.is_empty() => Command::List,
        "show" => match rest.parse::<u64>() {
            Ok(id) => Command::Show(id),
            Err(_) => Command::Bad("show takes a message's number"),
        },
        "note" if rest.is_empty() => Command::Note(None),
        "note" if rest.len() > MAX_NOTE => Command::Bad("a note is at most 512 bytes"),
        "note" => Command::Note(Some(rest)),
        "send" if rest.is_empty() => Command::Bad("send takes the message's text"),
        "send" if rest.len() > MAX_NOTE => Command::Bad("a message sent from the terminal is at most 512 bytes"),
        "send" => Command::Send(rest),
        "help" | "?" | "key" | "fetch" | "list" | "ls" => Command::Bad("that command takes no argument"),
        _ => Command::Bad("no such command (help: the commands)"),
    }
}
