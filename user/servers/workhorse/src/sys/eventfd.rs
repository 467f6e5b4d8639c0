//! eventfd and memfd_create: a counter behind a descriptor, and a file no
//! directory names.

use super::object::{Object, new_obj};
use super::*;

/// An eventfd's counter (eventfd(2)): writes add to it, a read takes it
/// all (or one, with EFD_SEMAPHORE); a read of 0 waits, as does a write
/// that would take it past u64::MAX - 1.
pub struct EventFd {
    count: u64,
    semaphore: bool,
    /// Reads and writes so far: what an edge-triggered epoll sees change.
    events: u64,
}

const MAX_COUNT: u64 = u64::MAX - 1;

impl Object for EventFd {
    fn read(&mut self, _: &mut Server, _: i32, max: usize) -> Result<Vec<u8>, i64> {
        if max < 8 {
            return Err(EINVAL);
        }
        if self.count == 0 {
            return Err(WOULD_BLOCK);
        }
        let v = if self.semaphore { 1 } else { self.count };
        self.count -= v;
        self.events += 1;
        Ok(v.to_le_bytes().to_vec())
    }
    fn write(&mut self, _: &mut Server, _: i32, data: &[u8]) -> Result<usize, i64> {
        let v = u64::from_le_bytes(data.get(..8).ok_or(EINVAL)?.try_into().map_err(|_| EINVAL)?);
        if v == u64::MAX {
            return Err(EINVAL);
        }
        if v > MAX_COUNT - self.count {
            return Err(WOULD_BLOCK);
        }
        self.count += v;
        self.events += 1;
        Ok(8)
    }
    fn ready(&self) -> u16 {
        (if self.count > 0 { POLLIN } else { 0 }) | (if self.count < MAX_COUNT { POLLOUT } else { 0 })
    }
    fn generation(&self) -> u64 {
        self.events
    }
    fn stat(&self) -> (u32, u64) {
        (0o600, 0)
    }
    fn name(&self) -> String {
        String::from("anon_inode:[eventfd]")
    }
    fn as_any(&mut self) -> &mut dyn core::any::Any {
        self
    }
}

const EFD_SEMAPHORE: u64 = 1;

/// eventfd2(initval, flags): EFD_SEMAPHORE, EFD_NONBLOCK, EFD_CLOEXEC;
/// other flags EINVAL.
pub fn eventfd2(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    let (init, flags) = (c.args[0] as u32 as u64, c.args[1]);
    if flags & !(EFD_SEMAPHORE | O_NONBLOCK as u64 | O_CLOEXEC as u64) != 0 {
        return Out::Ret(-EINVAL);
    }
    let obj = new_obj(EventFd { count: init, semaphore: flags & EFD_SEMAPHORE != 0, events: 0 });
    let d = Description::new(Kind::Object(obj), O_RDWR | (flags as u32 & O_NONBLOCK));
    ret(s.proc(pid).install(Fd { desc: d, cloexec: flags & O_CLOEXEC as u64 != 0 }, 0))
}

/// eventfd(initval): eventfd2 without flags.
pub fn eventfd(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    c.args[1] = 0;
    eventfd2(s, pid, c)
}

/// memfd_create(name, flags): a regular file in memory that no directory
/// names, open for reading and writing (it goes with its last
/// descriptor).  MFD_CLOEXEC; MFD_ALLOW_SEALING, MFD_NOEXEC_SEAL and
/// MFD_EXEC are taken, but there are no seals (fcntl's F_ADD_SEALS is
/// refused); MFD_HUGETLB (no huge pages) and unknown flags EINVAL, as is a
/// name of more than 249 bytes.
pub fn memfd_create(s: &mut Server, pid: i32, c: &mut Call) -> Out {
    const MFD_CLOEXEC: u64 = 1;
    const MFD_ALLOW_SEALING: u64 = 2;
    const MFD_NOEXEC_SEAL: u64 = 8;
    const MFD_EXEC: u64 = 0x10;
    const NAME_MAX: usize = 249;
    let r = (|| {
        let flags = c.args[1];
        if flags & !(MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL | MFD_EXEC) != 0
            || flags & (MFD_NOEXEC_SEAL | MFD_EXEC) == MFD_NOEXEC_SEAL | MFD_EXEC
        {
            return Err(EINVAL);
        }
        match s.proc(pid).mm.read_cstr(c.args[0], NAME_MAX) {
            Err(ENAMETOOLONG) => return Err(EINVAL),
            r => r?,
        };
        // Made under a name in / and unlinked before anyone can look: the
        // server answers one call at a time, and the open description
        // keeps the inode.
        let f = fs();
        f.as_server();
        let name = loop {
            let n = alloc::format!(".memfd-{:016x}", s.random());
            if f.lookup(vfs::ROOT, &n).is_err() {
                break n;
            }
        };
        let ino = f.create(vfs::ROOT, &name, Node::File(Data::Pages(Vec::new(), 0)), vfs::S_IFREG | 0o777)?;
        let d = Description::new(Kind::File { ino }, O_RDWR);
        f.unlink(vfs::ROOT, &name, false)?;
        s.proc(pid).install(Fd { desc: d, cloexec: flags & MFD_CLOEXEC != 0 }, 0)
    })();
    ret(r)
}
