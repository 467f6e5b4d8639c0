//! Memory: brk, mmap, munmap, mprotect, mremap, madvise.

use super::*;
use crate::linux::mm::{MADV_DONTNEED, MAP_ANONYMOUS, MAP_FIXED, MAP_FIXED_NOREPLACE, MAP_PRIVATE, MAP_SHARED, MREMAP_FIXED, MREMAP_MAYMOVE, MS_ASYNC, MS_INVALIDATE, MS_SYNC};

pub fn brk(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mm = &mut s.proc(pid).mm;
    let want = c.args[0];
    if want < mm.brk_start || want >= mem::MMAP_TOP {
        return Out::Ret(mm.brk as i64);
    }
    let (old_top, new_top) = (mm.brk.next_multiple_of(PAGE), want.next_multiple_of(PAGE));
    if new_top > old_top {
        if mm.areas.range(..new_top).any(|(st, a)| a.end > old_top && *st < new_top)
            || !mem::may_reserve(mm, new_top - old_top)
        {
            return Out::Ret(mm.brk as i64);
        }
        mm.areas.insert(old_top, mem::Area::anon(new_top, mem::PROT_READ | PROT_WRITE));
    } else if new_top < old_top {
        mm.unmap(new_top, old_top - new_top);
    }
    mm.brk = want;
    Out::Ret(want as i64)
}

pub fn mmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = s.arg(pid, c, 3);
    let fd = s.arg(pid, c, 4);
    let off = s.arg(pid, c, 5);
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32 & 7);
    let r = (|| {
        if len == 0 || off % PAGE != 0 || flags & (MAP_SHARED | MAP_PRIVATE) == 0 {
            return Err(EINVAL);
        }
        let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
        // A private file mapping: archive files are populated when touched
        // (read-only pages from the page cache, copies where writable);
        // written files are copied in now.  A shared one maps the file's
        // own pages (mem::FileMap).
        let mut backing = None;
        let mut copy = None;
        let mut file = None;
        if flags & MAP_ANONYMOUS == 0 {
            let d = desc(s, pid, fd)?;
            let d = d.borrow();
            // Linux's order: the access mode, then whether it can be mapped.
            if flags & MAP_SHARED != 0 && prot & PROT_WRITE != 0 && !d.writable() {
                return Err(EACCES);
            }
            if !d.readable() {
                return Err(EACCES);
            }
            let Kind::File { ino } = d.kind else { return Err(ENODEV) };
            if flags & MAP_SHARED != 0 {
                off.checked_add(len).filter(|e| (*e as i64) > 0).ok_or(EOVERFLOW)?;
                file = Some(mem::FileMap { file: mem::FileRef::new(ino, d.writable()), off });
            } else {
                match &fs().get(ino).node {
                    Node::File(Data::Archive(b)) => backing = Some(mem::Backing { file: b, off }),
                    _ => copy = Some(ino),
                }
            }
        }
        let mm = &mut s.proc(pid).mm;
        if !mem::may_reserve(mm, len) {
            return Err(ENOMEM);
        }
        let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
        let free = |mm: &mem::Mm, a: u64| {
            a.checked_add(len).is_some_and(|e| e <= mem::MMAP_TOP)
                && !mm.areas.range(..a + len).any(|(st, ar)| ar.end > a && *st < a + len)
        };
        let at = if fixed {
            if addr % PAGE != 0 || addr < PAGE || addr.checked_add(len).is_none_or(|e| e > mem::MMAP_TOP) {
                return Err(EINVAL);
            }
            if flags & MAP_FIXED_NOREPLACE != 0 && !free(mm, addr) {
                return Err(EEXIST);
            }
            addr
        } else if addr >= PAGE && addr % PAGE == 0 && free(mm, addr) {
            addr
        } else {
            mm.find_free(len).ok_or(ENOMEM)?
        };
        if flags & MAP_SHARED != 0 {
            mm.add_shared_area(at, len, prot, file);
        } else {
            mm.add_file_area(at, len, prot, backing);
        }
        if let Some(ino) = copy {
            if let Some(a) = mm.areas.get_mut(&at) {
                a.filled = true;
            }
            let mut buf = alloc::vec![0u8; PAGE as usize];
            for i in 0..len / PAGE {
                buf.fill(0);
                let n = fs().read(ino, off + i * PAGE, &mut buf)?;
                if n == 0 {
                    break;
                }
                let f = mem::Frame::with(&buf[..n], 0)?;
                mm.put(at + i * PAGE, f, prot)?;
            }
        }
        Ok(at as i64)
    })();
    ret(r)
}

pub fn mremap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let flags = s.arg(pid, c, 3);
    let new_addr = s.arg(pid, c, 4);
    let (old, old_len, len) = (c.args[0], c.args[1], c.args[2]);
    let r = (|| {
        if old % PAGE != 0
            || flags & !(MREMAP_MAYMOVE | MREMAP_FIXED) != 0
            || (flags & MREMAP_FIXED != 0 && flags & MREMAP_MAYMOVE == 0)
            || old_len == 0
            || len == 0
        {
            // (old_len 0 duplicates a shared mapping: not done.)
            return Err(EINVAL);
        }
        let old_len = old_len.checked_next_multiple_of(PAGE).ok_or(EINVAL)?;
        let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
        if old.checked_add(old_len).is_none_or(|e| e > mem::TRAMPOLINE) {
            return Err(EFAULT); // (the trampoline stays where it is)
        }
        let fixed = if flags & MREMAP_FIXED != 0 {
            if new_addr % PAGE != 0
                || new_addr < PAGE
                || new_addr.checked_add(len).is_none_or(|e| e > mem::MMAP_TOP)
                || (new_addr < old + old_len && old < new_addr + len)
            {
                return Err(EINVAL);
            }
            Some(new_addr)
        } else {
            None
        };
        let mm = &mut s.proc(pid).mm;
        mm.remap(old, old_len, len, flags & MREMAP_MAYMOVE != 0, fixed).map(|a| a as i64)
    })();
    ret(r)
}

pub fn munmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len) = (c.args[0], c.args[1]);
    // The trampoline page is the server's, as the range above it: a
    // program cannot unmap or re-protect it (arch_prctl needs it).
    if addr % PAGE != 0 || len == 0 || addr.checked_add(len).is_none_or(|e| e > mem::TRAMPOLINE) {
        return Out::Ret(-EINVAL);
    }
    s.proc(pid).mm.unmap(addr, len.next_multiple_of(PAGE));
    Out::Ret(0)
}

pub fn mprotect(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32);
    if addr % PAGE != 0 || prot & !7 != 0 || addr.checked_add(len).is_none_or(|e| e > mem::TRAMPOLINE) {
        return Out::Ret(-EINVAL);
    }
    if len == 0 {
        return Out::Ret(0);
    }
    ret(s.proc(pid).mm.protect(addr, len.next_multiple_of(PAGE), prot).map(|_| 0))
}

/// madvise: MADV_DONTNEED drops the pages of the range (private memory
/// reads zeros or the file's bytes again at its next touch, as on Linux; a
/// shared area's pages stay, its contents being the other holders' too,
/// and so do a written file's copied in at mmap, which nothing could make
/// again);
/// other advice is accepted and ignored.  ENOMEM when part of the range is
/// not mapped (what is mapped is still dropped).
pub fn madvise(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len, advice) = (c.args[0], c.args[1], c.args[2]);
    if addr % PAGE != 0 || addr.checked_add(len).is_none_or(|e| e > mem::TRAMPOLINE) {
        return Out::Ret(-EINVAL);
    }
    if advice != MADV_DONTNEED || len == 0 {
        return Out::Ret(0);
    }
    let end = (addr + len).next_multiple_of(PAGE);
    let mm = &mut s.proc(pid).mm;
    let areas: alloc::vec::Vec<(u64, mem::Area)> =
        mm.areas.range(..end).filter(|(st, a)| a.end > addr && **st < end).map(|(st, a)| (*st, a.clone())).collect();
    let mut covered = addr;
    for (st, a) in &areas {
        if *st <= covered {
            covered = covered.max(a.end);
        }
        // A shared file mapping's pages are the file's: touched again,
        // they are the same.
        if a.file.is_some() || (!a.shared && !a.filled) {
            mm.drop_pages((*st).max(addr), a.end.min(end));
        }
    }
    mem::trim_files(areas.iter().map(|(_, a)| a));
    Out::Ret(if covered >= end { 0 } else { -ENOMEM })
}

/// msync: writes back what shared mappings of files under /data stored in
/// the range (MS_SYNC then has the store FLUSH; MS_ASYNC does not wait
/// for that); a mapping of an in-memory file is the file already, and
/// MS_INVALIDATE has nothing to do (the mappings are coherent: one frame a
/// page).  EINVAL for an unaligned address, unknown flags or both MS_SYNC
/// and MS_ASYNC; ENOMEM when part of the range is not mapped (the rest is
/// still written back), as Linux.
pub fn msync(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len, flags) = (c.args[0], c.args[1], c.args[2]);
    if addr % PAGE != 0
        || flags & !(MS_ASYNC | MS_INVALIDATE | MS_SYNC) != 0
        || flags & (MS_ASYNC | MS_SYNC) == MS_ASYNC | MS_SYNC
    {
        return Out::Ret(-EINVAL);
    }
    let Some(end) = len.checked_next_multiple_of(PAGE).and_then(|l| addr.checked_add(l)) else {
        return Out::Ret(-ENOMEM);
    };
    let mm = &mut s.proc(pid).mm;
    let mut files = alloc::vec::Vec::new();
    let mut covered = addr;
    for (st, a) in mm.areas.range(..end).filter(|(st, a)| a.end > addr && **st < end) {
        if *st <= covered {
            covered = covered.max(a.end);
        }
        if let Some(f) = &a.file {
            files.push(f.file.ino);
        }
    }
    let mut r = if covered >= end { 0 } else { -ENOMEM };
    files.dedup();
    for ino in files {
        let done = if flags & MS_SYNC != 0 { fs().flush(Some(ino)) } else { fs().writeback(ino) };
        if let Err(e) = done {
            r = -e;
        }
    }
    Out::Ret(r)
}
