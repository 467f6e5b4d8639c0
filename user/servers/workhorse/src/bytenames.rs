//! File names as Linux has them, any bytes but NUL, in the file tree's
//! `String`s.  A name's valid UTF-8 stays as it is; every other byte
//! 0x80..=0xff becomes one character of a private-use block, U+F780 plus
//! the byte's low seven bits.  So that the mapping is one to one, a name's
//! own characters in that block (valid UTF-8, 0xef 0x9e..0x9f 0x80..0xbf)
//! are taken byte by byte as the others are; `to_bytes` gives back exactly
//! the bytes `from_bytes` was given, and no two names share a string.

use alloc::string::String;
use alloc::vec::Vec;

/// The block standing for single bytes 0x80..=0xff.
const BASE: u32 = 0xf700;
const FIRST: u32 = BASE + 0x80;
const LAST: u32 = BASE + 0xff;

fn escape(out: &mut String, b: u8) {
    out.push(char::from_u32(BASE + b as u32).expect("in the private-use block"));
}

/// The tree's string for the name (or path) of bytes `b`.
pub fn from_bytes(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    while !b.is_empty() {
        match core::str::from_utf8(b) {
            Ok(s) => {
                push_valid(&mut out, s);
                break;
            }
            Err(e) => {
                let (good, rest) = b.split_at(e.valid_up_to());
                // `good` is what from_utf8 found valid.
                push_valid(&mut out, core::str::from_utf8(good).unwrap_or_default());
                let bad = e.error_len().unwrap_or(rest.len());
                for &x in &rest[..bad] {
                    escape(&mut out, x);
                }
                b = &rest[bad..];
            }
        }
    }
    out
}

/// Valid UTF-8, its characters of the escape block taken byte by byte.
fn push_valid(out: &mut String, s: &str) {
    for c in s.chars() {
        if (FIRST..=LAST).contains(&(c as u32)) {
            let mut buf = [0u8; 4];
            for &x in c.encode_utf8(&mut buf).as_bytes() {
                escape(out, x);
            }
        } else {
            out.push(c);
        }
    }
}

/// The bytes of a name (or path) of the tree: `from_bytes` undone.
pub fn to_bytes(s: &str) -> Vec<u8> {
    if !s.chars().any(|c| (FIRST..=LAST).contains(&(c as u32))) {
        return s.as_bytes().to_vec();
    }
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        if (FIRST..=LAST).contains(&(c as u32)) {
            out.push((c as u32 - BASE) as u8);
        } else {
            let mut buf = [0u8; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        }
    }
    out
}

/// How many bytes `to_bytes(s)` has (a name's length as Linux counts it).
pub fn byte_len(s: &str) -> usize {
    s.chars().map(|c| if (FIRST..=LAST).contains(&(c as u32)) { 1 } else { c.len_utf8() }).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(b: &[u8]) {
        let s = from_bytes(b);
        assert_eq!(to_bytes(&s), b, "{b:x?}");
        assert_eq!(byte_len(&s), b.len());
    }

    #[test]
    fn utf8_is_kept() {
        assert_eq!(from_bytes(b"abc"), "abc");
        assert_eq!(from_bytes("na\u{ef}ve \u{1f600}".as_bytes()), "na\u{ef}ve \u{1f600}");
        round("caf\u{e9}/\u{4e2d}".as_bytes());
    }

    #[test]
    fn other_bytes_round_trip() {
        round(b"\xff");
        round(b"a\xffb");
        round(b"\x80\x81\xfe\xff");
        round(b"\xc3");
        round(b"\xc3(");
        round(b"\xe2\x82");
        round(b"\xed\xa0\x80");
        round(b"\xf4\x90\x80\x80");
        round(b"ok\xc3\xa9\xe9ok");
        let all: Vec<u8> = (1..=255u8).collect();
        round(&all);
    }

    #[test]
    fn the_escape_block_itself_round_trips() {
        // U+F780 and U+F7FF given as valid UTF-8 are not single bytes.
        round("\u{f780}".as_bytes());
        round("x\u{f7ff}y".as_bytes());
        round("\u{f77f}\u{f800}".as_bytes());
        assert_ne!(from_bytes("\u{f7ff}".as_bytes()), from_bytes(b"\xff"));
        // Neighbours of the block are kept as they are.
        assert_eq!(from_bytes("\u{f77f}".as_bytes()), "\u{f77f}");
    }

    #[test]
    fn distinct_bytes_give_distinct_strings() {
        let names: [&[u8]; 6] = [b"\xff", b"\xfe", "\u{f7ff}".as_bytes(), b"\xef\x9f\xbf\xff", b"\xc3\xa9", b"\xe9"];
        for (i, a) in names.iter().enumerate() {
            for b in &names[i + 1..] {
                assert_ne!(from_bytes(a), from_bytes(b));
            }
        }
    }
}
