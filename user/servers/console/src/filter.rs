//! What a client's output may contain.  The owner line begins with
//! [`MARKER`] (U+258C LEFT HALF BLOCK, `▌`), which only the multiplexer
//! writes: it is removed from every client's output, also when a client
//! splits it across writes.  Output-only terminals (servers' log lines,
//! shown whatever terminal has the screen) also lose every control byte
//! but Tab, Newline and Carriage Return, and so every escape sequence:
//! they cannot move the cursor, clear the screen or recolour it.

use alloc::vec::Vec;

/// The owner line's first character, UTF-8.
pub const MARKER: &[u8] = "\u{258c}".as_bytes();

pub struct Filter {
    /// Bytes that began like the marker at the end of the last write.
    held: Vec<u8>,
    /// Control bytes (but \t \n \r) and DEL are dropped.
    plain: bool,
}

impl Filter {
    pub const fn new(plain: bool) -> Filter {
        Filter { held: Vec::new(), plain }
    }

    /// Appends `data` as allowed to `out`; a possible start of the
    /// marker at the end waits for the next write.
    pub fn apply(&mut self, data: &[u8], out: &mut Vec<u8>) {
        let mut input = core::mem::take(&mut self.held);
        input.extend_from_slice(data);
        let mut i = 0;
        while i < input.len() {
            let rest = &input[i..];
            if rest.starts_with(MARKER) {
                i += MARKER.len();
                continue;
            }
            if rest.len() < MARKER.len() && MARKER.starts_with(rest) {
                self.held.extend_from_slice(rest);
                break;
            }
            let b = input[i];
            if !self.plain || !(b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r') || b == 0x7f) {
                out.push(b);
            }
            i += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(plain: bool, writes: &[&[u8]]) -> Vec<u8> {
        let mut f = Filter::new(plain);
        let mut out = Vec::new();
        for w in writes {
            f.apply(w, &mut out);
        }
        out
    }

    #[test]
    fn the_marker_is_removed() {
        let fake = "\r\n\u{258c}[keep: vt1 shell]\r\n".as_bytes();
        assert_eq!(run(false, &[fake]), b"\r\n[keep: vt1 shell]\r\n");
    }

    #[test]
    fn a_marker_split_across_writes_is_removed() {
        let m = MARKER;
        assert_eq!(run(false, &[b"a", &m[..1], &m[1..2], &m[2..], b"b"]), b"ab");
        assert_eq!(run(false, &[&m[..2], &m[2..]]), b"");
    }

    #[test]
    fn a_near_marker_passes() {
        // The first two bytes of the marker, then something else.
        let m = MARKER;
        let mut w = Vec::from(&m[..2]);
        w.push(b'x');
        assert_eq!(run(false, &[&w]), w);
        // Other characters of the block: ▍ (U+258D) passes.
        assert_eq!(run(false, &["\u{258d}".as_bytes()]), "\u{258d}".as_bytes());
    }

    #[test]
    fn interactive_output_keeps_escapes() {
        assert_eq!(run(false, &[b"\x1b[2J\x08x"]), b"\x1b[2J\x08x");
    }

    #[test]
    fn plain_output_loses_control_bytes() {
        assert_eq!(run(true, &[b"a\x1b[2Jb\tc\r\n\x7f\x08"]), b"a[2Jb\tc\r\n");
    }
}
