//! The trusted mail reader's format and policy (docs/trusted-core.md,
//! "The trusted mail reader").
//!
//! The reader has an X25519 key pair made in the trusted core (the private
//! key kept only in the vault) and trusts one sender, whose public key the
//! user gives it on its own terminal.  Both sides derive the mailbox key:
//! HKDF-SHA256 of the X25519 shared secret, salt `keep-mail v1`, info
//! `keep-mail key` and both public keys (the reader's first).  A
//! *mailbox* is a file the workhorse fetches and keeps; it is sealed with
//! ChaCha20-Poly1305 (RFC 8439) under that key:
//!
//! | bytes | what |
//! |---|---|
//! | 32 | header: `KEEPMBX1`, version 1 (u32), the count (u32), the mailbox's sequence number (u64), 0 (u64) |
//! | 48 x count | the index: each message's id (u64), text length (u32), 0 (u32), SHA-256 of its record |
//! | 28 | the index's nonce (12) and the tag of no plaintext with the header and the index as associated data |
//! | ... | each message's record in the index's order: a nonce (12), its text encrypted, the tag (16); associated data `keep-mail message` and its id |
//!
//! Only a holder of the reader's or the sender's private key can make an
//! index that authenticates, so a forged mailbox is refused whole; a
//! changed record no longer has the hash its index entry names and is
//! refused alone (the others are shown); the sequence number, under the
//! index's tag, lets the reader refuse an older mailbox put back
//! ([`State::import`]).  All integers are little-endian.
//!
//! What the reader sends to the sender is sealed under the *outgoing key*
//! (info `keep-mail outgoing`), with a sequence number the sender checks:
//! [`seal_outgoing`], [`open_outgoing`].

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod state;

#[cfg(test)]
mod tests;

use alloc::vec::Vec;

use chacha20poly1305::aead::AeadInPlace;
use chacha20poly1305::{ChaCha20Poly1305, KeyInit, Nonce, Tag};
use hkdf::Hkdf;
use sha2::{Digest, Sha256};
use x25519_dalek::{PublicKey, StaticSecret};

pub use state::{Command, ImportError, Imported, Msg, State};

pub const MAGIC: &[u8; 8] = b"KEEPMBX1";
pub const VERSION: u32 = 1;
pub const HEADER: usize = 32;
pub const ENTRY: usize = 48;
pub const NONCE: usize = 12;
pub const TAG: usize = 16;
/// Messages in one mailbox, at most.
pub const MAX_MESSAGES: usize = 32;
/// A message's text, at most (bytes of UTF-8).
pub const MAX_TEXT: usize = 2048;
/// The largest mailbox that can be well formed.
pub const MAX_MAILBOX: usize = HEADER + MAX_MESSAGES * (ENTRY + NONCE + MAX_TEXT + TAG) + NONCE + TAG;

const SALT: &[u8] = b"keep-mail v1";
const INFO: &[u8] = b"keep-mail key";
const INDEX_AD: &[u8] = b"keep-mail index";
const MESSAGE_AD: &[u8] = b"keep-mail message";
const OUT_INFO: &[u8] = b"keep-mail outgoing";
const OUT_AD: &[u8] = b"keep-mail outgoing";
/// A message the reader sends.
pub const OUT_MAGIC: &[u8; 8] = b"KEEPOUT1";
pub const OUT_HEADER: usize = 24;

/// The public key of a private one.
pub fn public_key(secret: &[u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(*secret)).to_bytes()
}

/// The mailbox key of the reader and the sender, from one side's private
/// key and the other's public key; None when the other key is one of the
/// points that make no shared secret (a low-order point).
fn mailbox_key(own: &[u8; 32], other: &[u8; 32], reader: &[u8; 32], sender: &[u8; 32]) -> Option<[u8; 32]> {
    derive(INFO, own, other, reader, sender)
}

/// HKDF-SHA256 of the X25519 shared secret with `what`, the reader's and
/// the sender's public keys as info.
fn derive(what: &[u8], own: &[u8; 32], other: &[u8; 32], reader: &[u8; 32], sender: &[u8; 32]) -> Option<[u8; 32]> {
    let shared = StaticSecret::from(*own).diffie_hellman(&PublicKey::from(*other));
    if !shared.was_contributory() {
        return None;
    }
    let mut info = Vec::with_capacity(what.len() + 64);
    info.extend_from_slice(what);
    info.extend_from_slice(reader);
    info.extend_from_slice(sender);
    let mut key = [0u8; 32];
    Hkdf::<Sha256>::new(Some(SALT), shared.as_bytes()).expand(&info, &mut key).ok()?;
    Some(key)
}

/// The reader's side: its private key and the sender's public key.
pub fn reader_key(reader_secret: &[u8; 32], sender: &[u8; 32]) -> Option<[u8; 32]> {
    mailbox_key(reader_secret, sender, &public_key(reader_secret), sender)
}

/// The sender's side: its private key and the reader's public key.
pub fn sender_key(sender_secret: &[u8; 32], reader: &[u8; 32]) -> Option<[u8; 32]> {
    mailbox_key(sender_secret, reader, reader, &public_key(sender_secret))
}

/// The key of the messages the reader sends (the other direction's, so
/// that nothing sealed one way opens the other): HKDF as the mailbox key's
/// with info `keep-mail outgoing`; the reader's side.
pub fn reader_outgoing_key(reader_secret: &[u8; 32], sender: &[u8; 32]) -> Option<[u8; 32]> {
    derive(OUT_INFO, reader_secret, sender, &public_key(reader_secret), sender)
}

/// The same key, the sender's side.
pub fn sender_outgoing_key(sender_secret: &[u8; 32], reader: &[u8; 32]) -> Option<[u8; 32]> {
    derive(OUT_INFO, sender_secret, reader, reader, &public_key(sender_secret))
}

/// Seals a message the reader sends: the header (`KEEPOUT1`, version 1
/// (u32), the text's length (u32), the sequence number (u64)), a nonce,
/// the text encrypted with ChaCha20-Poly1305 under the outgoing key and
/// its tag; associated data `keep-mail outgoing` and the header.  None
/// past MAX_TEXT.
pub fn seal_outgoing(key: &[u8; 32], seq: u64, text: &[u8], nonce: [u8; NONCE]) -> Option<Vec<u8>> {
    if text.len() > MAX_TEXT {
        return None;
    }
    let mut out = Vec::with_capacity(OUT_HEADER + NONCE + text.len() + TAG);
    out.extend_from_slice(OUT_MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(&nonce);
    let mut ct = text.to_vec();
    let tag = ChaCha20Poly1305::new(key.into()).encrypt_in_place_detached(Nonce::from_slice(&nonce), &outgoing_ad(&out[..OUT_HEADER]), &mut ct).ok()?;
    out.extend_from_slice(&ct);
    out.extend_from_slice(&tag);
    Some(out)
}

/// The receiving side of [`seal_outgoing`] (the host's server does the
/// same in tools/mail_sender.py): the sequence number and the text, or
/// why not.
pub fn open_outgoing(key: &[u8; 32], b: &[u8]) -> Result<(u64, Vec<u8>), &'static str> {
    if b.len() < OUT_HEADER + NONCE + TAG || &b[..8] != OUT_MAGIC || b[8..12] != VERSION.to_le_bytes() {
        return Err("not a message of this format");
    }
    let len = u32::from_le_bytes(b[12..16].try_into().unwrap()) as usize;
    if len > MAX_TEXT || b.len() != OUT_HEADER + NONCE + len + TAG {
        return Err("not a message of this format");
    }
    let seq = u64::from_le_bytes(b[16..24].try_into().unwrap());
    let nonce = &b[OUT_HEADER..OUT_HEADER + NONCE];
    let mut text = b[OUT_HEADER + NONCE..OUT_HEADER + NONCE + len].to_vec();
    let tag = Tag::from_slice(&b[OUT_HEADER + NONCE + len..]);
    ChaCha20Poly1305::new(key.into())
        .decrypt_in_place_detached(Nonce::from_slice(nonce), &outgoing_ad(&b[..OUT_HEADER]), &mut text, tag)
        .map_err(|_| "it does not authenticate")?;
    Ok((seq, text))
}

fn outgoing_ad(header: &[u8]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(OUT_AD.len() + OUT_HEADER);
    ad.extend_from_slice(OUT_AD);
    ad.extend_from_slice(header);
    ad
}

/// Why a whole mailbox is refused: nothing of it is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailboxError {
    /// Not a mailbox of this format (cut short, a wrong magic or version,
    /// past the limits, bytes left over).
    Malformed(&'static str),
    /// The index does not authenticate under the mailbox key: not made by
    /// the sender (or changed).
    Forged,
}

impl core::fmt::Display for MailboxError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            MailboxError::Malformed(why) => write!(f, "MALFORMED: {why}"),
            MailboxError::Forged => f.write_str("FORGED: the mailbox's index does not authenticate (not sealed by the trusted sender, or changed)"),
        }
    }
}

/// Why one message of an authentic mailbox is refused (the others stand).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageError {
    /// Its record is not the one the index names (a changed byte), or it
    /// does not decrypt.
    Tampered,
    /// Its record is not in the file (cut short).
    Missing,
    /// It decrypts but is not UTF-8 text.
    NotText,
}

impl core::fmt::Display for MessageError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            MessageError::Tampered => "TAMPERED: its record is not the one the sealed index names",
            MessageError::Missing => "MISSING: its record is not in the mailbox",
            MessageError::NotText => "NOT TEXT: it is not UTF-8",
        })
    }
}

/// An authentic mailbox: its sequence number and each message by id, its
/// text or why it is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub seq: u64,
    pub messages: Vec<(u64, Result<Vec<u8>, MessageError>)>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

fn message_ad(id: u64) -> Vec<u8> {
    let mut ad = Vec::with_capacity(MESSAGE_AD.len() + 8);
    ad.extend_from_slice(MESSAGE_AD);
    ad.extend_from_slice(&id.to_le_bytes());
    ad
}

fn index_ad(b: &[u8]) -> Vec<u8> {
    let mut ad = Vec::with_capacity(INDEX_AD.len() + b.len());
    ad.extend_from_slice(INDEX_AD);
    ad.extend_from_slice(b);
    ad
}

/// Opens a mailbox with the mailbox key.  No text is returned that did
/// not authenticate.
pub fn open(key: &[u8; 32], b: &[u8]) -> Result<Opened, MailboxError> {
    if b.len() > MAX_MAILBOX {
        return Err(MailboxError::Malformed("larger than any mailbox"));
    }
    if b.len() < HEADER + NONCE + TAG {
        return Err(MailboxError::Malformed("cut short"));
    }
    if &b[..8] != MAGIC || u32_at(b, 8) != VERSION || u64_at(b, 24) != 0 {
        return Err(MailboxError::Malformed("not a mailbox of version 1"));
    }
    let count = u32_at(b, 12) as usize;
    if count > MAX_MESSAGES {
        return Err(MailboxError::Malformed("more messages than a mailbox holds"));
    }
    let index_end = HEADER + count * ENTRY;
    if b.len() < index_end + NONCE + TAG {
        return Err(MailboxError::Malformed("cut short"));
    }
    let nonce = Nonce::from_slice(&b[index_end..index_end + NONCE]);
    let tag = Tag::from_slice(&b[index_end + NONCE..index_end + NONCE + TAG]);
    let aead = ChaCha20Poly1305::new(key.into());
    let mut none: [u8; 0] = [];
    if aead.decrypt_in_place_detached(nonce, &index_ad(&b[..index_end]), &mut none, tag).is_err() {
        return Err(MailboxError::Forged);
    }
    // Authentic from here: the index is the sender's, but the records
    // may still be anything.
    let seq = u64_at(b, 16);
    let mut at = index_end + NONCE + TAG;
    let mut messages = Vec::with_capacity(count);
    let mut ends = Vec::with_capacity(count);
    for i in 0..count {
        let e = HEADER + i * ENTRY;
        let len = u32_at(b, e + 8) as usize;
        if len > MAX_TEXT || u32_at(b, e + 12) != 0 {
            return Err(MailboxError::Malformed("an index entry past the limits"));
        }
        at += NONCE + len + TAG;
        ends.push(at);
    }
    let mut start = index_end + NONCE + TAG;
    for (i, end) in ends.iter().copied().enumerate() {
        let e = HEADER + i * ENTRY;
        let id = u64_at(b, e);
        let r = if end > b.len() {
            Err(MessageError::Missing)
        } else {
            let rec = &b[start..end];
            if Sha256::digest(rec).as_slice() != &b[e + 16..e + 48] {
                Err(MessageError::Tampered)
            } else {
                let mut text = rec[NONCE..rec.len() - TAG].to_vec();
                let nonce = Nonce::from_slice(&rec[..NONCE]);
                let tag = Tag::from_slice(&rec[rec.len() - TAG..]);
                if aead.decrypt_in_place_detached(nonce, &message_ad(id), &mut text, tag).is_err() {
                    Err(MessageError::Tampered)
                } else if core::str::from_utf8(&text).is_err() {
                    Err(MessageError::NotText)
                } else {
                    Ok(text)
                }
            }
        };
        messages.push((id, r));
        start = end;
    }
    if start < b.len() {
        return Err(MailboxError::Malformed("bytes after the last message"));
    }
    Ok(Opened { seq, messages })
}

/// Seals a mailbox (the sender's side; the host tests' and the format's
/// reference: tools/test_mail.py's server makes the same bytes).
/// `nonces` gives a fresh 12-byte nonce for each message, then one for
/// the index.  None past the limits.
pub fn seal(key: &[u8; 32], seq: u64, messages: &[(u64, &[u8])], mut nonces: impl FnMut() -> [u8; NONCE]) -> Option<Vec<u8>> {
    if messages.len() > MAX_MESSAGES || messages.iter().any(|(_, t)| t.len() > MAX_TEXT) {
        return None;
    }
    let aead = ChaCha20Poly1305::new(key.into());
    let mut records = Vec::new();
    let mut head = Vec::with_capacity(HEADER + messages.len() * ENTRY);
    head.extend_from_slice(MAGIC);
    head.extend_from_slice(&VERSION.to_le_bytes());
    head.extend_from_slice(&(messages.len() as u32).to_le_bytes());
    head.extend_from_slice(&seq.to_le_bytes());
    head.extend_from_slice(&0u64.to_le_bytes());
    for (id, text) in messages {
        let n = nonces();
        let mut ct = text.to_vec();
        let tag = aead.encrypt_in_place_detached(Nonce::from_slice(&n), &message_ad(*id), &mut ct).ok()?;
        let mut rec = Vec::with_capacity(NONCE + ct.len() + TAG);
        rec.extend_from_slice(&n);
        rec.extend_from_slice(&ct);
        rec.extend_from_slice(&tag);
        head.extend_from_slice(&id.to_le_bytes());
        head.extend_from_slice(&(text.len() as u32).to_le_bytes());
        head.extend_from_slice(&0u32.to_le_bytes());
        head.extend_from_slice(&Sha256::digest(&rec));
        records.extend_from_slice(&rec);
    }
    let n = nonces();
    let mut none: [u8; 0] = [];
    let tag = aead.encrypt_in_place_detached(Nonce::from_slice(&n), &index_ad(&head), &mut none).ok()?;
    head.extend_from_slice(&n);
    head.extend_from_slice(&tag);
    head.extend_from_slice(&records);
    Some(head)
}

/// Parses 64 hex digits (a public key as the reader prints it).
pub fn parse_key(hex: &str) -> Option<[u8; 32]> {
    let h = hex.as_bytes();
    if h.len() != 64 {
        return None;
    }
    let mut k = [0u8; 32];
    for (i, out) in k.iter_mut().enumerate() {
        let d = |c: u8| (c as char).to_digit(16);
        *out = (d(h[2 * i])? * 16 + d(h[2 * i + 1])?) as u8;
    }
    Some(k)
}

/// A key as 64 lower-case hex digits.
pub fn hex(k: &[u8]) -> alloc::string::String {
    k.iter().map(|b| alloc::format!("{b:02x}")).collect()
}
