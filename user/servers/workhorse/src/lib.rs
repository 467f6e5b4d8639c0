//! The workhorse: a Linux personality server (docs/workhorse.md).  It runs
//! unmodified Linux x86-64 programs as Keep processes in emulation mode:
//! their `syscall` instructions arrive as fault messages and the server
//! answers them.  This library is what others need of it and what the host
//! tests check: the protocol the root task uses to start and call it, the
//! command-line splitting, the boot archive's inflation and reader and the system-call
//! table (whose rendering is `docs/linux-compat.md`); `main.rs` is the
//! server.
//!
//! The starter's protocol (`RUN`, `STATS`; init gives the shell a sender
//! capability with payload 0) is defined in `abi/services/workhorse.toml`;
//! `tools/idlgen.py` generates `protocol.rs` from it and the table in
//! docs/workhorse.md.

#![cfg_attr(not(test), no_std)]

extern crate alloc;

pub mod bytenames;
pub mod gzip;
pub mod linux;
pub mod store;
pub mod names;
pub mod perm;
pub mod tar;
pub mod table;
pub mod xattr;

use alloc::string::String;
use alloc::vec::Vec;

pub mod protocol;
pub use protocol::*;
/// The files it keeps for trusted programs (abi/services/whfiles.toml).
pub mod whfiles_protocol;

/// The boot-image entry holding the Linux root file system (a gzip-compressed
/// ustar archive built by the Makefile: busybox and its applet links, bash,
/// python3 and their libraries from Debian's packages, the conformance
/// tests; the server inflates it).
pub const ROOTFS_ENTRY: &str = "linux-rootfs.tar.gz";
/// Where the archive is in the server's address space (the description's
/// `blob=`: the constructor maps it there, read-only); rsi carries its size.
pub const ROOTFS_VADDR: u64 = 0x0000_1000_0000_0000;

#[cfg(not(test))]
mod client;
#[cfg(not(test))]
pub use client::Workhorse;

/// Splits a command line into words: blanks separate, single quotes keep
/// everything, double quotes keep everything but `\"` and `\\`, a backslash
/// outside quotes keeps the next character.  None when a quote is not
/// closed.
pub fn split_args(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    words.push(core::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => cur.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\') => cur.push(c),
                            c => {
                                cur.push('\\');
                                cur.push(c);
                            }
                        },
                        c => cur.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                cur.push(chars.next()?);
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|w| String::from(*w)).collect()
    }

    #[test]
    fn splits_words_and_quotes() {
        assert_eq!(split_args("  ls   -l /bin "), Some(s(&["ls", "-l", "/bin"])));
        assert_eq!(
            split_args("sh -c 'echo a | wc -c'"),
            Some(s(&["sh", "-c", "echo a | wc -c"]))
        );
        assert_eq!(split_args(r#"echo "a \"b\" \n" c\ d"#), Some(s(&["echo", "a \"b\" \\n", "c d"])));
        assert_eq!(split_args("echo ''"), Some(s(&["echo", ""])));
        assert_eq!(split_args(""), Some(s(&[])));
    }

    #[test]
    fn unclosed_quotes_are_refused() {
        assert_eq!(split_args("echo 'a"), None);
        assert_eq!(split_args("echo \"a"), None);
        assert_eq!(split_args("echo a\\"), None);
    }
}
