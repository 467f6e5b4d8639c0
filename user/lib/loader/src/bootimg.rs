//! The boot image built by tools/mkimage.py:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 8 | magic `KEEPIMG1` |
//! | 8 | 4 | entry count (u32 LE) |
//! | 12 | 4 | reserved |
//! | 16 | 64 × count | entries: name (48 bytes, NUL-padded), offset (u64 LE, 4096-aligned, from image start), size (u64 LE) |
//!
//! Everything is checked when the image is parsed, so lookups afterwards
//! cannot go out of bounds.

use core::fmt;

pub const MAGIC: &[u8; 8] = b"KEEPIMG1";
pub const HEADER_SIZE: usize = 16;
pub const ENTRY_SIZE: usize = 64;
pub const NAME_SIZE: usize = 48;
/// Alignment of every program's data in the image.
pub const DATA_ALIGN: u64 = 4096;

/// Why a boot image was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    TooShort {
        len: usize,
    },
    BadMagic,
    TableOutsideImage {
        count: u32,
    },
    NameNotTerminated {
        index: usize,
    },
    NameInvalid {
        index: usize,
    },
    Misaligned {
        index: usize,
        offset: u64,
    },
    DataOutsideImage {
        index: usize,
        offset: u64,
        size: u64,
    },
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ImageError::TooShort { len } => {
                write!(f, "{len} bytes is too short for a boot-image header")
            }
            ImageError::BadMagic => write!(f, "bad magic (expected KEEPIMG1)"),
            ImageError::TableOutsideImage { count } => {
                write!(f, "a table of {count} entries does not fit in the image")
            }
            ImageError::NameNotTerminated { index } => {
                write!(f, "entry {index}: name is not NUL-terminated")
            }
            ImageError::NameInvalid { index } => {
                write!(f, "entry {index}: name is empty or not UTF-8")
            }
            ImageError::Misaligned { index, offset } => {
                write!(f, "entry {index}: offset {offset:#x} is not 4096-aligned")
            }
            ImageError::DataOutsideImage {
                index,
                offset,
                size,
            } => write!(
                f,
                "entry {index}: {size} bytes at offset {offset:#x} lie outside the image"
            ),
        }
    }
}

/// One program in the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    pub name: &'a str,
    pub offset: u64,
    pub data: &'a [u8],
}

/// A validated boot image.
#[derive(Clone, Copy, Debug)]
pub struct BootImage<'a> {
    bytes: &'a [u8],
    count: usize,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

impl<'a> BootImage<'a> {
    /// Checks the whole image: header, table and every entry.
    pub fn parse(bytes: &'a [u8]) -> Result<BootImage<'a>, ImageError> {
        if bytes.len() < HEADER_SIZE {
            return Err(ImageError::TooShort { len: bytes.len() });
        }
        if &bytes[..8] != MAGIC {
            return Err(ImageError::BadMagic);
        }
        let count = u32::from_le_bytes(bytes[8..12].try_into().unwrap());
        let table_end = (count as usize)
            .checked_mul(ENTRY_SIZE)
            .and_then(|t| t.checked_add(HEADER_SIZE));
        if table_end.is_none_or(|end| end > bytes.len()) {
            return Err(ImageError::TableOutsideImage { count });
        }
        let image = BootImage {
            bytes,
            count: count as usize,
        };
        for index in 0..image.count {
            image.entry_checked(index)?;
        }
        Ok(image)
    }

    fn entry_checked(&self, index: usize) -> Result<Entry<'a>, ImageError> {
        let raw = &self.bytes[HEADER_SIZE + index * ENTRY_SIZE..][..ENTRY_SIZE];
        let name = &raw[..NAME_SIZE];
        let len = name
            .iter()
            .position(|&c| c == 0)
            .ok_or(ImageError::NameNotTerminated { index })?;
        let name = match core::str::from_utf8(&name[..len]) {
            Ok(s) if !s.is_empty() => s,
            _ => return Err(ImageError::NameInvalid { index }),
        };
        let offset = u64_at(raw, NAME_SIZE);
        let size = u64_at(raw, NAME_SIZE + 8);
        if !offset.is_multiple_of(DATA_ALIGN) {
            return Err(ImageError::Misaligned { index, offset });
        }
        let outside = ImageError::DataOutsideImage {
            index,
            offset,
            size,
        };
        let end = offset.checked_add(size).ok_or(outside)?;
        if end > self.bytes.len() as u64 {
            return Err(outside);
        }
        let data = &self.bytes[offset as usize..end as usize];
        Ok(Entry { name, offset, data })
    }

    /// The raw bytes of the whole image.
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn entries(&self) -> impl Iterator<Item = Entry<'a>> + '_ {
        // Every entry was checked by parse().
        (0..self.count).filter_map(|i| self.entry_checked(i).ok())
    }

    pub fn find(&self, name: &str) -> Option<Entry<'a>> {
        self.entries().find(|e| e.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(entries: &[(&str, u64, u64)], len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        b[..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&(entries.len() as u32).to_le_bytes());
        for (i, (name, off, size)) in entries.iter().enumerate() {
            let e = HEADER_SIZE + i * ENTRY_SIZE;
            b[e..e + name.len()].copy_from_slice(name.as_bytes());
            b[e + 48..e + 56].copy_from_slice(&off.to_le_bytes());
            b[e + 56..e + 64].copy_from_slice(&size.to_le_bytes());
        }
        b
    }

    #[test]
    fn parses_entries_and_finds_by_name() {
        let mut b = image(&[("root", 4096, 10), ("hello", 8192, 4096)], 12288);
        b[4096] = 0x7f;
        b[8192 + 4095] = 9;
        let img = BootImage::parse(&b).unwrap();
        assert_eq!(img.len(), 2);
        let names: Vec<_> = img.entries().map(|e| e.name).collect();
        assert_eq!(names, ["root", "hello"]);
        let root = img.find("root").unwrap();
        assert_eq!(root.data.len(), 10);
        assert_eq!(root.data[0], 0x7f);
        assert_eq!(img.find("hello").unwrap().data[4095], 9);
        assert!(img.find("ktest").is_none());
    }

    #[test]
    fn empty_image_is_valid() {
        let b = image(&[], 16);
        let img = BootImage::parse(&b).unwrap();
        assert!(img.is_empty());
    }

    #[test]
    fn refuses_short_and_bad_magic() {
        assert_eq!(
            BootImage::parse(b"KEEPIMG1").unwrap_err(),
            ImageError::TooShort { len: 8 }
        );
        let mut b = image(&[], 16);
        b[0] = b'X';
        assert_eq!(BootImage::parse(&b).unwrap_err(), ImageError::BadMagic);
    }

    #[test]
    fn refuses_table_beyond_end_even_with_huge_count() {
        let mut b = image(&[("a", 0, 0)], 16 + 64);
        b[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(
            BootImage::parse(&b).unwrap_err(),
            ImageError::TableOutsideImage { count: 2 }
        );
        b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(matches!(
            BootImage::parse(&b),
            Err(ImageError::TableOutsideImage { .. })
        ));
    }

    #[test]
    fn refuses_bad_entries() {
        let b = image(&[("a", 4096, 1)], 4096);
        assert!(matches!(
            BootImage::parse(&b),
            Err(ImageError::DataOutsideImage { index: 0, .. })
        ));
        let b = image(&[("a", 100, 1)], 4096);
        assert!(matches!(
            BootImage::parse(&b),
            Err(ImageError::Misaligned {
                index: 0,
                offset: 100
            })
        ));
        // offset + size overflows u64.
        let b = image(&[("a", 4096, u64::MAX)], 8192);
        assert!(matches!(
            BootImage::parse(&b),
            Err(ImageError::DataOutsideImage { .. })
        ));
        let b = image(&[("", 0, 0)], 4096);
        assert_eq!(
            BootImage::parse(&b).unwrap_err(),
            ImageError::NameInvalid { index: 0 }
        );
        let long = "x".repeat(48);
        let b = image(&[(&long, 0, 0)], 4096);
        assert_eq!(
            BootImage::parse(&b).unwrap_err(),
            ImageError::NameNotTerminated { index: 0 }
        );
    }

    #[test]
    fn errors_display() {
        let e = ImageError::DataOutsideImage {
            index: 1,
            offset: 0x2000,
            size: 5,
        };
        assert_eq!(
            e.to_string(),
            "entry 1: 5 bytes at offset 0x2000 lie outside the image"
        );
    }
}
