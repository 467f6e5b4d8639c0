//! Validation of static ELF64 x86-64 executables and the page-by-page plan
//! for loading them.  Nothing here touches the kernel, so every rule is
//! tested on the host.
//!
//! Rules: ELF64, little-endian, EM_X86_64, ET_EXEC; every PT_LOAD segment
//! lies inside the file (p_offset + p_filesz) and inside [4096, USER_TOP)
//! in memory, has p_filesz <= p_memsz, is not both writable and executable,
//! and starts on a page above the last page of the segment before it (so no
//! page is shared by two segments with different rights); the entry point
//! lies in an executable segment.  All arithmetic is overflow-checked.

use core::fmt;

use elf::ElfBytes;
use elf::abi::{EM_X86_64, ET_EXEC, PF_W, PF_X, PT_LOAD};
use elf::endian::LittleEndian;
use keep_abi::{layout::USER_TOP, rights};

use crate::PAGE_SIZE;

/// The most PT_LOAD segments a program may have.
pub const MAX_SEGMENTS: usize = 16;

/// Why an ELF file was refused.
#[derive(Debug)]
pub enum ElfError {
    TooShort {
        len: usize,
    },
    BadMagic,
    NotElf64,
    NotLittleEndian,
    /// The header or program-header table is malformed.
    Malformed(elf::ParseError),
    WrongMachine(u16),
    NotExecutable(u16),
    NoLoadSegments,
    TooManySegments,
    SegmentOutsideFile {
        index: usize,
    },
    FileszExceedsMemsz {
        index: usize,
    },
    SegmentOutsideUserHalf {
        index: usize,
    },
    WriteAndExec {
        index: usize,
    },
    SegmentsOverlap {
        index: usize,
    },
    EntryNotExecutable {
        entry: u64,
    },
}

impl fmt::Display for ElfError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ElfError::TooShort { len } => write!(f, "{len} bytes is too short for an ELF header"),
            ElfError::BadMagic => write!(f, "not an ELF file (bad magic)"),
            ElfError::NotElf64 => write!(f, "not a 64-bit ELF file"),
            ElfError::NotLittleEndian => write!(f, "not a little-endian ELF file"),
            ElfError::Malformed(e) => write!(f, "malformed ELF file: {e}"),
            ElfError::WrongMachine(m) => write!(f, "machine {m} is not x86-64"),
            ElfError::NotExecutable(t) => {
                write!(f, "ELF type {t} is not a static executable (ET_EXEC)")
            }
            ElfError::NoLoadSegments => write!(f, "no loadable segment"),
            ElfError::TooManySegments => {
                write!(f, "more than {MAX_SEGMENTS} loadable segments")
            }
            ElfError::SegmentOutsideFile { index } => {
                write!(f, "segment {index} extends past the end of the file")
            }
            ElfError::FileszExceedsMemsz { index } => {
                write!(f, "segment {index} has p_filesz > p_memsz")
            }
            ElfError::SegmentOutsideUserHalf { index } => {
                write!(f, "segment {index} lies outside [0x1000, {USER_TOP:#x})")
            }
            ElfError::WriteAndExec { index } => {
                write!(f, "segment {index} is both writable and executable")
            }
            ElfError::SegmentsOverlap { index } => write!(
                f,
                "segment {index} shares a page with the one before it or is out of order"
            ),
            ElfError::EntryNotExecutable { entry } => {
                write!(f, "entry point {entry:#x} is not in an executable segment")
            }
        }
    }
}

/// A validated PT_LOAD segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub vaddr: u64,
    pub memsz: u64,
    pub offset: u64,
    pub filesz: u64,
    /// Mapping rights: READ, plus WRITE or EXEC.
    pub rights: u64,
}

/// Bytes to copy from the file into one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CopyPlan {
    pub file_offset: usize,
    pub page_offset: usize,
    pub len: usize,
}

/// One page of a segment: where it goes, with which rights, and what part
/// of the file it holds (None: all zero).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PagePlan {
    pub vaddr: u64,
    pub rights: u64,
    pub copy: Option<CopyPlan>,
}

const fn page_down(a: u64) -> u64 {
    a & !(PAGE_SIZE - 1)
}

impl Segment {
    /// First page and end of the last page (end is exclusive).
    pub fn page_range(&self) -> (u64, u64) {
        // Validation guarantees vaddr + memsz <= USER_TOP, so no overflow.
        let end = self.vaddr + self.memsz;
        (page_down(self.vaddr), page_down(end + PAGE_SIZE - 1))
    }

    /// The pages of this segment, in address order.
    pub fn pages(&self) -> impl Iterator<Item = PagePlan> + '_ {
        let (first, end) = self.page_range();
        let file_end = self.vaddr + self.filesz;
        (first..end).step_by(PAGE_SIZE as usize).map(move |page| {
            let from = page.max(self.vaddr);
            let to = (page + PAGE_SIZE).min(file_end);
            let copy = (from < to).then(|| CopyPlan {
                file_offset: (self.offset + (from - self.vaddr)) as usize,
                page_offset: (from - page) as usize,
                len: (to - from) as usize,
            });
            PagePlan {
                vaddr: page,
                rights: self.rights,
                copy,
            }
        })
    }
}

/// A validated executable.
#[derive(Debug)]
pub struct Program<'a> {
    pub data: &'a [u8],
    pub entry: u64,
    segments: [Segment; MAX_SEGMENTS],
    count: usize,
}

impl<'a> Program<'a> {
    /// Checks `data` against every rule in the module documentation.
    pub fn parse(data: &'a [u8]) -> Result<Program<'a>, ElfError> {
        if data.len() < 64 {
            return Err(ElfError::TooShort { len: data.len() });
        }
        if &data[..4] != b"\x7fELF" {
            return Err(ElfError::BadMagic);
        }
        if data[4] != elf::abi::ELFCLASS64 {
            return Err(ElfError::NotElf64);
        }
        if data[5] != elf::abi::ELFDATA2LSB {
            return Err(ElfError::NotLittleEndian);
        }
        let file = ElfBytes::<LittleEndian>::minimal_parse(data).map_err(ElfError::Malformed)?;
        let ehdr = &file.ehdr;
        if ehdr.e_machine != EM_X86_64 {
            return Err(ElfError::WrongMachine(ehdr.e_machine));
        }
        if ehdr.e_type != ET_EXEC {
            return Err(ElfError::NotExecutable(ehdr.e_type));
        }
        let mut program = Program {
            data,
            entry: ehdr.e_entry,
            segments: [Segment::default(); MAX_SEGMENTS],
            count: 0,
        };
        let phdrs = file.segments().ok_or(ElfError::NoLoadSegments)?;
        for (index, ph) in phdrs.iter().enumerate() {
            if ph.p_type != PT_LOAD || ph.p_memsz == 0 {
                continue;
            }
            if ph.p_filesz > ph.p_memsz {
                return Err(ElfError::FileszExceedsMemsz { index });
            }
            let file_end = ph.p_offset.checked_add(ph.p_filesz);
            if file_end.is_none_or(|end| end > data.len() as u64) {
                return Err(ElfError::SegmentOutsideFile { index });
            }
            let mem_end = ph.p_vaddr.checked_add(ph.p_memsz);
            if ph.p_vaddr < PAGE_SIZE || mem_end.is_none_or(|end| end > USER_TOP) {
                return Err(ElfError::SegmentOutsideUserHalf { index });
            }
            let (w, x) = (ph.p_flags & PF_W != 0, ph.p_flags & PF_X != 0);
            if w && x {
                return Err(ElfError::WriteAndExec { index });
            }
            let seg = Segment {
                vaddr: ph.p_vaddr,
                memsz: ph.p_memsz,
                offset: ph.p_offset,
                filesz: ph.p_filesz,
                rights: rights::READ
                    | if w { rights::WRITE } else { 0 }
                    | if x { rights::EXEC } else { 0 },
            };
            if let Some(prev) = program.segments().last()
                && seg.page_range().0 < prev.page_range().1
            {
                return Err(ElfError::SegmentsOverlap { index });
            }
            if program.count == MAX_SEGMENTS {
                return Err(ElfError::TooManySegments);
            }
            program.segments[program.count] = seg;
            program.count += 1;
        }
        if program.count == 0 {
            return Err(ElfError::NoLoadSegments);
        }
        let entry = program.entry;
        let in_exec = program
            .segments()
            .iter()
            .any(|s| s.rights & rights::EXEC != 0 && entry >= s.vaddr && entry - s.vaddr < s.memsz);
        if !in_exec {
            return Err(ElfError::EntryNotExecutable { entry });
        }
        Ok(program)
    }

    pub fn segments(&self) -> &[Segment] {
        &self.segments[..self.count]
    }

    /// Every page to load, segment by segment in address order.
    pub fn pages(&self) -> impl Iterator<Item = PagePlan> + '_ {
        self.segments().iter().flat_map(|s| s.pages())
    }

    /// Pages the program occupies in memory.
    pub fn page_count(&self) -> u64 {
        self.segments()
            .iter()
            .map(|s| {
                let (a, b) = s.page_range();
                (b - a) / PAGE_SIZE
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testelf::{self, TestSegment};
    use keep_abi::rights::{EXEC, READ, WRITE};

    const CODE: &[u8] = &[0x0f, 0x0b];

    fn build(entry: u64, segs: &[TestSegment]) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let n = testelf::build(&mut buf, entry, segs).unwrap();
        buf.truncate(n);
        buf
    }

    fn text(vaddr: u64, data: &'static [u8]) -> TestSegment<'static> {
        TestSegment {
            flags: testelf::PF_RX,
            vaddr,
            memsz: data.len() as u64,
            data,
        }
    }

    #[test]
    fn accepts_a_small_program_and_plans_its_pages() {
        let data = [7u8; 200];
        let elf = build(
            0x401000,
            &[
                text(0x401000, CODE),
                // Starts mid-page, crosses a page boundary, with .bss after.
                TestSegment {
                    flags: testelf::PF_RW,
                    vaddr: 0x402f80,
                    memsz: 0x2000,
                    data: &data,
                },
            ],
        );
        let p = Program::parse(&elf).unwrap();
        assert_eq!(p.entry, 0x401000);
        assert_eq!(p.segments().len(), 2);
        assert_eq!(p.segments()[0].rights, READ | EXEC);
        assert_eq!(p.segments()[1].rights, READ | WRITE);
        assert_eq!(p.page_count(), 1 + 3);
        let pages: Vec<_> = p.pages().collect();
        assert_eq!(pages[0].vaddr, 0x401000);
        let c = pages[0].copy.unwrap();
        assert_eq!((c.page_offset, c.len), (0, 2));
        assert_eq!(&elf[c.file_offset..c.file_offset + 2], CODE);
        // The data segment: 0x80 bytes in its first page, 200 - 0x80 in the next.
        let seg = p.segments()[1];
        assert_eq!(pages[1].vaddr, 0x402000);
        let c1 = pages[1].copy.unwrap();
        assert_eq!((c1.page_offset, c1.len), (0xf80, 0x80));
        assert_eq!(c1.file_offset as u64, seg.offset);
        assert_eq!(pages[2].vaddr, 0x403000);
        let c2 = pages[2].copy.unwrap();
        assert_eq!((c2.page_offset, c2.len), (0, 200 - 0x80));
        assert_eq!(c2.file_offset as u64, seg.offset + 0x80);
        // Pure .bss page: nothing to copy.
        assert_eq!(pages[3].vaddr, 0x404000);
        assert_eq!(pages[3].copy, None);
        assert!(pages[1..].iter().all(|p| p.rights == READ | WRITE));
    }

    #[test]
    fn refuses_wrong_headers() {
        let good = build(0x401000, &[text(0x401000, CODE)]);
        let mut bad = good.clone();
        bad[0] = 0;
        assert!(matches!(Program::parse(&bad), Err(ElfError::BadMagic)));
        let mut bad = good.clone();
        bad[4] = 1;
        assert!(matches!(Program::parse(&bad), Err(ElfError::NotElf64)));
        let mut bad = good.clone();
        bad[5] = 2;
        assert!(matches!(
            Program::parse(&bad),
            Err(ElfError::NotLittleEndian)
        ));
        let mut bad = good.clone();
        bad[18] = 3; // e_machine = EM_386
        assert!(matches!(
            Program::parse(&bad),
            Err(ElfError::WrongMachine(3))
        ));
        let mut bad = good.clone();
        bad[16] = 3; // e_type = ET_DYN
        assert!(matches!(
            Program::parse(&bad),
            Err(ElfError::NotExecutable(3))
        ));
        assert!(matches!(
            Program::parse(&good[..40]),
            Err(ElfError::TooShort { len: 40 })
        ));
    }

    #[test]
    fn refuses_truncated_files() {
        let good = build(0x401000, &[text(0x401000, CODE)]);
        // Cut inside the program-header table.
        assert!(matches!(
            Program::parse(&good[..80]),
            Err(ElfError::Malformed(_))
        ));
        // Cut inside the segment's bytes.
        assert!(matches!(
            Program::parse(&good[..good.len() - 1]),
            Err(ElfError::SegmentOutsideFile { index: 0 })
        ));
    }

    #[test]
    fn refuses_huge_program_header_count() {
        let mut bad = build(0x401000, &[text(0x401000, CODE)]);
        bad[56..58].copy_from_slice(&0xfffeu16.to_le_bytes()); // e_phnum
        assert!(matches!(Program::parse(&bad), Err(ElfError::Malformed(_))));
    }

    #[test]
    fn refuses_bad_segments() {
        let wx = TestSegment {
            flags: testelf::PF_RWX,
            ..text(0x401000, CODE)
        };
        assert!(matches!(
            Program::parse(&build(0x401000, &[wx])),
            Err(ElfError::WriteAndExec { index: 0 })
        ));
        let kernel = text(0xffff_ffff_8000_0000, CODE);
        assert!(matches!(
            Program::parse(&build(0xffff_ffff_8000_0000, &[kernel])),
            Err(ElfError::SegmentOutsideUserHalf { index: 0 })
        ));
        let straddles = TestSegment {
            memsz: 0x2000,
            ..text(USER_TOP - 0x1000, CODE)
        };
        assert!(matches!(
            Program::parse(&build(USER_TOP - 0x1000, &[straddles])),
            Err(ElfError::SegmentOutsideUserHalf { index: 0 })
        ));
        let wraps = TestSegment {
            memsz: u64::MAX,
            ..text(0x401000, CODE)
        };
        assert!(matches!(
            Program::parse(&build(0x401000, &[wraps])),
            Err(ElfError::SegmentOutsideUserHalf { index: 0 })
        ));
        let page_zero = text(0x10, CODE);
        assert!(matches!(
            Program::parse(&build(0x10, &[page_zero])),
            Err(ElfError::SegmentOutsideUserHalf { index: 0 })
        ));
        let short = TestSegment {
            memsz: 1,
            ..text(0x401000, CODE)
        };
        assert!(matches!(
            Program::parse(&build(0x401000, &[short])),
            Err(ElfError::FileszExceedsMemsz { index: 0 })
        ));
    }

    #[test]
    fn refuses_segments_sharing_a_page() {
        let data = TestSegment {
            flags: testelf::PF_RW,
            vaddr: 0x401800,
            memsz: 8,
            data: &[1; 8],
        };
        assert!(matches!(
            Program::parse(&build(0x401000, &[text(0x401000, CODE), data])),
            Err(ElfError::SegmentsOverlap { index: 1 })
        ));
        // Out of order counts as overlap, too.
        let low = TestSegment {
            vaddr: 0x300000,
            ..data
        };
        assert!(matches!(
            Program::parse(&build(0x401000, &[text(0x401000, CODE), low])),
            Err(ElfError::SegmentsOverlap { index: 1 })
        ));
    }

    #[test]
    fn refuses_entry_outside_code() {
        let data = TestSegment {
            flags: testelf::PF_RW,
            vaddr: 0x402000,
            memsz: 8,
            data: &[1; 8],
        };
        for entry in [0x402000, 0x401002, 0] {
            assert!(matches!(
                Program::parse(&build(entry, &[text(0x401000, CODE), data])),
                Err(ElfError::EntryNotExecutable { .. })
            ));
        }
        assert!(matches!(
            Program::parse(&build(0x402000, &[data])),
            Err(ElfError::EntryNotExecutable { .. })
        ));
    }

    #[test]
    fn refuses_no_segments() {
        assert!(matches!(
            Program::parse(&build(0x401000, &[])),
            Err(ElfError::NoLoadSegments)
        ));
    }

    #[test]
    fn errors_display() {
        let e = ElfError::WriteAndExec { index: 2 };
        assert_eq!(e.to_string(), "segment 2 is both writable and executable");
    }
}
