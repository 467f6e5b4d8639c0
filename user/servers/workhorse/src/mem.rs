//! A Linux process's memory: its areas (what mmap, brk and the ELF loader
//! reserved, with their protection) and the pages populated in them, each a
//! frame of the memory pool mapped both into the process's address space
//! and once into the server's own (where the server reads and writes it for
//! system calls).  Pages are populated when first touched: a page fault in
//! an area, or a system call reading or writing there.  Frames are shared
//! (between fork's parent and child, and from a file's page cache) and
//! counted (`Rc<Frame>`): a private page whose frame may be another's is
//! *copy-on-write*, mapped without WRITE, and the first write to it, by the
//! program or by the server for it, copies the frame, or only maps it
//! writable when the count says it is the page's alone.  MAP_SHARED
//! anonymous areas stay shared across fork.

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;

use keep_abi::{Aspace, SELF_ASPACE, rights};

use crate::env::env;
use crate::linux::errno::*;
use crate::vfs::{Ino, fs};
pub(crate) use crate::linux::mm::{PROT_EXEC, PROT_READ, PROT_WRITE};

pub const PAGE: u64 = 4096;
/// A shared file mapping's page past the end of its file: a fault there
/// is SIGBUS, a system call's access EFAULT (never returned to a program).
pub const BEYOND_EOF: i64 = 100_001;

/// The part of the address space Linux processes get (above it: nothing);
/// a pointer outside it is EFAULT.
pub const GUEST_TOP: u64 = 0x0000_1000_0000_0000;
/// The page holding the server's trampoline (`wrfsbase %r11; jmp *%rcx`),
/// read and execute, in every process.
pub const TRAMPOLINE: u64 = GUEST_TOP - PAGE;
/// Top of the initial stack, and the stack area's size.
pub const STACK_TOP: u64 = TRAMPOLINE - 16 * PAGE;
pub const STACK_SIZE: u64 = 8 << 20;
/// mmap without a hint takes the highest free range below this.
pub const MMAP_TOP: u64 = STACK_TOP - STACK_SIZE - 16 * PAGE;

/// Bytes of areas one process may reserve (like RLIMIT_AS): mmap and brk
/// say ENOMEM past it, so that malloc fails before memory runs out.
pub const MAX_RESERVED: u64 = 192 << 20;

/// Whether `mm` may reserve `n` more bytes of areas: within MAX_RESERVED,
/// and (like Linux's heuristic overcommit) not more than the frames the
/// server could still give, so that a program growing its heap gets
/// ENOMEM (malloc NULL) rather than a fault with no frame behind it.
pub fn may_reserve(mm: &Mm, n: u64) -> bool {
    mm.reserved() + n <= MAX_RESERVED && n.div_ceil(PAGE) <= env().frames_left()
}

/// A frame of the server's bank (frames.rs): its capability (a slot of the
/// server) and where it is mapped in the server.  Dropping it unmaps it and
/// gives it back to the server's free list;
/// whoever mapped it in a process has unmapped it there first (or destroyed
/// the address space).
pub struct Frame {
    pub slot: u64,
    pub local: u64,
}

impl Frame {
    /// A frame mapped in the server; true when it may hold old bytes.
    fn alloc() -> Result<(Rc<Frame>, bool), i64> {
        let e = env();
        if e.frames >= e.max_frames {
            return Err(ENOMEM);
        }
        if let Some((slot, local)) = crate::frames::take_mapped() {
            e.frames += 1;
            return Ok((Rc::new(Frame { slot, local }), true));
        }
        let slot = e.slot().map_err(|_| ENOMEM)?;
        let Ok(used) = crate::frames::page(slot) else {
            e.free_slot(slot);
            return Err(ENOMEM);
        };
        let local = e.local();
        if SELF_ASPACE.map(slot, local, rights::READ | rights::WRITE).is_err() {
            crate::frames::give_back(slot);
            e.free_local(local);
            return Err(ENOMEM);
        }
        e.frames += 1;
        Ok((Rc::new(Frame { slot, local }), used))
    }

    /// A zeroed frame.
    pub fn new() -> Result<Rc<Frame>, i64> {
        let (f, used) = Frame::alloc()?;
        if used {
            zero(f.bytes_mut());
        }
        Ok(f)
    }

    /// A frame holding `bytes` at `offset`, zeros around them.
    pub fn with(bytes: &[u8], offset: usize) -> Result<Rc<Frame>, i64> {
        let (f, used) = Frame::alloc()?;
        let b = f.bytes_mut();
        let end = offset + bytes.len();
        if used {
            zero(&mut b[..offset]);
            zero(&mut b[end..]);
        }
        copy(&mut b[offset..end], bytes);
        Ok(f)
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: mapped readable and writable at `local` while self lives.
        unsafe { core::slice::from_raw_parts(self.local as *const u8, PAGE as usize) }
    }

    #[allow(clippy::mut_from_ref)]
    pub fn bytes_mut(&self) -> &mut [u8] {
        // SAFETY: as above; the server is single threaded and no caller
        // keeps two of these slices at once.
        unsafe { core::slice::from_raw_parts_mut(self.local as *mut u8, PAGE as usize) }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // Stays mapped in the server for the next Frame::alloc.
        crate::frames::give_back_mapped(self.slot, self.local);
        env().frames -= 1;
    }
}

/// Zeroes `b` eight bytes at a time where it can (a page's worth is 512
/// stores where a byte loop, `rep stosb`, is 4,096 instructions under
/// QEMU's counting; Linux clears pages the same way, `clear_page_rep`).
fn zero(b: &mut [u8]) {
    let head = b.as_ptr().align_offset(8).min(b.len());
    let words = (b.len() - head) / 8;
    b[..head].fill(0);
    // SAFETY: `words` 8-byte words from an 8-aligned address inside `b`.
    unsafe {
        core::arch::asm!("rep stosq", inout("rcx") words => _, inout("rdi") b.as_mut_ptr().add(head) => _,
                         in("rax") 0u64, options(nostack, preserves_flags));
    }
    b[head + words * 8..].fill(0);
}

/// Copies `src` into `dst` (the same length) eight bytes at a time where
/// it can (as `zero`; Linux's `copy_page` does the same).
fn copy(dst: &mut [u8], src: &[u8]) {
    let words = dst.len() / 8;
    // SAFETY: `words` 8-byte words inside both slices (of one length), which
    // do not overlap (a frame is written only through `dst`).
    unsafe {
        core::arch::asm!("rep movsq", inout("rcx") words => _, inout("rdi") dst.as_mut_ptr() => _,
                         inout("rsi") src.as_ptr() => _, options(nostack, preserves_flags));
    }
    dst[words * 8..].copy_from_slice(&src[words * 8..]);
}

/// Keep rights for a Linux protection (Keep refuses writable+executable
/// mappings: such a page is mapped writable here, and read-execute while
/// it runs: `Page::exec_view`).
pub fn keep_rights(prot: u32) -> u64 {
    let mut r = rights::READ;
    if prot & PROT_WRITE != 0 {
        r |= rights::WRITE;
    } else if prot & PROT_EXEC != 0 {
        r |= rights::EXEC;
    }
    r
}

/// The file bytes behind an area (a private file mapping or an ELF
/// segment): the area's page at `start + k` holds `file[off + k..]`, zeros
/// past the end of `file` (which an ELF segment's backing ends at its file
/// size, so that its .bss starts zeroed).  Only archive files (static
/// bytes) back areas lazily; written files are copied in at mmap.
#[derive(Clone, Copy, Debug)]
pub struct Backing {
    pub file: &'static [u8],
    pub off: u64,
}

/// A MAP_SHARED mapping's hold on its file, as Linux's vma holds its
/// `struct file`: made by mmap, shared by the pieces munmap and mprotect
/// cut the area into and by fork's copies; it keeps the inode open and
/// counts as one of its mappings (vfs.rs: a /data file's pages stay in its
/// page cache while mappings hold them, and are written back to the store
/// when the last goes).
#[derive(Debug)]
pub struct FileRef {
    pub ino: Ino,
    /// The description it was mapped from was opened for writing
    /// (mprotect may add PROT_WRITE; else EACCES, as Linux).
    pub writable: bool,
}

impl FileRef {
    pub fn new(ino: Ino, writable: bool) -> Rc<FileRef> {
        fs().mapped(ino);
        Rc::new(FileRef { ino, writable })
    }
}

impl Drop for FileRef {
    fn drop(&mut self) {
        fs().unmapped(self.ino);
    }
}

/// A MAP_SHARED file area's file: its page at `start + k` is the file's
/// page at `off + k`, the same frame in every mapping of the file.
#[derive(Clone, Debug)]
pub struct FileMap {
    pub file: Rc<FileRef>,
    pub off: u64,
}

#[derive(Clone, Debug)]
pub struct Area {
    pub end: u64,
    pub prot: u32,
    pub backing: Option<Backing>,
    /// MAP_SHARED memory (anonymous, or a file's with `file`): fork gives
    /// the child the same frames, writable by both (never copy-on-write).
    pub shared: bool,
    /// A MAP_SHARED file mapping: its pages are the file's.
    pub file: Option<FileMap>,
    /// Its pages were filled at mmap with a written file's bytes, which
    /// nothing could make again: MADV_DONTNEED leaves them.
    pub filled: bool,
}

impl Area {
    pub fn anon(end: u64, prot: u32) -> Area {
        Area { end, prot, backing: None, shared: false, file: None, filled: false }
    }

    /// The part of this area (which starts at `start`) from `from` on.
    fn from(&self, start: u64, from: u64) -> Area {
        let backing = self.backing.map(|b| Backing { file: b.file, off: b.off + (from - start) });
        let file = self.file.as_ref().map(|f| FileMap { file: f.file.clone(), off: f.off + (from - start) });
        Area { backing, file, ..self.clone() }
    }
}

/// Frames holding pages of archive files, shared by every read-only
/// mapping of them, by the address and length of the file bytes they hold
/// (the server is single threaded).  They live as long as the server: the
/// archive does too.
static mut PAGE_CACHE: BTreeMap<(usize, usize), Rc<Frame>> = BTreeMap::new();

/// The frame with `bytes` (at most a page of an archive file) at its start,
/// zeros after them; made once, then shared.
pub fn cached_page(bytes: &'static [u8]) -> Result<Rc<Frame>, i64> {
    let key = (bytes.as_ptr() as usize, bytes.len());
    // SAFETY: single threaded; no reference to the cache outlives this call.
    #[allow(static_mut_refs)]
    let cache = unsafe { &mut PAGE_CACHE };
    if let Some(f) = cache.get(&key) {
        return Ok(f.clone());
    }
    let f = Frame::with(bytes, 0)?;
    cache.insert(key, f.clone());
    Ok(f)
}

/// Frames in the page cache (the `linux` statistics).
#[allow(dead_code)]
pub fn cached_pages() -> usize {
    // SAFETY: as above.
    #[allow(static_mut_refs)]
    unsafe {
        PAGE_CACHE.len()
    }
}

pub struct Page {
    pub frame: Rc<Frame>,
    pub prot: u32,
    /// Copy-on-write: the frame may be another's too (fork shared it, or
    /// the page cache holds it), so it is mapped without WRITE and a write
    /// first makes it the page's own (`Mm::unshare`).
    pub cow: bool,
    /// Mapped in the process's address space.  fork's child gets its pages
    /// unmapped and maps each when it first touches it (a child that execs
    /// soon touches few).
    pub mapped: bool,
    /// A page both writable and executable (PROT_WRITE|PROT_EXEC, which
    /// Keep never maps): mapped read-execute (true) or read-write
    /// (false), switched at the fault of the access the other view
    /// refuses (`Mm::fault`).
    pub exec_view: bool,
}

impl Page {
    /// The Keep rights it is mapped with.
    pub fn rights(&self) -> u64 {
        if self.exec_view && self.prot & (PROT_WRITE | PROT_EXEC) == PROT_WRITE | PROT_EXEC {
            return rights::READ | rights::EXEC;
        }
        let r = keep_rights(self.prot);
        if self.cow { r & !rights::WRITE } else { r }
    }
}

pub struct Mm {
    pub aspace: Aspace,
    /// Areas by start address; they never overlap.
    pub areas: BTreeMap<u64, Area>,
    pub pages: BTreeMap<u64, Page>,
    pub brk_start: u64,
    pub brk: u64,
    /// Its executable pages are unmapped so that whichever thread runs
    /// faults to the server, which then delivers a signal (signal.rs).
    pub text_hidden: bool,
}

impl Mm {
    pub fn new(aspace: Aspace) -> Mm {
        Mm {
            aspace,
            areas: BTreeMap::new(),
            pages: BTreeMap::new(),
            brk_start: 0,
            brk: 0,
            text_hidden: false,
        }
    }

    /// The area holding `va`: (start, area).
    pub fn area(&self, va: u64) -> Option<(u64, &Area)> {
        let (&s, a) = self.areas.range(..=va).next_back()?;
        (va < a.end).then_some((s, a))
    }

    /// Bytes reserved in areas.
    pub fn reserved(&self) -> u64 {
        self.areas.iter().map(|(s, a)| a.end - s).sum()
    }

    /// Removes [start, end) from the areas; returns the pieces removed.
    fn carve(&mut self, start: u64, end: u64) -> Vec<(u64, Area)> {
        let hits: Vec<(u64, Area)> = self
            .areas
            .range(..end)
            .filter(|(s, a)| a.end > start && **s < end)
            .map(|(s, a)| (*s, a.clone()))
            .collect();
        let mut inside = Vec::new();
        for (s, a) in hits {
            self.areas.remove(&s);
            if s < start {
                self.areas.insert(s, Area { end: start, ..a.clone() });
            }
            if a.end > end {
                self.areas.insert(end, a.from(s, end));
            }
            let from = s.max(start);
            inside.push((from, Area { end: a.end.min(end), ..a.from(s, from) }));
        }
        inside
    }

    /// Reserves [start, start+len) with `prot`, replacing what was there.
    pub fn add_area(&mut self, start: u64, len: u64, prot: u32) {
        self.add_file_area(start, len, prot, None);
    }

    /// Reserves [start, start+len) with `prot` and the file bytes behind
    /// it (populated when touched), replacing what was there.
    pub fn add_file_area(&mut self, start: u64, len: u64, prot: u32, backing: Option<Backing>) {
        self.unmap(start, len);
        self.areas.insert(start, Area { backing, ..Area::anon(start + len, prot) });
    }

    /// Reserves [start, start+len) as shared memory (MAP_SHARED: fork's
    /// child sees the same pages), anonymous or a file's, replacing what was
    /// there.
    pub fn add_shared_area(&mut self, start: u64, len: u64, prot: u32, file: Option<FileMap>) {
        self.unmap(start, len);
        self.areas.insert(start, Area { shared: true, file, ..Area::anon(start + len, prot) });
    }

    /// The page at `va` is in a shared area.
    pub fn is_shared(&self, va: u64) -> bool {
        self.area(va).is_some_and(|(_, a)| a.shared)
    }

    /// Removes the areas and pages of [start, start+len).  A shared file
    /// mapping's pages go back to its file (written back to the store
    /// for /data: `Fs::trim`) once the pages are gone.
    pub fn unmap(&mut self, start: u64, len: u64) {
        let end = start + len;
        let gone = self.carve(start, end);
        self.drop_pages(start, end);
        trim_files(gone.iter().map(|(_, a)| a));
    }

    /// Drops the pages of file `ino`'s shared mappings from its byte
    /// `from` on (the file was cut shorter: touched again, they are past
    /// its end, or its new bytes).
    pub fn drop_file_pages(&mut self, ino: Ino, from: u64) {
        let hit: Vec<(u64, u64)> = self
            .areas
            .iter()
            .filter_map(|(&s, a)| {
                let f = a.file.as_ref().filter(|f| f.file.ino == ino)?;
                let first = s + from.saturating_sub(f.off).next_multiple_of(PAGE);
                (first < a.end).then_some((first, a.end))
            })
            .collect();
        for (s, e) in hit {
            self.drop_pages(s, e);
        }
    }

    /// Removes the pages of [start, end) (their areas stay: touched again,
    /// they are populated anew, zeros or the file's bytes).
    pub fn drop_pages(&mut self, start: u64, end: u64) {
        let vas: Vec<u64> = self.pages.range(start..end).map(|(v, _)| *v).collect();
        for va in vas {
            if let Some(p) = self.pages.remove(&va)
                && p.mapped
            {
                let _ = self.aspace.unmap(va);
            }
        }
    }

    /// Changes the protection of [start, start+len); ENOMEM when part of it
    /// is not reserved (nothing changes then).
    pub fn protect(&mut self, start: u64, len: u64, prot: u32) -> Result<(), i64> {
        let end = start + len;
        let mut at = start;
        while at < end {
            let (_, a) = self.area(at).ok_or(ENOMEM)?;
            // A shared mapping of a file opened read-only stays read-only.
            if prot & PROT_WRITE != 0 && a.file.as_ref().is_some_and(|f| !f.file.writable) {
                return Err(EACCES);
            }
            at = a.end;
        }
        for (s, a) in self.carve(start, end) {
            self.areas.insert(s, Area { prot, ..a });
        }
        let vas: Vec<u64> = self.pages.range(start..end).map(|(v, _)| *v).collect();
        for va in vas {
            // A frame another holds becomes copy-on-write (made writable,
            // a page of the page cache, fork's pages): copied at the first
            // write, not now.
            let cow = !self.is_shared(va);
            let page = self.pages.get_mut(&va).unwrap();
            page.cow = cow && Rc::strong_count(&page.frame) > 1;
            page.prot = prot;
            if page.mapped {
                let _ = self.aspace.unmap(va);
                page.mapped = false;
                if prot != 0 {
                    self.aspace
                        .map(page.frame.slot, va, page.rights())
                        .map_err(|_| ENOMEM)?;
                    page.mapped = true;
                }
            }
        }
        Ok(())
    }

    /// Maps `frame` at `va` with `prot` (an area must be there).
    /// Copy-on-write when the frame is held elsewhere too and the area is
    /// not shared.
    pub fn put(&mut self, va: u64, frame: Rc<Frame>, prot: u32) -> Result<(), i64> {
        let shared = Rc::strong_count(&frame) > 1 && self.is_shared(va);
        self.put_in(va, frame, prot, shared)
    }

    /// `put` in an area that is `shared` or not.
    fn put_in(&mut self, va: u64, frame: Rc<Frame>, prot: u32, shared: bool) -> Result<(), i64> {
        if let Some(old) = self.pages.remove(&va)
            && old.mapped
        {
            let _ = self.aspace.unmap(va);
        }
        let cow = Rc::strong_count(&frame) > 1 && !shared;
        let mut page = Page { frame, prot, cow, mapped: false, exec_view: false };
        if prot != 0 {
            self.aspace
                .map(page.frame.slot, va, page.rights())
                .map_err(|_| ENOMEM)?;
            page.mapped = true;
        }
        self.pages.insert(va, page);
        Ok(())
    }

    /// Makes the copy-on-write page at `va` the process's own: a copy of
    /// its frame if another holds it still, then mapped writable.
    fn unshare(&mut self, va: u64) -> Result<(), i64> {
        let page = self.pages.get_mut(&va).ok_or(EFAULT)?;
        if Rc::strong_count(&page.frame) > 1 {
            let copy = Frame::with(page.frame.bytes(), 0)?;
            page.frame = copy;
        }
        page.cow = false;
        if page.mapped {
            let _ = self.aspace.unmap(va);
            page.mapped = false;
        }
        if page.prot != 0 {
            self.aspace
                .map(page.frame.slot, va, page.rights())
                .map_err(|_| ENOMEM)?;
            page.mapped = true;
        }
        Ok(())
    }

    /// A page fault at `va` (page-aligned) for an access needing `need`
    /// (one PROT_* bit): true when the page is now there with that right
    /// (populated, mapped, or made its own for a write), false when the
    /// access is not allowed or memory ran out (the process gets SIGSEGV).
    pub fn fault(&mut self, va: u64, need: u32) -> Result<(), i64> {
        let Some(page) = self.pages.get_mut(&va) else {
            if va >= GUEST_TOP {
                return Err(EFAULT);
            }
            return self.page_in(va, need).map(|_| ());
        };
        let want = match need {
            PROT_WRITE => rights::WRITE,
            PROT_EXEC => rights::EXEC,
            _ => rights::READ,
        };
        let wx = page.prot & (PROT_WRITE | PROT_EXEC) == PROT_WRITE | PROT_EXEC;
        if page.prot == 0 || (!wx && keep_rights(page.prot) & want == 0) {
            return Err(EFAULT);
        }
        if wx && want != rights::READ && page.exec_view != (want == rights::EXEC) {
            // The other view of a writable and executable page: an
            // instruction fetch maps it read-execute, a write read-write.
            page.exec_view = want == rights::EXEC;
            if page.mapped {
                let _ = self.aspace.unmap(va);
                page.mapped = false;
            }
        }
        if page.cow && (want == rights::WRITE || Rc::strong_count(&page.frame) == 1) {
            // A write, or a read of a page no one else holds now (it is
            // mapped writable at once, saving the write's fault).
            return self.unshare(va);
        }
        if !page.mapped {
            self.aspace.map(page.frame.slot, va, page.rights()).map_err(|_| ENOMEM)?;
            page.mapped = true;
        }
        // (Or another thread of the process mapped it meanwhile.)
        Ok(())
    }

    /// The page at `va` (page-aligned), populated if its area allows
    /// `need` (PROT_* bits); EFAULT otherwise.
    /// A write (`need` has PROT_WRITE) makes a copy-on-write page the
    /// process's own first.
    pub fn page(&mut self, va: u64, need: u32) -> Result<&Page, i64> {
        // (A system call's access to a shared file page past the end of
        // the file is EFAULT, as Linux's.)
        self.page_in(va, need).map_err(|e| if e == BEYOND_EOF { EFAULT } else { e })
    }

    /// `page`, with BEYOND_EOF for a shared file page past the end of its
    /// file (a fault there is SIGBUS).
    fn page_in(&mut self, va: u64, need: u32) -> Result<&Page, i64> {
        let (start, a) = self.area(va).ok_or(EFAULT)?;
        if a.prot & need != need || a.prot == 0 {
            return Err(EFAULT);
        }
        match self.pages.get(&va) {
            Some(p) if p.cow && need & PROT_WRITE != 0 => self.unshare(va)?,
            Some(_) => {}
            None => {
                let a = a.clone();
                self.populate(va, start, &a)?
            }
        }
        Ok(self.pages.get(&va).unwrap())
    }

    /// Makes the page at `va` of the area (`start`, `a`) if it is not there.
    fn populate(&mut self, va: u64, start: u64, a: &Area) -> Result<(), i64> {
        if !self.pages.contains_key(&va) {
            let frame = match (&a.file, a.backing) {
                // A shared file mapping: the file's own frame (BEYOND_EOF
                // past its end).
                (Some(f), _) => fs().shared_page(f.file.ino, f.off + (va - start))?,
                (None, None) => Frame::new()?,
                (None, Some(b)) => {
                    let at = (b.off + (va - start)).min(b.file.len() as u64) as usize;
                    let bytes = &b.file[at..(at + PAGE as usize).min(b.file.len())];
                    if a.prot & PROT_WRITE == 0 {
                        // Read-only: the page cache's frame (mprotect
                        // copies it before it becomes writable).
                        cached_page(bytes)?
                    } else {
                        Frame::with(bytes, 0)?
                    }
                }
            };
            self.put_in(va, frame, a.prot, a.shared)?;
        }
        Ok(())
    }

    /// mremap: moves or resizes [old, old+old_len) (one area's part) to
    /// `len` bytes; returns where it is now.  Pages move with their
    /// frames (nothing is copied).
    pub fn remap(&mut self, old: u64, old_len: u64, len: u64, may_move: bool, fixed: Option<u64>) -> Result<u64, i64> {
        let (_, a) = self.area(old).ok_or(EFAULT)?;
        if old + old_len > a.end {
            // Linux requires the old range within one mapping.
            return Err(EFAULT);
        }
        if fixed.is_none() && len <= old_len {
            self.unmap(old + len, old_len - len);
            return Ok(old);
        }
        let grow = len - old_len.min(len);
        let free = |mm: &Mm, at: u64, n: u64| {
            at.checked_add(n).is_some_and(|e| e <= MMAP_TOP)
                && !mm.areas.range(..at + n).any(|(st, ar)| ar.end > at && *st < at + n)
        };
        if fixed.is_none() && !may_reserve(self, grow) {
            return Err(ENOMEM);
        }
        if fixed.is_none() && free(self, old + old_len, grow) {
            // Grows in place: the area goes on (a file area's backing too).
            let piece = self.carve(old, old + old_len);
            let (s, p) = piece[0].clone();
            self.areas.insert(s, Area { end: old + len, ..p });
            return Ok(old);
        }
        if !may_move {
            return Err(ENOMEM);
        }
        // Moves: the area's piece and its pages to a new place.
        let to = match fixed {
            Some(at) => {
                self.unmap(at, len);
                at
            }
            None => self.find_free(len).ok_or(ENOMEM)?,
        };
        let piece = self.carve(old, old + old_len);
        let (s, p) = piece[0].clone();
        let keep = old_len.min(len);
        let vas: Vec<u64> = self.pages.range(old..old + old_len).map(|(v, _)| *v).collect();
        let mut moved = Vec::new();
        for va in vas {
            let page = self.pages.remove(&va).unwrap();
            if page.mapped {
                let _ = self.aspace.unmap(va);
            }
            if va - old < keep {
                moved.push((to + (va - s), page));
            }
        }
        self.areas.insert(to, Area { end: to + len, ..p.clone() });
        for (va, page) in moved {
            self.put(va, page.frame, page.prot)?;
        }
        trim_files(core::iter::once(&p));
        Ok(to)
    }

    /// Copies guest memory at `va` into `out`.
    pub fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), i64> {
        check_range(va, out.len())?;
        let mut done = 0;
        while done < out.len() {
            let a = va + done as u64;
            let off = (a % PAGE) as usize;
            let n = (PAGE as usize - off).min(out.len() - done);
            let p = self.page(a - off as u64, PROT_READ)?;
            copy(&mut out[done..done + n], &p.frame.bytes()[off..off + n]);
            done += n;
        }
        Ok(())
    }

    pub fn read_vec(&mut self, va: u64, len: usize) -> Result<Vec<u8>, i64> {
        let mut v = alloc::vec![0u8; len];
        self.read(va, &mut v)?;
        Ok(v)
    }

    /// Copies `data` into guest memory at `va` (the area must be writable).
    pub fn write(&mut self, va: u64, data: &[u8]) -> Result<(), i64> {
        check_range(va, data.len())?;
        let mut done = 0;
        while done < data.len() {
            let a = va + done as u64;
            let off = (a % PAGE) as usize;
            let n = (PAGE as usize - off).min(data.len() - done);
            let p = self.page(a - off as u64, PROT_WRITE)?;
            copy(&mut p.frame.bytes_mut()[off..off + n], &data[done..done + n]);
            done += n;
        }
        Ok(())
    }

    pub fn read_u64(&mut self, va: u64) -> Result<u64, i64> {
        let mut b = [0u8; 8];
        self.read(va, &mut b)?;
        Ok(u64::from_le_bytes(b))
    }

    pub fn write_u64(&mut self, va: u64, v: u64) -> Result<(), i64> {
        self.write(va, &v.to_le_bytes())
    }

    pub fn read_u32(&mut self, va: u64) -> Result<u32, i64> {
        let mut b = [0u8; 4];
        self.read(va, &mut b)?;
        Ok(u32::from_le_bytes(b))
    }

    pub fn write_u32(&mut self, va: u64, v: u32) -> Result<(), i64> {
        self.write(va, &v.to_le_bytes())
    }

    /// A NUL-terminated string of at most `max` bytes (ENAMETOOLONG past it).
    pub fn read_cstr(&mut self, va: u64, max: usize) -> Result<Vec<u8>, i64> {
        let mut out = Vec::new();
        let mut a = va;
        loop {
            check_range(a, 1)?;
            let off = (a % PAGE) as usize;
            let p = self.page(a - off as u64, PROT_READ)?;
            let bytes = &p.frame.bytes()[off..];
            match bytes.iter().position(|&b| b == 0) {
                Some(n) => {
                    out.extend_from_slice(&bytes[..n]);
                    break;
                }
                None => out.extend_from_slice(bytes),
            }
            if out.len() > max {
                return Err(ENAMETOOLONG);
            }
            a += (PAGE as usize - off) as u64;
        }
        if out.len() > max {
            return Err(ENAMETOOLONG);
        }
        Ok(out)
    }

    /// A highest free range of `len` bytes below MMAP_TOP.
    pub fn find_free(&self, len: u64) -> Option<u64> {
        let mut top = MMAP_TOP;
        for (&s, a) in self.areas.range(..MMAP_TOP).rev() {
            if a.end <= top && top - a.end >= len {
                return Some(top - len);
            }
            top = top.min(s);
        }
        let base = self.brk.max(0x1000_0000);
        (top >= base + len).then(|| top - len)
    }

    /// Unmaps (`hide`) or maps again the executable pages from the
    /// process's address space; the server keeps them.
    pub fn set_text_mapped(&mut self, mapped: bool) {
        self.text_hidden = !mapped;
        for (&va, p) in &self.pages {
            if p.prot & PROT_EXEC != 0 && p.mapped {
                if mapped {
                    let _ = self.aspace.map(p.frame.slot, va, p.rights());
                } else {
                    let _ = self.aspace.unmap(va);
                }
            }
        }
    }

    /// The child's memory for fork (its address space `aspace`, empty):
    /// the same frames, nothing copied.  Private pages become copy-on-write
    /// in both (the parent's writable ones are unmapped, to be mapped
    /// again read-only or, once the child has let go, writable at their
    /// next touch); a shared area's pages are all made now, so that both
    /// hold the same frames.  The child's pages are mapped as it touches
    /// them.
    pub fn fork(&mut self, aspace: Aspace) -> Result<Mm, i64> {
        let shared: Vec<(u64, Area)> = self.areas.iter().filter(|(_, a)| a.shared).map(|(s, a)| (*s, a.clone())).collect();
        for (start, a) in &shared {
            // A file's pages are the file's: each process finds the same
            // frame when it touches one.
            if a.file.is_none() {
                for va in (*start..a.end).step_by(PAGE as usize) {
                    self.populate(va, *start, a)?;
                }
            }
        }
        let in_shared = |va: u64| shared.iter().any(|(s, a)| (*s..a.end).contains(&va));
        let aspace_p = self.aspace;
        // In address order: the child's map is built in one pass.
        let pages = self.pages.iter_mut().map(|(&va, p)| {
            let shared = !shared.is_empty() && in_shared(va);
            if !shared && !p.cow {
                p.cow = true;
                if p.mapped && p.prot & PROT_WRITE != 0 {
                    let _ = aspace_p.unmap(va);
                    p.mapped = false;
                }
            }
            (va, Page { frame: p.frame.clone(), prot: p.prot, cow: !shared, mapped: false, exec_view: false })
        });
        let mut m = Mm::new(aspace);
        m.pages = pages.collect();
        m.areas = self.areas.clone();
        m.brk_start = self.brk_start;
        m.brk = self.brk;
        Ok(m)
    }
}

impl Drop for Mm {
    /// The pages go before the areas, and then the files of its shared
    /// mappings take back (and write back) the frames nobody maps now.
    fn drop(&mut self) {
        self.pages.clear();
        trim_files(self.areas.values());
    }
}

/// After pages of shared file areas went: their files take back the frames
/// no mapping holds now (`Fs::trim`).
pub fn trim_files<'a>(areas: impl Iterator<Item = &'a Area>) {
    for a in areas {
        if let Some(f) = &a.file {
            fs().trim(f.file.ino);
        }
    }
}

/// EFAULT unless [va, va+len) lies inside the guest part of the space.
pub fn check_range(va: u64, len: usize) -> Result<(), i64> {
    match va.checked_add(len as u64) {
        Some(end) if end <= GUEST_TOP => Ok(()),
        _ => Err(EFAULT),
    }
}
