//! The system-call table as data (`syscall_table.rs` is the one list; the
//! server makes its dispatch from the same file) and its rendering as
//! `docs/linux-compat.md`, which a host test keeps in step.

use alloc::format;
use alloc::string::String;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Support {
    Full,
    Partial,
    Refused,
}

#[derive(Clone, Copy, Debug)]
pub struct Entry {
    pub nr: u64,
    pub name: &'static str,
    pub handler: &'static str,
    pub support: Support,
    pub note: &'static str,
}

macro_rules! syscall_table {
    ($($nr:literal $name:ident $handler:path, $support:ident, $note:literal;)*) => {
        /// Every listed system call, by number.
        pub const TABLE: &[Entry] = &[$(Entry {
            nr: $nr,
            name: stringify!($name),
            handler: stringify!($handler),
            support: Support::$support,
            note: $note,
        }),*];
    };
}

pub fn find(nr: u64) -> Option<&'static Entry> {
    TABLE.iter().find(|e| e.nr == nr)
}

pub fn name(nr: u64) -> &'static str {
    crate::names::name(nr)
}

/// docs/linux-compat.md.
pub fn render() -> String {
    let count = |s| TABLE.iter().filter(|e| e.support == s).count();
    let (full, partial, refused) = (count(Support::Full), count(Support::Partial), count(Support::Refused));
    let mut s = String::new();
    s.push_str("# Linux compatibility of the workhorse\n\n");
    s.push_str("Generated from `user/servers/workhorse/src/syscall_table.rs` by `make linux-compat-docs`;\n");
    s.push_str("`make cargo-test` fails when this file and the table differ.  The server's\n");
    s.push_str("design is in [workhorse.md](workhorse.md).\n\n");
    s.push_str(&format!(
        "**{} system calls implemented** ({full} fully, {partial} in part) of the {} of Linux\n\
         x86-64 (Debian 12's headers); {refused} refused on purpose.  Every call not listed is answered `-ENOSYS` and counted:\n\
         `linux` alone at the `keep> ` prompt lists the ones programs have made.\n\n",
        full + partial,
        crate::names::NAMES.len()
    ));
    s.push_str("| nr | call | support | note |\n|---:|---|---|---|\n");
    for e in TABLE {
        let sup = match e.support {
            Support::Full => "full",
            Support::Partial => "partial",
            Support::Refused => "refused (ENOSYS)",
        };
        s.push_str(&format!("| {} | `{}` | {} | {} |\n", e.nr, e.name, sup, e.note));
    }
    s
}

include!("syscall_table.rs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_names_are_linux_names() {
        for e in TABLE {
            assert_eq!(crate::names::name(e.nr), e.name, "number {}", e.nr);
        }
        assert_eq!(name(999), "?");
    }

    #[test]
    fn numbers_are_sorted_and_unique_and_notes_explain() {
        for w in TABLE.windows(2) {
            assert!(w[0].nr < w[1].nr, "{} before {}", w[0].name, w[1].name);
        }
        for e in TABLE {
            if e.support != Support::Full {
                assert!(!e.note.is_empty(), "{}: a partial or refused call says why", e.name);
            }
        }
    }

    /// docs/linux-compat.md is the rendering of the table
    /// (`KEEP_WRITE_DOCS=1` rewrites it: `make linux-compat-docs`).
    #[test]
    fn linux_compat_doc_matches_the_table() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../docs/linux-compat.md");
        let want = render();
        if std::env::var_os("KEEP_WRITE_DOCS").is_some() {
            std::fs::write(path, &want).unwrap();
        }
        let have = std::fs::read_to_string(path).unwrap_or_default();
        assert!(have == want, "docs/linux-compat.md differs from the table: run make linux-compat-docs");
    }
}
