//! Host tests of the mailbox format, its checks and the reader's policy.

use super::*;
use crate::state::{self, decode_note, encode_note, parse, printable, subject};

const READER: [u8; 32] = [7; 32];
const SENDER: [u8; 32] = [9; 32];

fn counter() -> impl FnMut() -> [u8; NONCE] {
    let mut n = 0u8;
    move || {
        n += 1;
        [n; NONCE]
    }
}

fn key() -> [u8; 32] {
    reader_key(&READER, &public_key(&SENDER)).unwrap()
}

fn mailbox(seq: u64, msgs: &[(u64, &str)]) -> Vec<u8> {
    let k = sender_key(&SENDER, &public_key(&READER)).unwrap();
    let m: Vec<(u64, &[u8])> = msgs.iter().map(|(i, t)| (*i, t.as_bytes())).collect();
    seal(&k, seq, &m, counter()).unwrap()
}

#[test]
fn both_sides_derive_the_same_key_and_no_one_else_does() {
    let r = reader_key(&READER, &public_key(&SENDER)).unwrap();
    let s = sender_key(&SENDER, &public_key(&READER)).unwrap();
    assert_eq!(r, s);
    let other = reader_key(&READER, &public_key(&[11; 32])).unwrap();
    assert_ne!(r, other);
    // A low-order point gives no key.
    assert_eq!(reader_key(&READER, &[0; 32]), None);
}

/// The key schedule against RFC 7748's X25519 test vector (section 6.1)
/// and an HKDF computed independently (the Python server's construction).
#[test]
fn x25519_matches_rfc7748() {
    let a = parse_key("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a").unwrap();
    let b = parse_key("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb").unwrap();
    assert_eq!(hex(&public_key(&a)), "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    assert_eq!(hex(&public_key(&b)), "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    assert_eq!(reader_key(&a, &public_key(&b)), sender_key(&b, &public_key(&a)));
}

#[test]
fn a_mailbox_opens_with_its_messages() {
    let b = mailbox(3, &[(1, "Subject: hello\n\nfirst"), (2, "Subject: again\n\nsecond")]);
    let o = open(&key(), &b).unwrap();
    assert_eq!(o.seq, 3);
    assert_eq!(o.messages, vec![(1, Ok(b"Subject: hello\n\nfirst".to_vec())), (2, Ok(b"Subject: again\n\nsecond".to_vec()))]);
    let empty = mailbox(1, &[]);
    assert_eq!(open(&key(), &empty).unwrap().messages, vec![]);
}

#[test]
fn the_plaintext_is_not_in_the_mailbox() {
    let b = mailbox(1, &[(1, "SECRET-PLAINTEXT-LINE")]);
    assert!(!b.windows(6).any(|w| w == b"SECRET"));
}

#[test]
fn a_mailbox_of_another_key_is_forged() {
    // Sealed by someone else to the reader's public key (what a workhorse
    // that knows both public keys can do).
    let k = sender_key(&[5; 32], &public_key(&READER)).unwrap();
    let b = seal(&k, 9, &[(1, b"forged")], counter()).unwrap();
    assert_eq!(open(&key(), &b), Err(MailboxError::Forged));
}

#[test]
fn every_changed_byte_is_caught() {
    let b = mailbox(4, &[(1, "one"), (2, "two two"), (3, "three")]);
    let k = key();
    let good = open(&k, &b).unwrap();
    let index_end = HEADER + 3 * ENTRY + NONCE + TAG;
    for i in 0..b.len() {
        let mut c = b.clone();
        c[i] ^= 0x20;
        match open(&k, &c) {
            Err(_) => assert!(i < index_end, "byte {i}: a record's byte refused the whole mailbox"),
            Ok(o) => {
                assert!(i >= index_end, "byte {i} of the header or index accepted");
                assert_eq!(o.seq, 4);
                let bad: Vec<_> = o.messages.iter().filter(|(_, r)| r.is_err()).collect();
                assert_eq!(bad.len(), 1, "byte {i}");
                assert_eq!(bad[0].1, Err(MessageError::Tampered));
                // The others are as they were.
                for (m, g) in o.messages.iter().zip(&good.messages) {
                    if m.1.is_ok() {
                        assert_eq!(m, g);
                    }
                }
            }
        }
    }
}

#[test]
fn records_swapped_or_cut_are_refused() {
    let b = mailbox(2, &[(1, "aaaa"), (2, "bbbb")]);
    let start = HEADER + 2 * ENTRY + NONCE + TAG;
    let rec = NONCE + 4 + TAG;
    let mut c = b.clone();
    c[start..start + rec].copy_from_slice(&b[start + rec..start + 2 * rec]);
    c[start + rec..].copy_from_slice(&b[start..start + rec]);
    let o = open(&key(), &c).unwrap();
    assert!(o.messages.iter().all(|(_, r)| *r == Err(MessageError::Tampered)));
    let o = open(&key(), &b[..b.len() - 3]).unwrap();
    assert_eq!(o.messages[0].1, Ok(b"aaaa".to_vec()));
    assert_eq!(o.messages[1].1, Err(MessageError::Missing));
    let mut longer = b.clone();
    longer.push(0);
    assert_eq!(open(&key(), &longer), Err(MailboxError::Malformed("bytes after the last message")));
    for n in [0, 10, HEADER, HEADER + ENTRY] {
        assert!(matches!(open(&key(), &b[..n]), Err(MailboxError::Malformed(_))), "{n}");
    }
    let mut v = b.clone();
    v[8] = 2;
    assert!(matches!(open(&key(), &v), Err(MailboxError::Malformed(_))));
}

#[test]
fn an_index_with_a_changed_id_is_forged() {
    let k = sender_key(&SENDER, &public_key(&READER)).unwrap();
    let b = seal(&k, 1, &[(1, b"x")], counter()).unwrap();
    let mut c = b.clone();
    c[HEADER..HEADER + 8].copy_from_slice(&2u64.to_le_bytes());
    // The changed index no longer authenticates.
    assert_eq!(open(&key(), &c), Err(MailboxError::Forged));
}

#[test]
fn limits_and_text() {
    let k = key();
    assert!(seal(&k, 1, &[(1, &[b'a'; MAX_TEXT + 1])], counter()).is_none());
    let many: Vec<(u64, &[u8])> = (0..MAX_MESSAGES as u64 + 1).map(|i| (i, &b"x"[..])).collect();
    assert!(seal(&k, 1, &many, counter()).is_none());
    let b = seal(&k, 1, &[(1, &[0xff, 0xfe][..])], counter()).unwrap();
    assert_eq!(open(&k, &b).unwrap().messages[0].1, Err(MessageError::NotText));
    assert!(matches!(open(&k, &vec![0u8; MAX_MAILBOX + 1]), Err(MailboxError::Malformed(_))));
    let full: Vec<Vec<u8>> = (0..MAX_MESSAGES).map(|_| vec![b'z'; MAX_TEXT]).collect();
    let m: Vec<(u64, &[u8])> = full.iter().enumerate().map(|(i, t)| (i as u64, &t[..])).collect();
    let b = seal(&k, 1, &m, counter()).unwrap();
    assert_eq!(b.len(), MAX_MAILBOX);
    assert_eq!(open(&k, &b).unwrap().messages.len(), MAX_MESSAGES);
}

#[test]
fn import_takes_new_messages_and_refuses_an_older_mailbox() {
    let mut s = State::default();
    let r = s.import(open(&key(), &mailbox(1, &[(1, "a"), (2, "b")]))).unwrap();
    assert_eq!((r.seq, r.new.clone(), r.known), (1, vec![1, 2], 0));
    assert_eq!(s.mark_read(1), Some(true));
    assert_eq!(s.mark_read(1), Some(false));
    assert_eq!(s.mark_read(9), None);
    let r = s.import(open(&key(), &mailbox(2, &[(1, "a"), (2, "b"), (3, "c")]))).unwrap();
    assert_eq!((r.new.clone(), r.known), (vec![3], 2));
    assert!(s.find(1).unwrap().read, "a kept message keeps its flag");
    let before = s.clone();
    assert_eq!(s.import(open(&key(), &mailbox(1, &[(1, "a"), (2, "b")]))), Err(ImportError::Replayed(1, 2)));
    assert_eq!(s, before, "a replay changes nothing");
    // The same mailbox again is no replay, and brings nothing new.
    let r = s.import(open(&key(), &mailbox(2, &[(1, "a"), (2, "b"), (3, "c")]))).unwrap();
    assert_eq!((r.new.len(), r.known), (0, 3));
    // A forged or malformed one changes nothing.
    assert_eq!(s.import(Err(MailboxError::Forged)), Err(ImportError::Mailbox(MailboxError::Forged)));
    assert_eq!(s, before);
    assert_eq!(s.unread(), 2);
}

#[test]
fn a_tampered_message_is_refused_alone_and_taken_when_whole() {
    let mut s = State::default();
    let mut b = mailbox(5, &[(1, "good"), (2, "victim")]);
    let n = b.len();
    b[n - TAG - 1] ^= 1;
    let r = s.import(open(&key(), &b)).unwrap();
    assert_eq!(r.new, vec![1]);
    assert_eq!(r.refused, vec![(2, MessageError::Tampered)]);
    assert!(s.find(2).is_none());
    let r = s.import(open(&key(), &mailbox(5, &[(1, "good"), (2, "victim")]))).unwrap();
    assert_eq!(r.new, vec![2]);
    assert_eq!(s.find(2).unwrap().text, b"victim");
}

#[test]
fn the_reader_keeps_at_most_max_kept() {
    let mut s = State::default();
    let texts: Vec<String> = (0..MAX_MESSAGES).map(|i| format!("m{i}")).collect();
    for round in 0..2u64 {
        let m: Vec<(u64, &str)> = texts.iter().enumerate().map(|(i, t)| (round * 100 + i as u64, t.as_str())).collect();
        let r = s.import(open(&key(), &mailbox(round + 1, &m))).unwrap();
        if round == 1 {
            assert_eq!(r.new.len(), state::MAX_KEPT - MAX_MESSAGES);
            assert_eq!(r.no_room.len(), 2 * MAX_MESSAGES - state::MAX_KEPT);
        }
    }
    assert_eq!(s.messages.len(), state::MAX_KEPT);
}

#[test]
fn state_and_note_round_trip_and_refuse_other_bytes() {
    let mut s = State::default();
    s.import(open(&key(), &mailbox(7, &[(4, "x"), (2, "Subject: y\nbody")]))).unwrap();
    s.mark_read(4);
    let e = s.encode();
    assert_eq!(State::decode(&e), Some(s.clone()));
    assert_eq!(s.messages.iter().map(|m| m.id).collect::<Vec<_>>(), vec![2, 4]);
    let mut longer = e.clone();
    longer.extend_from_slice(b"stale bytes of a longer state");
    assert_eq!(State::decode(&longer), Some(s.clone()));
    for n in 0..e.len() {
        assert_eq!(State::decode(&e[..n]), None, "cut at {n}");
    }
    let mut bad = e.clone();
    bad[0] = b'X';
    assert_eq!(State::decode(&bad), None);
    assert_eq!(decode_note(&encode_note("remember")), Some("remember".into()));
    assert_eq!(decode_note(&[1, 0]), None);
    assert_eq!(decode_note(&(600u32.to_le_bytes())), None);
}

#[test]
fn commands() {
    assert_eq!(parse("  "), Command::Empty);
    assert_eq!(parse("fetch"), Command::Fetch);
    assert_eq!(parse("list"), Command::List);
    assert_eq!(parse("show 12"), Command::Show(12));
    assert!(matches!(parse("show x"), Command::Bad(_)));
    assert!(matches!(parse("show"), Command::Bad(_)));
    assert_eq!(parse("note"), Command::Note(None));
    assert_eq!(parse("note buy  milk "), Command::Note(Some("buy  milk")));
    assert!(matches!(parse(&format!("note {}", "n".repeat(513))), Command::Bad(_)));
    let k = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f";
    assert_eq!(parse(&format!("trust {k}")), Command::Trust(parse_key(k).unwrap()));
    assert!(matches!(parse("trust 12"), Command::Bad(_)));
    assert!(matches!(parse(&format!("trust {}", "g".repeat(64))), Command::Bad(_)));
    assert!(matches!(parse("fetch now"), Command::Bad(_)));
    assert!(matches!(parse("rm -rf"), Command::Bad(_)));
    assert!(matches!(parse("quit"), Command::Bad(_)));
}

#[test]
fn shown_text_has_no_control_characters() {
    assert_eq!(printable("a\x1b[2Jb\nc\td\x07"), "a?[2Jb\r\nc\td?");
    assert_eq!(subject(b"Subject: hi\x1b]0;x\x07\nbody"), "hi?]0;x?");
    assert_eq!(subject("Subject: ".to_string().as_bytes()), "");
    assert!(subject(&[b'a'; 100]).ends_with("..."));
}

/// The same mailbox as tools/mail_sender.py makes (the host test server's
/// sender) with the same keys and nonces: byte for byte.
#[test]
fn the_python_sender_makes_the_same_bytes() {
    use sha2::{Digest, Sha256};
    let b = mailbox(3, &[(1, "Subject: hello\n\nfirst"), (2, "Subject: again\n\nsecond")]);
    assert_eq!(hex(&Sha256::digest(&b)), "8a06fa33bba6a05470719daac38c62739f7bde20471f78c096b93af6de655491");
}

#[test]
fn an_outgoing_message_opens_only_with_the_outgoing_key_and_unchanged() {
    let r = reader_outgoing_key(&READER, &public_key(&SENDER)).unwrap();
    let s = sender_outgoing_key(&SENDER, &public_key(&READER)).unwrap();
    assert_eq!(r, s);
    assert_ne!(r, key(), "the two directions' keys differ");
    let b = seal_outgoing(&r, 7, b"Subject: re\n\nthanks", [3; NONCE]).unwrap();
    assert_eq!(open_outgoing(&s, &b), Ok((7, b"Subject: re\n\nthanks".to_vec())));
    // Any byte changed, cut, grown: refused.
    for i in 0..b.len() {
        let mut c = b.clone();
        c[i] ^= 0x10;
        assert!(open_outgoing(&s, &c).is_err(), "byte {i}");
    }
    assert!(open_outgoing(&s, &b[..b.len() - 1]).is_err());
    let mut longer = b.clone();
    longer.push(0);
    assert!(open_outgoing(&s, &longer).is_err());
    // The mailbox key (the other direction) and another reader's: refused.
    assert_eq!(open_outgoing(&key(), &b), Err("it does not authenticate"));
    let other = reader_outgoing_key(&[5; 32], &public_key(&SENDER)).unwrap();
    assert_eq!(open_outgoing(&other, &b), Err("it does not authenticate"));
    assert!(seal_outgoing(&r, 1, &[b'a'; MAX_TEXT + 1], [0; NONCE]).is_none());
}

/// The same outgoing message as tools/mail_sender.py's open_outgoing
/// takes: its bytes with these keys and this nonce.
#[test]
fn the_python_sender_opens_the_same_bytes() {
    use sha2::{Digest, Sha256};
    let r = reader_outgoing_key(&READER, &public_key(&SENDER)).unwrap();
    let b = seal_outgoing(&r, 2, b"hello", [1; NONCE]).unwrap();
    assert_eq!(hex(&Sha256::digest(&b)), "ce2c0a9e0c017da8492a54f6f9ef4b086986ebf4ab6a6f442e71c55a113bac31");
}

#[test]
fn send_parses() {
    assert_eq!(parse("send hi there"), state::Command::Send("hi there"));
    assert!(matches!(parse("send"), state::Command::Bad(_)));
    assert!(matches!(parse(&format!("send {}", "x".repeat(513))), state::Command::Bad(_)));
}
