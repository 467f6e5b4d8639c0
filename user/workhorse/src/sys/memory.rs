//! Memory: brk, mmap, munmap, mprotect.

use super::*;

pub fn brk(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let mm = &mut s.proc(pid).mm;
    let want = c.args[0];
    if want < mm.brk_start || want >= mem::MMAP_TOP {
        return Out::Ret(mm.brk as i64);
    }
    let (old_top, new_top) = (mm.brk.next_multiple_of(PAGE), want.next_multiple_of(PAGE));
    if new_top > old_top {
        if mm.areas.range(..new_top).any(|(st, a)| a.end > old_top && *st < new_top)
            || mm.reserved() + (new_top - old_top) > mem::MAX_RESERVED
        {
            return Out::Ret(mm.brk as i64);
        }
        mm.areas.insert(old_top, mem::Area { end: new_top, prot: mem::PROT_READ | PROT_WRITE });
    } else if new_top < old_top {
        mm.unmap(new_top, old_top - new_top);
    }
    mm.brk = want;
    Out::Ret(want as i64)
}

pub fn mmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const MAP_SHARED: u64 = 1;
    const MAP_FIXED: u64 = 0x10;
    const MAP_ANONYMOUS: u64 = 0x20;
    const MAP_FIXED_NOREPLACE: u64 = 0x100000;
    let flags = s.arg(pid, c, 3);
    let fd = s.arg(pid, c, 4);
    let off = s.arg(pid, c, 5);
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32 & 7);
    let r = (|| {
        if len == 0 || off % PAGE != 0 {
            return Err(EINVAL);
        }
        let len = len.checked_next_multiple_of(PAGE).ok_or(ENOMEM)?;
        let file = if flags & MAP_ANONYMOUS == 0 {
            let d = desc(s, pid, fd)?;
            let Kind::File { ino } = d.borrow().kind else { return Err(EACCES) };
            if flags & MAP_SHARED != 0 && prot & PROT_WRITE != 0 {
                return Err(ENODEV);
            }
            Some(ino)
        } else {
            None
        };
        let mm = &mut s.proc(pid).mm;
        if mm.reserved() + len > mem::MAX_RESERVED {
            return Err(ENOMEM);
        }
        let fixed = flags & (MAP_FIXED | MAP_FIXED_NOREPLACE) != 0;
        let free = |mm: &mem::Mm, a: u64| {
            a.checked_add(len).is_some_and(|e| e <= mem::MMAP_TOP)
                && !mm.areas.range(..a + len).any(|(st, ar)| ar.end > a && *st < a + len)
        };
        let at = if fixed {
            if addr % PAGE != 0 || addr.checked_add(len).is_none_or(|e| e > mem::MMAP_TOP) {
                return Err(EINVAL);
            }
            if flags & MAP_FIXED_NOREPLACE != 0 && !free(mm, addr) {
                return Err(EEXIST);
            }
            addr
        } else if addr != 0 && addr % PAGE == 0 && free(mm, addr) {
            addr
        } else {
            mm.find_free(len).ok_or(ENOMEM)?
        };
        mm.add_area(at, len, prot);
        if let Some(ino) = file {
            // Private file pages are copied in now (zeros past the end).
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

pub fn munmap(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len) = (c.args[0], c.args[1]);
    if addr % PAGE != 0 || len == 0 || addr.checked_add(len).is_none_or(|e| e > mem::GUEST_TOP) {
        return Out::Ret(-EINVAL);
    }
    s.proc(pid).mm.unmap(addr, len.next_multiple_of(PAGE));
    Out::Ret(0)
}

pub fn mprotect(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (addr, len, prot) = (c.args[0], c.args[1], c.args[2] as u32);
    if addr % PAGE != 0 || prot & !7 != 0 || addr.checked_add(len).is_none_or(|e| e > mem::GUEST_TOP) {
        return Out::Ret(-EINVAL);
    }
    if len == 0 {
        return Out::Ret(0);
    }
    ret(s.proc(pid).mm.protect(addr, len.next_multiple_of(PAGE), prot).map(|_| 0))
}
