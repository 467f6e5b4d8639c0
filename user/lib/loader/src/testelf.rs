//! Writes tiny static ELF64 executables for tests: an ELF header, one
//! program header per segment, then each segment's bytes.  Used by the
//! host tests of [`crate::program`] and by ktest, which loads such files
//! (good and deliberately bad ones) without needing a second real program.

/// Segment flags (p_flags).
pub const PF_RX: u32 = 5;
pub const PF_R: u32 = 4;
pub const PF_RW: u32 = 6;
pub const PF_RWX: u32 = 7;

/// One PT_LOAD segment: `data` is its file contents, `memsz` its size in
/// memory (zero-filled past `data`).
#[derive(Clone, Copy, Debug)]
pub struct TestSegment<'a> {
    pub flags: u32,
    pub vaddr: u64,
    pub memsz: u64,
    pub data: &'a [u8],
}

const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;

fn put(buf: &mut [u8], at: usize, bytes: &[u8]) {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
}

/// Writes the file into `buf`; returns its length, or None when `buf` is
/// too small.
pub fn build(buf: &mut [u8], entry: u64, segments: &[TestSegment]) -> Option<usize> {
    let table_end = EHDR_SIZE + PHDR_SIZE * segments.len();
    let len = table_end + segments.iter().map(|s| s.data.len()).sum::<usize>();
    if len > buf.len() {
        return None;
    }
    buf[..len].fill(0);
    put(buf, 0, b"\x7fELF\x02\x01\x01");
    put(buf, 16, &2u16.to_le_bytes()); // e_type = ET_EXEC
    put(buf, 18, &62u16.to_le_bytes()); // e_machine = EM_X86_64
    put(buf, 20, &1u32.to_le_bytes()); // e_version
    put(buf, 24, &entry.to_le_bytes());
    put(buf, 32, &(EHDR_SIZE as u64).to_le_bytes()); // e_phoff
    put(buf, 52, &(EHDR_SIZE as u16).to_le_bytes()); // e_ehsize
    put(buf, 54, &(PHDR_SIZE as u16).to_le_bytes()); // e_phentsize
    put(buf, 56, &(segments.len() as u16).to_le_bytes()); // e_phnum
    let mut offset = table_end;
    for (i, s) in segments.iter().enumerate() {
        let ph = EHDR_SIZE + i * PHDR_SIZE;
        put(buf, ph, &1u32.to_le_bytes()); // PT_LOAD
        put(buf, ph + 4, &s.flags.to_le_bytes());
        put(buf, ph + 8, &(offset as u64).to_le_bytes());
        put(buf, ph + 16, &s.vaddr.to_le_bytes());
        put(buf, ph + 24, &s.vaddr.to_le_bytes()); // p_paddr
        put(buf, ph + 32, &(s.data.len() as u64).to_le_bytes());
        put(buf, ph + 40, &s.memsz.to_le_bytes());
        put(buf, ph + 48, &0x1000u64.to_le_bytes());
        put(buf, offset, s.data);
        offset += s.data.len();
    }
    Some(len)
}
