//! Extended attributes of one file of the in-memory tree, by Linux's
//! rules for a file system that keeps them (tmpfs): the namespaces
//! `user.`, `trusted.` and `security.` (anything else is EOPNOTSUPP),
//! XATTR_CREATE and XATTR_REPLACE, the size conventions of getxattr and
//! listxattr (0 asks the size; too small is ERANGE), and who may do what:
//! `user.` needs read or write permission on a regular file or directory
//! (EPERM to set it on anything else, where there are none to read);
//! `trusted.` is root's alone (others see none and may set none); anyone
//! may read `security.`, only root set it.  Errors are Linux's errno
//! values; the server's handlers (sys/files.rs) find the file, judge the
//! permission bits and copy the bytes.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use crate::linux::errno::{E2BIG, EACCES, EEXIST, EINVAL, ENODATA, ENOSPC, EOPNOTSUPP, EPERM, ERANGE};
pub use crate::linux::fs::{NAME_MAX, XATTR_CREATE, XATTR_REPLACE, XATTR_SIZE_MAX as SIZE_MAX};

/// An attribute's namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    User,
    Trusted,
    Security,
}

/// The namespace of `name` (EOPNOTSUPP for another prefix, EINVAL for a
/// prefix alone, ERANGE for an empty or too long name).
pub fn space(name: &[u8]) -> Result<Space, i64> {
    if name.is_empty() || name.len() > NAME_MAX {
        return Err(ERANGE);
    }
    let (space, rest) = if let Some(r) = name.strip_prefix(b"user.") {
        (Space::User, r)
    } else if let Some(r) = name.strip_prefix(b"trusted.") {
        (Space::Trusted, r)
    } else if let Some(r) = name.strip_prefix(b"security.") {
        (Space::Security, r)
    } else {
        return Err(EOPNOTSUPP);
    };
    if rest.is_empty() {
        return Err(EINVAL);
    }
    Ok(space)
}

/// Who asks and what the file lets it do: whether the caller is root,
/// whether the file is a regular file or directory, and whether its mode
/// bits let the caller read and write it.
#[derive(Clone, Copy, Debug)]
pub struct Access {
    pub root: bool,
    pub plain: bool,
    pub may_read: bool,
    pub may_write: bool,
}

/// What asking for `space` gives before the attribute is looked at:
/// Ok(true) to go on, Ok(false) for "none there" (ENODATA for a read),
/// Err for the error.
fn allowed(space: Space, a: Access, write: bool) -> Result<bool, i64> {
    match space {
        Space::Trusted if !a.root => if write { Err(EPERM) } else { Ok(false) },
        Space::Security if write && !a.root => Err(EPERM),
        Space::Security => Ok(true),
        Space::Trusted => Ok(true),
        Space::User if !a.plain => if write { Err(EPERM) } else { Ok(false) },
        Space::User if write && !a.may_write => Err(EACCES),
        Space::User if !write && !a.may_read => Err(EACCES),
        Space::User => Ok(true),
    }
}

/// A file's attributes.
#[derive(Clone, Debug, Default)]
pub struct Xattrs {
    map: BTreeMap<Vec<u8>, Vec<u8>>,
}

/// The bytes an attribute holds of the server's memory (name and value).
pub fn cost(name: &[u8], value: &[u8]) -> usize {
    name.len() + value.len() + 32
}

impl Xattrs {
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The memory all of them hold (`cost` of each).
    pub fn bytes(&self) -> usize {
        self.map.iter().map(|(n, v)| cost(n, v)).sum()
    }

    /// getxattr: the value (the caller copies at most `size`; `size` 0
    /// asks the length, a smaller one is ERANGE).
    pub fn get(&self, name: &[u8], a: Access, size: usize) -> Result<&[u8], i64> {
        let s = space(name)?;
        if !allowed(s, a, false)? {
            return Err(ENODATA);
        }
        let v = self.map.get(name).ok_or(ENODATA)?;
        if size != 0 && size < v.len() {
            return Err(ERANGE);
        }
        Ok(v)
    }

    /// setxattr with `flags`; `budget` is the memory the tree may still
    /// give attributes (ENOSPC past it).  The change in memory held.
    pub fn set(&mut self, name: &[u8], value: &[u8], flags: u32, a: Access, budget: usize) -> Result<isize, i64> {
        if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
            return Err(EINVAL);
        }
        let s = space(name)?;
        if value.len() > SIZE_MAX {
            return Err(E2BIG);
        }
        allowed(s, a, true)?;
        let old = self.map.get(name);
        match (old, flags) {
            (Some(_), f) if f & XATTR_CREATE != 0 => return Err(EEXIST),
            (None, f) if f & XATTR_REPLACE != 0 => return Err(ENODATA),
            _ => {}
        }
        let was = old.map_or(0, |v| cost(name, v));
        let now = cost(name, value);
        if now > was && now - was > budget {
            return Err(ENOSPC);
        }
        self.map.insert(name.to_vec(), value.to_vec());
        Ok(now as isize - was as isize)
    }

    /// removexattr: the memory it gave back.
    pub fn remove(&mut self, name: &[u8], a: Access) -> Result<usize, i64> {
        let s = space(name)?;
        allowed(s, a, true)?;
        let v = self.map.remove(name).ok_or(ENODATA)?;
        Ok(cost(name, &v))
    }

    /// listxattr: the names the caller may see, each with its NUL
    /// (`size` 0 asks the length; a smaller one than the list is ERANGE).
    pub fn list(&self, a: Access, size: usize) -> Result<Vec<u8>, i64> {
        let mut out = Vec::new();
        for n in self.map.keys() {
            let visible = match space(n) {
                Ok(Space::Trusted) => a.root,
                Ok(Space::User) => a.plain,
                _ => true,
            };
            if visible {
                out.extend_from_slice(n);
                out.push(0);
            }
        }
        if size != 0 && size < out.len() {
            return Err(ERANGE);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Access = Access { root: true, plain: true, may_read: true, may_write: true };
    const READER: Access = Access { root: false, plain: true, may_read: true, may_write: false };
    const BIG: usize = 1 << 20;

    #[test]
    fn names() {
        assert_eq!(space(b"user.a"), Ok(Space::User));
        assert_eq!(space(b"trusted.a"), Ok(Space::Trusted));
        assert_eq!(space(b"security.a"), Ok(Space::Security));
        assert_eq!(space(b"user."), Err(EINVAL));
        assert_eq!(space(b"other.a"), Err(EOPNOTSUPP));
        assert_eq!(space(b"system.posix_acl_access"), Err(EOPNOTSUPP));
        assert_eq!(space(b""), Err(ERANGE));
        let long = [b'u'; 256];
        assert_eq!(space(&long), Err(ERANGE));
    }

    #[test]
    fn set_get_list_remove() {
        let mut x = Xattrs::default();
        assert_eq!(x.get(b"user.a", ROOT, 0), Err(ENODATA));
        assert!(x.set(b"user.a", b"one", 0, ROOT, BIG).is_ok());
        assert_eq!(x.get(b"user.a", ROOT, 0), Ok(&b"one"[..]));
        assert_eq!(x.get(b"user.a", ROOT, 2), Err(ERANGE));
        assert_eq!(x.get(b"user.a", ROOT, 3), Ok(&b"one"[..]));
        assert_eq!(x.set(b"user.a", b"x", XATTR_CREATE, ROOT, BIG), Err(EEXIST));
        assert_eq!(x.set(b"user.b", b"x", XATTR_REPLACE, ROOT, BIG), Err(ENODATA));
        assert_eq!(x.set(b"user.b", b"x", 4, ROOT, BIG), Err(EINVAL));
        assert!(x.set(b"user.a", b"", XATTR_REPLACE, ROOT, BIG).is_ok());
        assert_eq!(x.get(b"user.a", ROOT, 0), Ok(&b""[..]));
        assert!(x.set(b"trusted.t", b"t", 0, ROOT, BIG).is_ok());
        assert_eq!(x.list(ROOT, 0).unwrap(), b"trusted.t\0user.a\0");
        assert_eq!(x.list(ROOT, 5), Err(ERANGE));
        assert_eq!(x.remove(b"user.a", ROOT).map(|_| ()), Ok(()));
        assert_eq!(x.remove(b"user.a", ROOT), Err(ENODATA));
        assert_eq!(x.set(b"user.big", &[0; SIZE_MAX + 1], 0, ROOT, BIG), Err(E2BIG));
    }

    #[test]
    fn who_may() {
        let mut x = Xattrs::default();
        x.set(b"user.a", b"1", 0, ROOT, BIG).unwrap();
        x.set(b"trusted.t", b"2", 0, ROOT, BIG).unwrap();
        x.set(b"security.s", b"3", 0, ROOT, BIG).unwrap();
        assert_eq!(x.get(b"user.a", READER, 0), Ok(&b"1"[..]));
        assert_eq!(x.set(b"user.a", b"9", 0, READER, BIG), Err(EACCES));
        assert_eq!(x.get(b"trusted.t", READER, 0), Err(ENODATA));
        assert_eq!(x.set(b"trusted.t", b"9", 0, READER, BIG), Err(EPERM));
        assert_eq!(x.get(b"security.s", READER, 0), Ok(&b"3"[..]));
        assert_eq!(x.set(b"security.s", b"9", 0, READER, BIG), Err(EPERM));
        assert_eq!(x.list(READER, 0).unwrap(), b"security.s\0user.a\0");
        let none = Access { may_read: false, ..READER };
        assert_eq!(x.get(b"user.a", none, 0), Err(EACCES));
        // A symbolic link or a FIFO has no user attributes.
        let link = Access { plain: false, ..ROOT };
        assert_eq!(x.set(b"user.b", b"1", 0, link, BIG), Err(EPERM));
        assert_eq!(Xattrs::default().get(b"user.b", link, 0), Err(ENODATA));
    }

    #[test]
    fn budget() {
        let mut x = Xattrs::default();
        assert_eq!(x.set(b"user.a", &[0; 100], 0, ROOT, 50), Err(ENOSPC));
        let grew = x.set(b"user.a", &[0; 10], 0, ROOT, 1000).unwrap();
        assert_eq!(grew as usize, x.bytes());
        // Shrinking needs no budget.
        assert!(x.set(b"user.a", b"", 0, ROOT, 0).unwrap() < 0);
        assert_eq!(x.remove(b"user.a", ROOT).unwrap(), cost(b"user.a", b""));
    }
}
