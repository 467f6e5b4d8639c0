//! The file system (docs/workhorse.md, "Files").  In memory, filled at
//! start from the boot image's ustar archive, whose file bytes stay where
//! the archive is mapped until a file is written; written data lives in
//! frames of the memory pool, a page each, and does not survive the
//! server.  `/data` is the store on the disk when the server has a block
//! server (`mount_data`): every change under it is a record the disk
//! acknowledged before the call returns (keep_workhorse::store), and its
//! files' bytes are the store's.

use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::string::String;
use alloc::vec::Vec;

use keep_rt::println;
use keep_workhorse::perm::{self, Cred};
use keep_workhorse::store::{self, Op, Store};

use crate::disk::BlkDisk;
use crate::linux::errno::*;
use crate::mem::{BEYOND_EOF, Frame, PAGE};
pub(crate) use crate::linux::fs::{S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG};

pub type Ino = usize;
pub const ROOT: Ino = 0;
const MAX_LINKS: u32 = 40;

pub enum Data {
    /// Bytes of the boot archive (mappings of them share the page cache's
    /// frames: mem::cached_page).
    Archive(&'static [u8]),
    /// Written data: a frame per page (None: a hole, zeros).
    Pages(Vec<Option<Rc<Frame>>>, u64),
    /// A file of the store on the disk (under /data): its bytes are the
    /// store's, by its inode number there.
    Stored(u64),
}

pub enum Node {
    Dir { entries: BTreeMap<String, Ino>, parent: Ino },
    File(Data),
    Symlink(String),
}

pub struct Inode {
    pub node: Node,
    pub mode: u32,
    /// Owner and group (in memory only: a file under /data is root's again
    /// after a restart).
    pub uid: u32,
    pub gid: u32,
    /// Its extended attributes (the in-memory tree's alone).
    pub xattrs: Option<alloc::boxed::Box<keep_workhorse::xattr::Xattrs>>,
    pub nlink: u32,
    /// Open file descriptions of it: an unlinked inode lives until the
    /// last one closes.
    pub opens: u32,
    /// Its inode number in the store, when it lives under /data on the disk.
    pub stored: Option<u64>,
    pub times: Times,
    /// MAP_SHARED mappings of it (mem::FileRef; each also counts in
    /// `opens`).
    pub maps: u32,
    /// A stored file's page cache: the frames its shared mappings map, by
    /// page number, kept while a mapping holds them.  Their bytes are the
    /// file's (read and write see them); a mapping's stores reach the
    /// store when they are written back (`writeback`: msync, fsync, the
    /// last mapping of a page gone).
    pub cache: BTreeMap<u64, Rc<Frame>>,
}

/// An inode's times in nanoseconds on the server's clock (which, like
/// every Linux clock here, counts from boot: sys/misc.rs).  Kept in memory
/// only: the archive's files and what the store loads at start have 0
/// (1970, older than anything made since boot).  Reads do not change
/// atime (as Linux's `noatime`).
#[derive(Clone, Copy, Default)]
pub struct Times {
    pub atime: u64,
    pub mtime: u64,
    pub ctime: u64,
}

/// Why the archive could not be loaded (printed with {:?}).
#[derive(Debug)]
#[allow(dead_code)]
pub enum LoadError<'a> {
    Tar(keep_workhorse::tar::TarError),
    Path(i64, &'a str),
}

static mut FS: Option<Fs> = None;

/// The one file system (the server is single threaded).
#[allow(static_mut_refs)]
pub fn fs() -> &'static mut Fs {
    // SAFETY: single threaded; callers keep no reference across a call
    // that takes it again.
    unsafe { FS.get_or_insert_with(Fs::new) }
}

pub struct Fs {
    nodes: Vec<Option<Inode>>,
    /// The store behind /data (None: no disk; /data is in memory).
    pub store: Option<Store<BlkDisk>>,
    /// Who the call being answered is (set with its path: sys/mod.rs),
    /// None for an effective uid of 0: what the permission checks of
    /// `walk`, `create`, `link`, `unlink` and `rename` judge by, and the
    /// owner of what `create` makes.
    pub cred: Option<Cred>,
    /// What the extended attributes of every file hold (xattr::cost),
    /// bounded by XATTR_BUDGET (ENOSPC past it).
    pub xattr_bytes: usize,
}

/// The server memory extended attributes may take, all files together.
pub const XATTR_BUDGET: usize = 4 << 20;

/// Files cut shorter while mapped: (inode, byte) from which their
/// mappings' pages must go (the server drops them in every process before
/// it answers: main.rs).  Outside `Fs`, so that the server loop's test of
/// it is one load.
static mut STALE: Vec<(Ino, u64)> = Vec::new();

/// Whether a file was cut shorter while mapped since `take_stale`.
#[allow(static_mut_refs)]
pub fn stale_pending() -> bool {
    // SAFETY: single threaded.
    unsafe { !STALE.is_empty() }
}

/// What `stale_pending` says is there, taken.
#[allow(static_mut_refs)]
pub fn take_stale() -> Vec<(Ino, u64)> {
    // SAFETY: single threaded.
    unsafe { core::mem::take(&mut STALE) }
}

/// Where the store is mounted.
pub const DATA: &str = "data";

fn store_err(e: store::Error) -> i64 {
    match e {
        store::Error::NoSpace => ENOSPC,
        store::Error::Io => EIO,
        store::Error::Bad => EINVAL,
    }
}

fn name_ok(name: &str) -> Result<(), i64> {
    if keep_workhorse::bytenames::byte_len(name) > 255 {
        return Err(ENAMETOOLONG);
    }
    Ok(())
}

impl Fs {
    pub fn new() -> Fs {
        let root = Inode {
            node: Node::Dir { entries: BTreeMap::new(), parent: ROOT },
            mode: S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            xattrs: None,
            nlink: 2,
            opens: 0,
            stored: None,
            times: Times::default(),
            maps: 0,
            cache: BTreeMap::new(),
        };
        Fs { nodes: alloc::vec![Some(root)], store: None, cred: None, xattr_bytes: 0 }
    }

    /// The permission checks to come judge by `c` (the caller's ids).
    pub fn as_caller(&mut self, c: &Cred) {
        if c.euid != 0 {
            self.cred = Some(c.clone());
        } else if self.cred.is_some() {
            self.cred = None;
        }
    }

    /// The server's own changes (memfd's file, the trusted files): no
    /// checks, root's.
    pub fn as_server(&mut self) {
        self.cred = None;
    }

    /// EACCES unless the caller (`cred`) may `want` (perm::MAY_*) on `ino`.
    pub fn may(&self, ino: Ino, want: u32) -> Result<(), i64> {
        let Some(c) = &self.cred else {
            return Ok(());
        };
        let n = self.get(ino);
        if c.may(n.uid, n.gid, n.mode, want, false) { Ok(()) } else { Err(EACCES) }
    }

    /// EACCES unless the caller may add or remove names in `dir`.
    fn may_change(&self, dir: Ino) -> Result<(), i64> {
        self.may(dir, perm::MAY_WRITE | perm::MAY_EXEC)
    }

    /// EPERM when `dir` is sticky and the caller owns neither it nor `ino`.
    fn sticky_ok(&self, dir: Ino, ino: Ino) -> Result<(), i64> {
        let Some(c) = &self.cred else {
            return Ok(());
        };
        let d = self.get(dir);
        if c.may_unlink_sticky(d.mode, d.uid, self.get(ino).uid) { Ok(()) } else { Err(EPERM) }
    }

    /// chown: new owner and group and the mode perm::Cred::chown leaves.
    pub fn chown(&mut self, ino: Ino, uid: u32, gid: u32, mode: u32) {
        let n = self.get_mut(ino);
        n.uid = uid;
        n.gid = gid;
        n.mode = mode;
        self.changed(ino, false, crate::sys::realtime_ns());
    }

    pub fn get(&self, ino: Ino) -> &Inode {
        self.nodes[ino].as_ref().expect("live inode")
    }

    pub fn get_mut(&mut self, ino: Ino) -> &mut Inode {
        self.nodes[ino].as_mut().expect("live inode")
    }

    fn alloc(&mut self, i: Inode) -> Ino {
        match self.nodes.iter().position(|n| n.is_none()) {
            Some(k) => {
                self.nodes[k] = Some(i);
                k
            }
            None => {
                self.nodes.push(Some(i));
                self.nodes.len() - 1
            }
        }
    }

    pub fn is_dir(&self, ino: Ino) -> bool {
        matches!(self.get(ino).node, Node::Dir { .. })
    }

    pub fn lookup(&self, dir: Ino, name: &str) -> Result<Ino, i64> {
        match &self.get(dir).node {
            Node::Dir { entries, parent } => match name {
                "" | "." => Ok(dir),
                ".." => Ok(*parent),
                _ => entries.get(name).copied().ok_or(ENOENT),
            },
            _ => Err(ENOTDIR),
        }
    }

    /// Resolves `path` from `cwd`; follows a final symbolic link when
    /// `follow`.
    pub fn resolve(&self, cwd: Ino, path: &str, follow: bool) -> Result<Ino, i64> {
        let mut links = 0;
        self.walk(cwd, path, follow, &mut links)
    }

    fn walk(&self, cwd: Ino, path: &str, follow: bool, links: &mut u32) -> Result<Ino, i64> {
        if path.is_empty() {
            return Err(ENOENT);
        }
        let mut at = if path.starts_with('/') { ROOT } else { cwd };
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for (i, part) in parts.iter().enumerate() {
            name_ok(part)?;
            let dir = at;
            // Search permission on each directory passed through.
            if self.cred.is_some() && self.is_dir(dir) {
                self.may(dir, perm::MAY_EXEC)?;
            }
            let next = self.lookup(dir, part)?;
            let last = i + 1 == parts.len();
            at = next;
            if let Node::Symlink(target) = &self.get(next).node
                && (!last || follow)
            {
                *links += 1;
                if *links > MAX_LINKS {
                    return Err(ELOOP);
                }
                at = self.walk(dir, target, true, links)?;
            }
        }
        if path.ends_with('/') && !self.is_dir(at) {
            return Err(ENOTDIR);
        }
        Ok(at)
    }

    /// The absolute path `path` names with every symbolic link followed, as
    /// Linux's /proc/PID/exe shows a program (glibc's static start needs it
    /// absolute).
    pub fn canonical(&self, cwd: Ino, path: &str) -> Result<String, i64> {
        let (mut dir, name) = self.parent(cwd, path)?;
        let mut name = String::from(name);
        for _ in 0..MAX_LINKS {
            let ino = self.lookup(dir, &name)?;
            match &self.get(ino).node {
                Node::Symlink(target) => {
                    let (d, n) = self.parent(dir, target)?;
                    (dir, name) = (d, String::from(n));
                }
                _ if self.is_dir(ino) => return Ok(self.path_of(ino)),
                _ => {
                    let d = self.path_of(dir);
                    return Ok(if d == "/" { alloc::format!("/{name}") } else { alloc::format!("{d}/{name}") });
                }
            }
        }
        Err(ELOOP)
    }

    /// The directory that would hold `path`'s last component, and that
    /// component.
    pub fn parent<'p>(&self, cwd: Ino, path: &'p str) -> Result<(Ino, &'p str), i64> {
        let trimmed = path.trim_end_matches('/');
        if trimmed.is_empty() {
            return if path.is_empty() { Err(ENOENT) } else { Ok((ROOT, ".")) };
        }
        let (dir, name) = match trimmed.rfind('/') {
            Some(0) => (ROOT, &trimmed[1..]),
            Some(k) => (self.resolve(cwd, &trimmed[..k], true)?, &trimmed[k + 1..]),
            None => (cwd, trimmed),
        };
        if !self.is_dir(dir) {
            return Err(ENOTDIR);
        }
        name_ok(name)?;
        Ok((dir, name))
    }

    /// Makes `op` durable in the store (a change under /data).
    fn log(&mut self, op: &Op) -> Result<(), i64> {
        self.store.as_mut().ok_or(EIO)?.change(op).map_err(store_err)
    }

    /// Adds `node` as `name` in `dir`; EEXIST if the name is taken.  Under
    /// /data it is created in the store first (a file's bytes then are the
    /// store's).
    pub fn create(&mut self, dir: Ino, name: &str, mut node: Node, mode: u32) -> Result<Ino, i64> {
        if matches!(name, "." | "..") || self.lookup(dir, name).is_ok() {
            return Err(EEXIST);
        }
        self.may_change(dir)?;
        let mut stored = None;
        if let Some(sdir) = self.get(dir).stored {
            let sino = self.store.as_ref().ok_or(EIO)?.tree().fresh();
            let target = if let Node::Symlink(t) = &node { t.as_str() } else { "" };
            self.log(&Op::Create { ino: sino, dir: sdir, mode, name, target })?;
            if let Node::File(_) = node {
                node = Node::File(Data::Stored(sino));
            }
            stored = Some(sino);
        }
        let ino = self.insert(dir, name, node, mode, stored);
        let t = crate::sys::realtime_ns();
        self.get_mut(ino).times = Times { atime: t, mtime: t, ctime: t };
        let _ = self.store_times(ino, false);
        self.changed(dir, true, t);
        Ok(ino)
    }

    /// A change of `ino` at time `t` (one clock reading serves all the
    /// inodes a call changes): its ctime, and its mtime when its contents
    /// changed (a file's bytes, a directory's names).
    pub fn changed(&mut self, ino: Ino, contents: bool, t: u64) {
        let times = &mut self.get_mut(ino).times;
        times.ctime = t;
        if contents {
            times.mtime = t;
        }
        let _ = self.store_times(ino, false);
    }

    /// Gives the store the times of `ino` if it is under /data: written at
    /// once (`now`: utimensat and friends, which report a failure) or with
    /// the next fsync, sync, last close or compaction (a change's times,
    /// rather than a second record for every write; a crash before then
    /// loses them, not the change).
    pub fn store_times(&mut self, ino: Ino, now: bool) -> Result<(), i64> {
        let n = self.get(ino);
        let (stored, t) = (n.stored, [n.times.atime, n.times.mtime, n.times.ctime]);
        let (Some(s), Some(st)) = (stored, self.store.as_mut()) else { return Ok(()) };
        st.set_times(s, t);
        if now { st.sync_times(Some(s)).map_err(store_err) } else { Ok(()) }
    }

    /// Adds `node` as `name` in `dir` in memory only.
    fn insert(&mut self, dir: Ino, name: &str, node: Node, mut mode: u32, stored: Option<u64>) -> Ino {
        let is_dir = matches!(node, Node::Dir { .. });
        // The caller's; the group a setgid directory's, and a directory
        // made in one is setgid too.
        let (uid, mut gid) = self.cred.as_ref().map_or((0, 0), |c| (c.euid, c.egid));
        let d = self.get(dir);
        if d.mode & perm::S_ISGID != 0 {
            gid = d.gid;
            if is_dir {
                mode |= perm::S_ISGID;
            }
        }
        let ino = self.alloc(Inode {
            node,
            mode,
            uid,
            gid,
            xattrs: None,
            nlink: if is_dir { 2 } else { 1 },
            opens: 0,
            stored,
            times: Times::default(),
            maps: 0,
            cache: BTreeMap::new(),
        });
        if let Node::Dir { entries, .. } = &mut self.get_mut(dir).node {
            entries.insert(String::from(name), ino);
        }
        ino
    }

    /// A further name for file `ino` in `dir`.
    pub fn link(&mut self, dir: Ino, name: &str, ino: Ino) -> Result<(), i64> {
        if matches!(name, "." | "..") || self.lookup(dir, name).is_ok() {
            return Err(EEXIST);
        }
        self.may_change(dir)?;
        match (self.get(dir).stored, self.get(ino).stored) {
            (None, None) => {}
            (Some(d), Some(i)) => self.log(&Op::Link { ino: i, dir: d, name })?,
            _ => return Err(EXDEV),
        }
        if let Node::Dir { entries, .. } = &mut self.get_mut(dir).node {
            entries.insert(String::from(name), ino);
        }
        self.get_mut(ino).nlink += 1;
        let t = crate::sys::realtime_ns();
        self.changed(ino, false, t);
        self.changed(dir, true, t);
        Ok(())
    }

    pub fn mkdir(&mut self, dir: Ino, name: &str, perm: u32) -> Result<Ino, i64> {
        self.create(dir, name, Node::Dir { entries: BTreeMap::new(), parent: dir }, S_IFDIR | (perm & 0o7777))
    }

    /// Removes `name` from `dir`: a directory only with `rmdir` (and only
    /// when empty), anything else only without.
    pub fn unlink(&mut self, dir: Ino, name: &str, rmdir: bool) -> Result<(), i64> {
        let ino = self.may_unlink(dir, name, rmdir)?;
        if let Some(d) = self.get(dir).stored {
            self.log(&Op::Unlink { dir: d, name })?;
        }
        let t = crate::sys::realtime_ns();
        self.changed(ino, false, t);
        self.changed(dir, true, t);
        self.detach(dir, name, ino, rmdir);
        Ok(())
    }

    /// Whether `name` in `dir` may go (as unlink or rmdir); its inode.
    fn may_unlink(&self, dir: Ino, name: &str, rmdir: bool) -> Result<Ino, i64> {
        if matches!(name, "." | "..") {
            return Err(if rmdir { EINVAL } else { EISDIR });
        }
        let ino = self.lookup(dir, name)?;
        self.may_change(dir)?;
        self.sticky_ok(dir, ino)?;
        if self.get(ino).stored == Some(store::ROOT) {
            return Err(EBUSY); // the mount point
        }
        match (&self.get(ino).node, rmdir) {
            (Node::Dir { entries, .. }, true) => {
                if !entries.is_empty() {
                    return Err(ENOTEMPTY);
                }
            }
            (Node::Dir { .. }, false) => return Err(EISDIR),
            (_, true) => return Err(ENOTDIR),
            _ => {}
        }
        Ok(ino)
    }

    /// Takes `name` (inode `ino`) out of `dir` in memory.
    fn detach(&mut self, dir: Ino, name: &str, ino: Ino, rmdir: bool) {
        if let Node::Dir { entries, .. } = &mut self.get_mut(dir).node {
            entries.remove(name);
        }
        let n = self.get_mut(ino);
        n.nlink = if rmdir { 0 } else { n.nlink.saturating_sub(1) };
        self.release(ino);
    }

    pub fn rename(&mut self, from_dir: Ino, from: &str, to_dir: Ino, to: &str) -> Result<(), i64> {
        if matches!(from, "." | "..") || matches!(to, "." | "..") {
            return Err(EBUSY);
        }
        let ino = self.lookup(from_dir, from)?;
        self.may_change(from_dir)?;
        self.may_change(to_dir)?;
        self.sticky_ok(from_dir, ino)?;
        if self.get(ino).stored == Some(store::ROOT) {
            return Err(EBUSY); // the mount point
        }
        let (sfrom, sto) = (self.get(from_dir).stored, self.get(to_dir).stored);
        if sfrom.is_some() != sto.is_some() {
            return Err(EXDEV);
        }
        let moving_dir = self.is_dir(ino);
        if moving_dir {
            // Not into itself or below it: the tree would lose it (EINVAL,
            // as Linux).
            let mut at = to_dir;
            loop {
                if at == ino {
                    return Err(EINVAL);
                }
                match &self.get(at).node {
                    Node::Dir { parent, .. } if at != ROOT => at = *parent,
                    _ => break,
                }
            }
        }
        // The name it replaces, checked before anything changes (in the
        // store the replacement is part of the one RENAME record).
        let mut replaced = None;
        if let Ok(old) = self.lookup(to_dir, to) {
            if old == ino {
                return Ok(());
            }
            let rmdir = self.is_dir(old);
            match (moving_dir, rmdir) {
                (true, false) => return Err(ENOTDIR),
                (false, true) => return Err(EISDIR),
                _ => {}
            }
            replaced = Some((self.may_unlink(to_dir, to, rmdir)?, rmdir));
        }
        if let (Some(fd), Some(td)) = (sfrom, sto) {
            self.log(&Op::Rename { from_dir: fd, from, to_dir: td, to })?;
        }
        if let Some((old, rmdir)) = replaced {
            self.detach(to_dir, to, old, rmdir);
        }
        if let Node::Dir { entries, .. } = &mut self.get_mut(from_dir).node {
            entries.remove(from);
        }
        if let Node::Dir { entries, .. } = &mut self.get_mut(to_dir).node {
            entries.insert(String::from(to), ino);
        }
        if let Node::Dir { parent, .. } = &mut self.get_mut(ino).node {
            *parent = to_dir;
        }
        let t = crate::sys::realtime_ns();
        self.changed(ino, false, t);
        self.changed(from_dir, true, t);
        self.changed(to_dir, true, t);
        Ok(())
    }

    /// The absolute path of directory `ino`.
    pub fn path_of(&self, mut ino: Ino) -> String {
        let mut parts: Vec<String> = Vec::new();
        while ino != ROOT {
            let Node::Dir { parent, .. } = &self.get(ino).node else { break };
            let p = *parent;
            if let Node::Dir { entries, .. } = &self.get(p).node
                && let Some((name, _)) = entries.iter().find(|(_, i)| **i == ino)
            {
                parts.push(name.clone());
            }
            ino = p;
        }
        let mut s = String::new();
        for p in parts.iter().rev() {
            s.push('/');
            s.push_str(p);
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    }

    pub fn size(&self, ino: Ino) -> u64 {
        match &self.get(ino).node {
            Node::File(Data::Archive(b)) => b.len() as u64,
            Node::File(Data::Pages(_, len)) => *len,
            Node::File(Data::Stored(s)) => self.stored_bytes(*s).len() as u64,
            Node::Symlink(t) => t.len() as u64,
            Node::Dir { entries, .. } => 4096.max(entries.len() as u64 * 32),
        }
    }

    /// Frees `ino` once it has neither names nor open descriptions (and
    /// the store forgets it).
    pub fn release(&mut self, ino: Ino) {
        let n = self.get(ino);
        let (gone, stored) = (n.nlink == 0 && n.opens == 0 && ino != ROOT, n.stored);
        if n.opens == 0
            && let (Some(s), Some(st)) = (stored, self.store.as_mut())
        {
            // The last close writes the file's times (a failure marks the
            // store failed; the next change reports EIO).
            let _ = st.sync_times(Some(s));
        }
        if gone {
            if let (Some(s), Some(st)) = (stored, self.store.as_mut()) {
                st.forget(s);
            }
            if let Some(x) = self.nodes[ino].take().and_then(|n| n.xattrs) {
                self.xattr_bytes -= x.bytes();
            }
        }
    }

    /// A stored file's bytes.
    fn stored_bytes(&self, sino: u64) -> &[u8] {
        match self.store.as_ref().and_then(|st| st.tree().get(sino)).map(|i| &i.node) {
            Some(store::Node::File(b)) => b,
            _ => &[],
        }
    }

    /// chmod: the permission bits.
    pub fn chmod(&mut self, ino: Ino, mode: u32) -> Result<(), i64> {
        if let Some(s) = self.get(ino).stored {
            self.log(&Op::Chmod { ino: s, mode: mode & 0o7777 })?;
        }
        let n = self.get_mut(ino);
        n.mode = (n.mode & !0o7777) | (mode & 0o7777);
        self.changed(ino, false, crate::sys::realtime_ns());
        Ok(())
    }

    /// Makes what the store acknowledged durable (fsync, sync), after
    /// writing back what shared mappings stored in `ino` (or in every
    /// file).
    pub fn flush(&mut self, ino: Option<Ino>) -> Result<(), i64> {
        if ino.is_some_and(|i| self.get(i).stored.is_none()) {
            return Ok(());
        }
        match ino {
            Some(i) => self.writeback(i)?,
            None => {
                let cached: Vec<Ino> = (0..self.nodes.len())
                    .filter(|&i| self.nodes[i].as_ref().is_some_and(|n| !n.cache.is_empty()))
                    .collect();
                for i in cached {
                    self.writeback(i)?;
                }
            }
        }
        match self.store.as_mut() {
            Some(st) => st.flush().map_err(store_err),
            None => Ok(()),
        }
    }

    /// statfs of a directory on the store: (blocks, free blocks) of 4 KiB.
    pub fn statfs(&self, ino: Ino) -> Option<(u64, u64)> {
        self.get(ino).stored?;
        let s = self.store.as_ref()?.status();
        Some((s.bytes_capacity / 4096, s.bytes_capacity.saturating_sub(s.bytes_used) / 4096))
    }

    /// Reads file bytes at `off`; returns how many.
    pub fn read(&self, ino: Ino, off: u64, out: &mut [u8]) -> Result<usize, i64> {
        match &self.get(ino).node {
            Node::File(Data::Archive(b)) => {
                let start = (off as usize).min(b.len());
                let n = out.len().min(b.len() - start);
                out[..n].copy_from_slice(&b[start..start + n]);
                Ok(n)
            }
            Node::File(Data::Pages(pages, len)) => {
                let n = (*len).saturating_sub(off).min(out.len() as u64) as usize;
                let mut done = 0;
                while done < n {
                    let a = off + done as u64;
                    let po = (a % PAGE) as usize;
                    let k = (PAGE as usize - po).min(n - done);
                    match pages.get((a / PAGE) as usize).and_then(|p| p.as_ref()) {
                        Some(f) => out[done..done + k].copy_from_slice(&f.bytes()[po..po + k]),
                        None => out[done..done + k].fill(0),
                    }
                    done += k;
                }
                Ok(n)
            }
            Node::File(Data::Stored(s)) => {
                let b = self.stored_bytes(*s);
                let start = (off.min(b.len() as u64)) as usize;
                let n = out.len().min(b.len() - start);
                out[..n].copy_from_slice(&b[start..start + n]);
                self.with_cache(ino, off, n, |file, frame| file.copy_from_slice(frame), &mut out[..n]);
                Ok(n)
            }
            Node::Dir { .. } => Err(EISDIR),
            Node::Symlink(_) => Err(EINVAL),
        }
    }

    /// Turns archive data into pages, so that it can be written.
    fn own(&mut self, ino: Ino) -> Result<(), i64> {
        let Node::File(d) = &self.get(ino).node else { return Err(EISDIR) };
        if let Data::Archive(b) = d {
            let b: &'static [u8] = b;
            let mut pages = Vec::new();
            for chunk in b.chunks(PAGE as usize) {
                pages.push(Some(Frame::with(chunk, 0)?));
            }
            self.get_mut(ino).node = Node::File(Data::Pages(pages, b.len() as u64));
        }
        Ok(())
    }

    pub fn write(&mut self, ino: Ino, off: u64, data: &[u8]) -> Result<usize, i64> {
        let n = self.write_bytes(ino, off, data)?;
        if n > 0 {
            self.changed(ino, true, crate::sys::realtime_ns());
        }
        Ok(n)
    }

    fn write_bytes(&mut self, ino: Ino, off: u64, data: &[u8]) -> Result<usize, i64> {
        // Past the largest offset (loff_t's): EINVAL, as Linux.
        let end = off.checked_add(data.len() as u64).filter(|&e| e <= i64::MAX as u64).ok_or(EINVAL)?;
        let old = self.size(ino);
        if end > old {
            self.zero_tail(ino, old);
        }
        if let Node::File(Data::Stored(s)) = self.get(ino).node {
            let n = self.store.as_mut().ok_or(EIO)?.write(s, off, data).map_err(store_err)?;
            if !self.get(ino).cache.is_empty() {
                // What the shared mappings see too.
                let mut data = data[..n].to_vec();
                self.with_cache(ino, off, n, |file, frame| frame.copy_from_slice(file), &mut data);
            }
            return Ok(n);
        }
        self.own(ino)?;
        let Node::File(Data::Pages(pages, len)) = &mut self.get_mut(ino).node else {
            return Err(EISDIR);
        };
        if end > MAX_MEM_FILE {
            return Err(EFBIG);
        }
        let mut done = 0;
        while done < data.len() {
            let a = off + done as u64;
            let po = (a % PAGE) as usize;
            let k = (PAGE as usize - po).min(data.len() - done);
            let idx = (a / PAGE) as usize;
            grow_pages(pages, idx)?;
            if pages[idx].is_none() {
                pages[idx] = Some(Frame::new()?);
            }
            pages[idx].as_ref().unwrap().bytes_mut()[po..po + k].copy_from_slice(&data[done..done + k]);
            done += k;
        }
        *len = (*len).max(end);
        Ok(data.len())
    }

    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<(), i64> {
        self.truncate_bytes(ino, size)?;
        self.changed(ino, true, crate::sys::realtime_ns());
        Ok(())
    }

    fn truncate_bytes(&mut self, ino: Ino, size: u64) -> Result<(), i64> {
        let old = self.size(ino);
        if let Node::File(Data::Stored(s)) = self.get(ino).node {
            self.log(&Op::Truncate { ino: s, size })?;
            let keep = size.div_ceil(PAGE);
            self.get_mut(ino).cache.retain(|&i, _| i < keep);
        } else {
            self.truncate_pages(ino, size)?;
        }
        // The part of the last page past the end reads zeros (also where a
        // mapping stored there, past the old end, and the file grew).
        self.zero_tail(ino, size.min(old));
        if size < old && self.get(ino).maps > 0 {
            // SAFETY: single threaded.
            #[allow(static_mut_refs)]
            unsafe {
                STALE.push((ino, size.next_multiple_of(PAGE)))
            };
        }
        Ok(())
    }

    /// Zeroes the bytes of `ino`'s page holding byte `size` from there to
    /// the page's end, in the frame a mapping sees (a file's page or a
    /// stored file's cache): a mapping may have stored past the end of the
    /// file, which must not show when the file grows (as Linux's disk
    /// file systems drop such bytes when they write the page back).
    fn zero_tail(&mut self, ino: Ino, size: u64) {
        if size % PAGE == 0 {
            return;
        }
        let idx = size / PAGE;
        let n = self.get(ino);
        let frame = match &n.node {
            Node::File(Data::Pages(pages, _)) => pages.get(idx as usize).and_then(|p| p.as_ref()),
            Node::File(Data::Stored(_)) => n.cache.get(&idx),
            _ => None,
        };
        if let Some(f) = frame {
            f.bytes_mut()[(size % PAGE) as usize..].fill(0);
        }
    }

    /// Truncates an in-memory file's pages.
    fn truncate_pages(&mut self, ino: Ino, size: u64) -> Result<(), i64> {
        if size > MAX_MEM_FILE {
            return Err(EFBIG);
        }
        self.own(ino)?;
        let Node::File(Data::Pages(pages, len)) = &mut self.get_mut(ino).node else {
            return Err(EISDIR);
        };
        let keep = size.div_ceil(PAGE) as usize;
        pages.truncate(keep);
        if size % PAGE != 0
            && let Some(Some(f)) = pages.get(keep - 1)
        {
            f.bytes_mut()[(size % PAGE) as usize..].fill(0);
        }
        *len = size;
        Ok(())
    }

    /// The whole content of a file, borrowed when it is archive data.
    pub fn contents(&self, ino: Ino) -> Result<alloc::borrow::Cow<'static, [u8]>, i64> {
        match &self.get(ino).node {
            Node::File(Data::Archive(b)) => Ok(alloc::borrow::Cow::Borrowed(b)),
            Node::File(Data::Pages(..) | Data::Stored(_)) => {
                let mut v = alloc::vec![0u8; self.size(ino) as usize];
                self.read(ino, 0, &mut v)?;
                Ok(alloc::borrow::Cow::Owned(v))
            }
            Node::Dir { .. } => Err(EACCES),
            Node::Symlink(_) => Err(ELOOP),
        }
    }

    /// Fills the file system from a ustar archive.
    pub fn load_archive(&mut self, archive: &'static [u8]) -> Result<usize, LoadError<'static>> {
        let mut count = 0;
        for m in keep_workhorse::tar::members(archive) {
            let m = m.map_err(LoadError::Tar)?;
            let path = m.path.trim_end_matches('/');
            if path.is_empty() {
                continue;
            }
            let (dir, name) = self.parent(ROOT, path).map_err(|e| LoadError::Path(e, path))?;
            let node = match m.kind {
                keep_workhorse::tar::Kind::Dir => {
                    if self.lookup(dir, name).is_ok() {
                        continue;
                    }
                    Node::Dir { entries: BTreeMap::new(), parent: dir }
                }
                keep_workhorse::tar::Kind::File => Node::File(Data::Archive(m.data)),
                keep_workhorse::tar::Kind::Symlink => Node::Symlink(String::from(m.link)),
            };
            let ty = match m.kind {
                keep_workhorse::tar::Kind::Dir => S_IFDIR,
                keep_workhorse::tar::Kind::File => S_IFREG,
                keep_workhorse::tar::Kind::Symlink => S_IFLNK,
            };
            self.create(dir, name, node, ty | (m.mode & 0o7777))
                .map_err(|e| LoadError::Path(e, path))?;
            count += 1;
        }
        Ok(count)
    }
}

/// Shared file mappings (docs/workhorse.md, "Shared file mappings"): a
/// mapping's page is the file's own frame, one per page however many
/// processes map it.  An in-memory file's pages are frames already (an
/// archive file is copied into frames when first mapped shared); a file
/// under /data gets frames in its inode's `cache` while mapped, which read
/// and write go through too, and stores made through a mapping reach the
/// store when written back.
impl Fs {
    /// A shared mapping of `ino` was made (it holds the file open).
    pub fn mapped(&mut self, ino: Ino) {
        let n = self.get_mut(ino);
        n.maps += 1;
        n.opens += 1;
    }

    /// A shared mapping of `ino` went: the frames nobody maps now are
    /// written back and leave the cache (all of them with the last
    /// mapping), and the inode goes if nothing else holds it.
    pub fn unmapped(&mut self, ino: Ino) {
        let n = self.get_mut(ino);
        n.maps -= 1;
        n.opens -= 1;
        self.trim(ino);
        self.release(ino);
    }

    /// The frame holding `ino`'s bytes from `off` (page aligned) for a
    /// shared mapping; BEYOND_EOF when the page starts past the end of
    /// the file.
    pub fn shared_page(&mut self, ino: Ino, off: u64) -> Result<Rc<Frame>, i64> {
        if off >= self.size(ino).next_multiple_of(PAGE) {
            return Err(BEYOND_EOF);
        }
        self.own(ino)?;
        let idx = off / PAGE;
        let sino = match &mut self.get_mut(ino).node {
            Node::File(Data::Pages(pages, _)) => {
                let i = idx as usize;
                grow_pages(pages, i)?;
                if pages[i].is_none() {
                    // A hole: its frame is made now, so that a later write
                    // and every mapping find the same one.
                    pages[i] = Some(Frame::new()?);
                }
                return Ok(pages[i].clone().unwrap());
            }
            Node::File(Data::Stored(s)) => *s,
            _ => return Err(ENODEV),
        };
        if let Some(f) = self.get(ino).cache.get(&idx) {
            return Ok(f.clone());
        }
        let b = self.stored_bytes(sino);
        let f = Frame::with(&b[off as usize..b.len().min((off + PAGE) as usize)], 0)?;
        self.get_mut(ino).cache.insert(idx, f.clone());
        Ok(f)
    }

    /// Calls `f(part of buf, the same bytes in a cached frame)` for each
    /// cached page of `ino` that the file's bytes [off, off+n) touch
    /// (`buf` holds those bytes).
    fn with_cache(&self, ino: Ino, off: u64, n: usize, f: impl Fn(&mut [u8], &mut [u8]), buf: &mut [u8]) {
        let cache = &self.get(ino).cache;
        let end = off + n as u64;
        if cache.is_empty() || n == 0 {
            return;
        }
        for (&idx, frame) in cache.range(off / PAGE..end.div_ceil(PAGE)) {
            let at = idx * PAGE;
            let (a, b) = (at.max(off), (at + PAGE).min(end));
            f(&mut buf[(a - off) as usize..(b - off) as usize], &mut frame.bytes_mut()[(a - at) as usize..(b - at) as usize]);
        }
    }

    /// Writes what shared mappings stored in a file under /data to the
    /// store: each cached page's bytes that differ from the store's (up to
    /// the end of the file), one record a page.  Other files' mappings map
    /// the file's own frames: nothing to do.
    pub fn writeback(&mut self, ino: Ino) -> Result<(), i64> {
        let n = self.get(ino);
        let Node::File(Data::Stored(s)) = n.node else { return Ok(()) };
        let pages: Vec<(u64, Rc<Frame>)> = n.cache.iter().map(|(i, f)| (*i, f.clone())).collect();
        let mut wrote = false;
        for (idx, frame) in pages {
            let b = self.stored_bytes(s);
            let at = (idx * PAGE) as usize;
            if at >= b.len() {
                continue; // (truncate drops such pages from the cache)
            }
            let within = (b.len() - at).min(PAGE as usize);
            let (old, new) = (&b[at..at + within], &frame.bytes()[..within]);
            if old == new {
                continue;
            }
            let first = (0..within).find(|&i| old[i] != new[i]).unwrap_or(0);
            let last = (0..within).rfind(|&i| old[i] != new[i]).unwrap_or(0);
            self.store.as_mut().ok_or(EIO)?.write(s, (at + first) as u64, &new[first..=last]).map_err(store_err)?;
            wrote = true;
        }
        if wrote {
            self.changed(ino, true, crate::sys::realtime_ns());
        }
        Ok(())
    }

    /// Writes `ino`'s cached pages back and lets go of those no mapping
    /// holds now (every one when no mapping is left).
    pub fn trim(&mut self, ino: Ino) {
        if self.nodes.get(ino).and_then(Option::as_ref).is_none_or(|n| n.cache.is_empty()) {
            return;
        }
        if let Err(e) = self.writeback(ino) {
            println!("workhorse: a shared mapping's stores to a file under /{DATA} are lost: error {e}");
        }
        let n = self.get_mut(ino);
        let none = n.maps == 0;
        n.cache.retain(|_, f| !none && Rc::strong_count(f) > 1);
    }
}

impl Fs {
    /// Mounts the store on the disk at /data (made in memory first, so
    /// that /data is there whatever happens); says on the console what it
    /// found, or why /data stays in memory.
    pub fn mount_data(&mut self) {
        // It runs as the first request arrives, whose string (a command
        // line) is still to be read from the IPC buffer, which the block
        // server's calls use: keep it.
        let buf = keep_rt::ipc_buffer();
        let (len, saved) = (buf.recv_len, buf.string);
        self.mount_data_now();
        let buf = keep_rt::ipc_buffer();
        buf.string = saved;
        buf.recv_len = len;
    }

    fn mount_data_now(&mut self) {
        let at = match self.lookup(ROOT, DATA) {
            Ok(i) if self.is_dir(i) => i,
            Ok(_) => return println!("workhorse: /{DATA} is not a directory in the root file system: no store"),
            Err(_) => match self.mkdir(ROOT, DATA, 0o755) {
                Ok(i) => i,
                Err(e) => return println!("workhorse: cannot make /{DATA} ({e})"),
            },
        };
        let disk = match BlkDisk::open() {
            Ok(d) => d,
            Err(why) => return println!("workhorse: /{DATA} is in memory: {why}"),
        };
        let sectors = store::Disk::sectors(&disk);
        // SAFETY: rdtsc has no effects.
        let seed = unsafe { core::arch::x86_64::_rdtsc() } ^ keep_abi::TIMER.now().map(|(ms, t)| ms ^ t.rotate_left(21)).unwrap_or(0);
        let (mut st, m) = match Store::mount(disk, seed) {
            Ok(r) => r,
            Err((_, e)) => {
                let why = match e {
                    store::MountError::TooSmall => alloc::format!("the range ({sectors} sectors) is smaller than a store ({})", store::min_sectors()),
                    store::MountError::Io => String::from("the disk failed"),
                    store::MountError::Damaged(w) => alloc::format!("the store is damaged ({w}); the disk is left as it is"),
                };
                return println!("workhorse: /{DATA} is in memory: {why}");
            }
        };
        if !matches!(&self.get(at).node, Node::Dir { entries, .. } if entries.is_empty()) {
            return println!("workhorse: /{DATA} is not empty in the root file system: no store");
        }
        // The store's tree into the vfs, directories before what they hold;
        // a file's further names are links to the same inode.
        let root_mode = st.tree().get(store::ROOT).map_or(0o755, |i| i.mode);
        // The store's times; an inode whose times were never written (a
        // store written before it kept them, or a file whose lazily
        // written times a power cut or a kill lost) has 0: it takes the
        // mount's time, which is written to the store below, so that every
        // later mount shows the same.
        let now = crate::sys::realtime_ns();
        let mut untimed = alloc::vec::Vec::new();
        let times_of = |sino: u64| match st.tree().get(sino).map_or([0; 3], |i| i.times) {
            [0, 0, 0] => Times { atime: now, mtime: now, ctime: now },
            [atime, mtime, ctime] => Times { atime, mtime, ctime },
        };
        let n = self.get_mut(at);
        n.stored = Some(store::ROOT);
        n.mode = S_IFDIR | (root_mode & 0o7777);
        n.times = times_of(store::ROOT);
        if st.tree().get(store::ROOT).is_some_and(|i| i.times == [0; 3]) {
            untimed.push(store::ROOT);
        }
        let mut made: BTreeMap<u64, Ino> = BTreeMap::new();
        let (mut files, mut dirs) = (0, 0);
        let mut stack = alloc::vec![(store::ROOT, at)];
        while let Some((sdir, vdir)) = stack.pop() {
            let Some(store::Node::Dir { entries, .. }) = st.tree().get(sdir).map(|i| &i.node) else { continue };
            for (name, &sino) in entries {
                if let Some(&v) = made.get(&sino) {
                    let _ = self.link_memory(vdir, name, v);
                    continue;
                }
                let i = st.tree().get(sino).expect("an entry's inode");
                let node = match &i.node {
                    store::Node::Dir { .. } => Node::Dir { entries: BTreeMap::new(), parent: vdir },
                    store::Node::File(_) => Node::File(Data::Stored(sino)),
                    store::Node::Symlink(t) => Node::Symlink(t.clone()),
                };
                let v = self.insert(vdir, name, node, i.mode, Some(sino));
                self.get_mut(v).times = times_of(sino);
                if i.times == [0; 3] {
                    untimed.push(sino);
                }
                made.insert(sino, v);
                if matches!(i.node, store::Node::Dir { .. }) {
                    dirs += 1;
                    stack.push((sino, v));
                } else {
                    files += 1;
                }
            }
        }
        for &sino in &untimed {
            st.set_times(sino, [now; 3]);
        }
        if !untimed.is_empty() && st.sync_times(None).is_err() {
            println!("workhorse: /{DATA}: the times given to {} inodes at mount could not be written", untimed.len());
        }
        let s = st.status();
        if m.formatted {
            println!("workhorse: /{DATA}: no store on the disk's range ({sectors} sectors): formatted a new one ({} KiB)", s.bytes_capacity / 1024);
        } else {
            println!(
                "workhorse: /{DATA}: the store on the disk: {files} files, {dirs} directories, {} KiB of {} KiB; replayed {} checkpoint and {} log records{}{}",
                s.bytes_used / 1024,
                s.bytes_capacity / 1024,
                m.checkpoint_records,
                m.log_records,
                if m.torn_tail { "; an unfinished last record dropped" } else { "" },
                if m.bad_header { "; one of its two headers is damaged (the other was used)" } else { "" },
            );
        }
        self.store = Some(st);
    }

    /// A further name for `ino` in memory only (the store has it already).
    fn link_memory(&mut self, dir: Ino, name: &str, ino: Ino) -> Result<(), i64> {
        if let Node::Dir { entries, .. } = &mut self.get_mut(dir).node {
            entries.insert(String::from(name), ino);
        }
        self.get_mut(ino).nlink += 1;
        Ok(())
    }

    /// The store's state, for /proc/keep-store (None: /data is in memory).
    pub fn store_status(&self) -> Option<String> {
        let st = self.store.as_ref()?;
        let s = st.status();
        Some(alloc::format!(
            "epoch {}\nlog_records {}\nlog_sectors {} of {}\nbytes_used {}\nbytes_free {}\ncompactions {}\nreconnects {}\nstate {}\n",
            s.epoch,
            s.log_records,
            s.log_sectors_used,
            s.log_sectors,
            s.bytes_used,
            s.bytes_capacity.saturating_sub(s.bytes_used),
            s.compactions,
            st.disk().reconnects,
            if s.failed { "failed (read-only until the workhorse restarts)" } else { "ok" },
        ))
    }
}

/// The largest in-memory file (EFBIG past it, from write and truncate, as
/// a file system's maximum file size): its table of pages, one pointer a
/// page, holes included, stays within 32 MiB of the server's heap.
pub const MAX_MEM_FILE: u64 = 16 << 30;

/// Makes `pages` hold index `idx`; ENOSPC when the server's heap cannot
/// grow (the file system is out of memory), never an abort.
fn grow_pages(pages: &mut Vec<Option<Rc<Frame>>>, idx: usize) -> Result<(), i64> {
    if pages.len() <= idx {
        pages.try_reserve(idx + 1 - pages.len()).map_err(|_| ENOSPC)?;
        pages.resize(idx + 1, None);
    }
    Ok(())
}
