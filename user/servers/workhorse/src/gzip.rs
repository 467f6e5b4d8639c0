//! The root file system archive is gzip-compressed (RFC 1952) in the boot
//! image; the server inflates it once at start with `miniz_oxide`.  The
//! header is read here, the size comes from the trailer (ISIZE), and the
//! output is one allocation of exactly that size.  The CRC-32 is not
//! checked (the tar headers carry checksums of their own).

use alloc::vec::Vec;

const FHCRC: u8 = 2;
const FEXTRA: u8 = 4;
const FNAME: u8 = 8;
const FCOMMENT: u8 = 16;

/// Whether `data` starts like a gzip file (magic and the deflate method).
pub fn is_gzip(data: &[u8]) -> bool {
    data.starts_with(&[0x1f, 0x8b, 8])
}

/// The inflated contents of gzip file `data` (one member).
pub fn inflate(data: &[u8]) -> Result<Vec<u8>, &'static str> {
    use miniz_oxide::inflate::TINFLStatus;
    use miniz_oxide::inflate::core::{DecompressorOxide, decompress, inflate_flags};
    let bad = "bad gzip header";
    if !is_gzip(data) || data.len() < 18 {
        return Err(bad);
    }
    let flags = data[3];
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let n = data.get(at..at + 2).ok_or(bad)?;
        at += 2 + u16::from_le_bytes([n[0], n[1]]) as usize;
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            at += data.get(at..).ok_or(bad)?.iter().position(|&b| b == 0).ok_or(bad)? + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    if data.len() < at + 8 {
        return Err(bad);
    }
    let tail = &data[data.len() - 4..];
    let size = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]) as usize;
    let body = &data[at..data.len() - 8];
    // Deflate cannot expand more than 1032 times: a larger size is a
    // damaged or truncated file, not worth allocating for.
    if size > body.len().saturating_mul(1032) + 64 {
        return Err("corrupt gzip data");
    }
    let mut out = Vec::new();
    out.try_reserve_exact(size).map_err(|_| "no memory to inflate it")?;
    out.resize(size, 0);
    let mut d = alloc::boxed::Box::new(DecompressorOxide::new());
    let (status, _, n) = decompress(&mut d, body, &mut out, 0, inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF);
    if status != TINFLStatus::Done || n != size {
        return Err("corrupt gzip data");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `gzip.compress(b"hello keep\n" * 20, mtime=0)` (Python).
    const HELLO: [u8; 34] = [
        31, 139, 8, 0, 0, 0, 0, 0, 2, 3, 203, 72, 205, 201, 201, 87, 200, 78, 77, 45, 224, 202, 24, 110, 76, 0, 202,
        116, 227, 85, 220, 0, 0, 0,
    ];

    #[test]
    fn inflates_what_python_wrote() {
        assert_eq!(inflate(&HELLO).unwrap(), b"hello keep\n".repeat(20));
    }

    #[test]
    fn takes_a_file_name_in_the_header() {
        let mut g = HELLO.to_vec();
        g[3] = FNAME;
        g.splice(10..10, b"rootfs.tar\0".iter().copied());
        assert_eq!(inflate(&g).unwrap().len(), 220);
    }

    #[test]
    fn refuses_bad_input() {
        assert!(!is_gzip(b"ustar"));
        assert_eq!(inflate(&HELLO[..12]), Err("bad gzip header"));
        let mut g = HELLO.to_vec();
        g[3] = FNAME; // a name that never ends
        assert!(inflate(&g).is_err());
        let mut g = HELLO.to_vec();
        g[30] = 221; // the size in the trailer is wrong
        assert_eq!(inflate(&g), Err("corrupt gzip data"));
        let mut g = HELLO.to_vec();
        g[10] = 0xff; // a deflate block of the reserved type 3
        assert!(inflate(&g).is_err());
        assert!(inflate(&HELLO[..20]).is_err()); // truncated
    }
}
