//! Reading a ustar archive (POSIX.1-1988 `ustar` headers, as Python's
//! `tarfile` writes with `format=USTAR_FORMAT`): 512-byte headers, each
//! followed by the file's bytes rounded up to 512.  Only what the root file
//! system needs: regular files, directories and symbolic links.

/// One archive member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member<'a> {
    /// The path, without a leading "./" or "/".
    pub path: &'a str,
    pub kind: Kind,
    /// Permission bits.
    pub mode: u32,
    pub data: &'a [u8],
    /// A symbolic link's target.
    pub link: &'a str,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TarError {
    /// A header's checksum does not match, or a number field is not octal.
    BadHeader { offset: usize },
    /// A member's data runs past the archive's end.
    Truncated { offset: usize },
    /// A member type other than file, directory or symlink.
    Unsupported { offset: usize, typeflag: u8 },
    /// A name is not UTF-8, or uses ustar's prefix field (names of 100
    /// bytes or more, which tools/mkrootfs.py never writes).
    BadName { offset: usize },
}

fn field(h: &[u8], at: usize, len: usize) -> &[u8] {
    let f = &h[at..at + len];
    let end = f.iter().position(|&b| b == 0).unwrap_or(len);
    &f[..end]
}

fn octal(f: &[u8]) -> Option<u64> {
    let mut v: u64 = 0;
    let mut any = false;
    for &b in f {
        match b {
            b'0'..=b'7' => {
                v = v.checked_mul(8)?.checked_add((b - b'0') as u64)?;
                any = true;
            }
            b' ' | 0 => {
                if any {
                    break;
                }
            }
            _ => return None,
        }
    }
    Some(v)
}

/// The members of `archive`, in order; stops at the first all-zero block.
pub struct Members<'a> {
    archive: &'a [u8],
    offset: usize,
}

pub fn members(archive: &[u8]) -> Members<'_> {
    Members { archive, offset: 0 }
}

impl<'a> Iterator for Members<'a> {
    type Item = Result<Member<'a>, TarError>;

    fn next(&mut self) -> Option<Self::Item> {
        let at = self.offset;
        let h = self.archive.get(at..at + 512)?;
        if h.iter().all(|&b| b == 0) {
            return None;
        }
        let r = self.parse(at, h);
        if r.is_err() {
            self.offset = self.archive.len(); // stop after an error
        }
        Some(r)
    }
}

impl<'a> Members<'a> {
    fn parse(&mut self, at: usize, h: &'a [u8]) -> Result<Member<'a>, TarError> {
        let bad = TarError::BadHeader { offset: at };
        let sum = octal(field(h, 148, 8)).ok_or(bad)?;
        let computed: u64 = h
            .iter()
            .enumerate()
            .map(|(i, &b)| if (148..156).contains(&i) { b' ' as u64 } else { b as u64 })
            .sum();
        if sum != computed {
            return Err(bad);
        }
        let size = octal(field(h, 124, 12)).ok_or(bad)? as usize;
        let mode = octal(field(h, 100, 8)).ok_or(bad)? as u32;
        let start = at + 512;
        let data = self
            .archive
            .get(start..start.checked_add(size).ok_or(bad)?)
            .ok_or(TarError::Truncated { offset: at })?;
        self.offset = start + size.div_ceil(512) * 512;
        let text = |f: &'a [u8]| core::str::from_utf8(f).map_err(|_| TarError::BadName { offset: at });
        let name = text(field(h, 0, 100))?;
        if !field(h, 345, 155).is_empty() {
            return Err(TarError::BadName { offset: at });
        }
        let link = text(field(h, 157, 100))?;
        let kind = match h[156] {
            b'0' | 0 => Kind::File,
            b'5' => Kind::Dir,
            b'2' => Kind::Symlink,
            t => return Err(TarError::Unsupported { offset: at, typeflag: t }),
        };
        let name = name.trim_start_matches("./").trim_start_matches('/');
        Ok(Member {
            path: name,
            kind,
            mode,
            data: if kind == Kind::File { data } else { &[] },
            link,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ustar header as Python's tarfile writes it.
    fn header(name: &str, size: usize, typeflag: u8, link: &str) -> [u8; 512] {
        let mut h = [0u8; 512];
        h[..name.len()].copy_from_slice(name.as_bytes());
        h[100..107].copy_from_slice(b"0000755");
        h[124..135].copy_from_slice(format!("{size:011o}").as_bytes());
        h[156] = typeflag;
        h[157..157 + link.len()].copy_from_slice(link.as_bytes());
        h[257..263].copy_from_slice(b"ustar\0");
        h[148..156].copy_from_slice(b"        ");
        let sum: u32 = h.iter().map(|&b| b as u32).sum();
        h[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        h
    }

    fn archive(parts: &[(&str, &[u8], u8, &str)]) -> Vec<u8> {
        let mut a = Vec::new();
        for (name, data, t, link) in parts {
            a.extend_from_slice(&header(name, data.len(), *t, link));
            a.extend_from_slice(data);
            a.resize(a.len().div_ceil(512) * 512, 0);
        }
        a.extend_from_slice(&[0; 1024]);
        a
    }

    #[test]
    fn reads_files_dirs_and_links() {
        let a = archive(&[
            ("bin/", b"", b'5', ""),
            ("bin/busybox", &[7u8; 600], b'0', ""),
            ("bin/sh", b"", b'2', "busybox"),
        ]);
        let m: Vec<_> = members(&a).collect::<Result<_, _>>().unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!((m[0].path, m[0].kind), ("bin/", Kind::Dir));
        assert_eq!((m[1].path, m[1].kind, m[1].data.len(), m[1].mode), ("bin/busybox", Kind::File, 600, 0o755));
        assert!(m[1].data.iter().all(|&b| b == 7));
        assert_eq!((m[2].kind, m[2].link), (Kind::Symlink, "busybox"));
    }

    #[test]
    fn refuses_a_prefixed_name() {
        let mut a = archive(&[("f", b"", b'0', "")]);
        a[345] = b'p';
        a[148..156].copy_from_slice(b"        ");
        let sum: u32 = a[..512].iter().map(|&b| b as u32).sum();
        a[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
        assert_eq!(members(&a).next(), Some(Err(TarError::BadName { offset: 0 })));
    }

    #[test]
    fn refuses_bad_checksum_truncation_and_devices() {
        let mut a = archive(&[("f", b"abc", b'0', "")]);
        a[0] ^= 1;
        assert_eq!(members(&a).next(), Some(Err(TarError::BadHeader { offset: 0 })));
        let a = archive(&[("f", &[1u8; 100], b'0', "")]);
        assert_eq!(members(&a[..530]).next(), Some(Err(TarError::Truncated { offset: 0 })));
        let a = archive(&[("dev", b"", b'3', "")]);
        assert_eq!(
            members(&a).next(),
            Some(Err(TarError::Unsupported { offset: 0, typeflag: b'3' }))
        );
    }
}
