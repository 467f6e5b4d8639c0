//! Owners and permissions, Linux's rules: who a process is (`Cred`), what
//! a file's mode bits let it do (`may`), who may change a file's mode and
//! owner, and which changes of its own ids a process may make.  The
//! server's handlers (sys/files.rs, sys/creds.rs, vfs.rs) ask these.

use alloc::vec::Vec;
use crate::linux::fs::{S_IFDIR, S_IFMT, S_IXGRP};
pub use crate::linux::fs::{S_ISGID, S_ISUID, S_ISVTX};

pub const MAY_READ: u32 = 4;
pub const MAY_WRITE: u32 = 2;
pub const MAY_EXEC: u32 = 1;


/// A process's user and group ids: real, effective, saved, and its
/// supplementary groups.  The file-system ids are the effective ones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cred {
    pub ruid: u32,
    pub euid: u32,
    pub suid: u32,
    pub rgid: u32,
    pub egid: u32,
    pub sgid: u32,
    pub groups: Vec<u32>,
}

/// -1 as an id argument: "leave it".
pub const KEEP: u32 = u32::MAX;

impl Cred {
    pub fn root(&self) -> bool {
        self.euid == 0
    }

    /// Whether the effective group or a supplementary one is `gid`.
    pub fn in_group(&self, gid: u32) -> bool {
        self.egid == gid || self.groups.contains(&gid)
    }

    /// Whether `want` (MAY_* bits) on a file of owner `uid`, group `gid`
    /// and mode `mode` is allowed, as Linux's generic permission check:
    /// root may read and write anything and search any directory, and
    /// execute a file with some execute bit; anyone else is judged by the
    /// owner's bits if it owns the file, else the group's if it is in the
    /// file's group, else the others'.  `real`: by the real ids
    /// (access(2) without AT_EACCESS).
    pub fn may(&self, uid: u32, gid: u32, mode: u32, want: u32, real: bool) -> bool {
        let (me, my_gid) = if real { (self.ruid, self.rgid) } else { (self.euid, self.egid) };
        if me == 0 {
            return want & MAY_EXEC == 0 || mode & S_IFMT == S_IFDIR || mode & 0o111 != 0;
        }
        let bits = if me == uid {
            mode >> 6
        } else if my_gid == gid || self.groups.contains(&gid) {
            mode >> 3
        } else {
            mode
        } & 7;
        want & !bits == 0
    }

    /// chmod: the owner or root; anyone else EPERM.  The mode kept: a
    /// setgid bit asked for by a non-root owner outside the file's group
    /// is dropped, as Linux drops it.
    pub fn chmod(&self, uid: u32, gid: u32, mode: u32) -> Result<u32, ()> {
        if !self.root() && self.euid != uid {
            return Err(());
        }
        let mut m = mode & 0o7777;
        if !self.root() && !self.in_group(gid) {
            m &= !S_ISGID;
        }
        Ok(m)
    }

    /// chown to `new_uid`, `new_gid` (KEEP for either: unchanged) of a file
    /// now `uid`, `gid`, `mode`: root may give it to anyone; its owner may
    /// only change its group, to one of its own groups.  The new owner,
    /// group and mode (on anything but a directory setuid dropped, and
    /// setgid when the group may execute, whatever the ids, as Linux), or
    /// Err for EPERM.
    pub fn chown(&self, uid: u32, gid: u32, mode: u32, new_uid: u32, new_gid: u32) -> Result<(u32, u32, u32), ()> {
        let to_uid = if new_uid == KEEP { uid } else { new_uid };
        let to_gid = if new_gid == KEEP { gid } else { new_gid };
        if !self.root() {
            if self.euid != uid || to_uid != uid || (to_gid != gid && !self.in_group(to_gid)) {
                return Err(());
            }
        }
        let mut m = mode;
        if mode & S_IFMT != S_IFDIR {
            m &= !S_ISUID;
            if m & S_IXGRP != 0 {
                m &= !S_ISGID;
            }
        }
        Ok((to_uid, to_gid, m))
    }

    /// Whether a further name (link) may be made for a file of `uid`,
    /// `gid`, `mode`, as Linux with protected hard links (Debian's
    /// default): by root or the owner; anyone else only for a regular file
    /// that is neither setuid nor setgid-executable and that it may read
    /// and write.
    pub fn may_hardlink(&self, uid: u32, gid: u32, mode: u32) -> bool {
        if self.root() || self.euid == uid {
            return true;
        }
        mode & S_IFMT == 0o100000
            && mode & S_ISUID == 0
            && mode & (S_ISGID | S_IXGRP) != (S_ISGID | S_IXGRP)
            && self.may(uid, gid, mode, MAY_READ | MAY_WRITE, false)
    }

    /// Whether a signal may be sent to a process of `target`'s ids (kill's
    /// rule): by root, or when the sender's real or effective uid is the
    /// target's real or saved one.  (SIGCONT within a session is allowed
    /// whatever the ids: the caller checks that.)
    pub fn may_signal(&self, target: &Cred) -> bool {
        self.root()
            || [self.ruid, self.euid].iter().any(|u| *u == target.ruid || *u == target.suid)
    }

    /// Whether a name in a sticky directory (owner `dir_uid`) of a file
    /// owned by `file_uid` may be removed or replaced: by root, the file's
    /// owner or the directory's.
    pub fn may_unlink_sticky(&self, dir_mode: u32, dir_uid: u32, file_uid: u32) -> bool {
        dir_mode & S_ISVTX == 0 || self.root() || self.euid == file_uid || self.euid == dir_uid
    }

    /// setresuid(r, e, s) (KEEP: unchanged): root sets any; anyone else
    /// only to one of its current real, effective or saved ids.
    pub fn setresuid(&mut self, r: u32, e: u32, s: u32) -> Result<(), ()> {
        let ok = |x: u32| x == KEEP || x == self.ruid || x == self.euid || x == self.suid;
        if !self.root() && !(ok(r) && ok(e) && ok(s)) {
            return Err(());
        }
        if r != KEEP {
            self.ruid = r;
        }
        if e != KEEP {
            self.euid = e;
        }
        if s != KEEP {
            self.suid = s;
        }
        Ok(())
    }

    /// setresgid, as setresuid (root meaning an effective uid of 0).
    pub fn setresgid(&mut self, r: u32, e: u32, s: u32) -> Result<(), ()> {
        let ok = |x: u32| x == KEEP || x == self.rgid || x == self.egid || x == self.sgid;
        if !self.root() && !(ok(r) && ok(e) && ok(s)) {
            return Err(());
        }
        if r != KEEP {
            self.rgid = r;
        }
        if e != KEEP {
            self.egid = e;
        }
        if s != KEEP {
            self.sgid = s;
        }
        Ok(())
    }

    /// setuid(u): root sets all three; anyone else only its effective id,
    /// to its real or saved one.
    pub fn setuid(&mut self, u: u32) -> Result<(), ()> {
        if u == KEEP {
            return Err(());
        }
        if self.root() {
            (self.ruid, self.euid, self.suid) = (u, u, u);
        } else if u == self.ruid || u == self.suid {
            self.euid = u;
        } else {
            return Err(());
        }
        Ok(())
    }

    /// setgid(g), as setuid.
    pub fn setgid(&mut self, g: u32) -> Result<(), ()> {
        if g == KEEP {
            return Err(());
        }
        if self.root() {
            (self.rgid, self.egid, self.sgid) = (g, g, g);
        } else if g == self.rgid || g == self.sgid {
            self.egid = g;
        } else {
            return Err(());
        }
        Ok(())
    }

    /// setreuid(r, e): the real id to the real or effective one, the
    /// effective to any of the three (root: anything); the saved id follows
    /// the effective when the real one is set or the effective differs from
    /// the old real id.
    pub fn setreuid(&mut self, r: u32, e: u32) -> Result<(), ()> {
        let old_r = self.ruid;
        if !self.root() {
            if r != KEEP && r != self.ruid && r != self.euid {
                return Err(());
            }
            if e != KEEP && e != self.ruid && e != self.euid && e != self.suid {
                return Err(());
            }
        }
        if r != KEEP {
            self.ruid = r;
        }
        if e != KEEP {
            self.euid = e;
        }
        if r != KEEP || (e != KEEP && e != old_r) {
            self.suid = self.euid;
        }
        Ok(())
    }

    /// setregid, as setreuid.
    pub fn setregid(&mut self, r: u32, e: u32) -> Result<(), ()> {
        let old_r = self.rgid;
        if !self.root() {
            if r != KEEP && r != self.rgid && r != self.egid {
                return Err(());
            }
            if e != KEEP && e != self.rgid && e != self.egid && e != self.sgid {
                return Err(());
            }
        }
        if r != KEEP {
            self.rgid = r;
        }
        if e != KEEP {
            self.egid = e;
        }
        if r != KEEP || (e != KEEP && e != old_r) {
            self.sgid = self.egid;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(uid: u32, gid: u32) -> Cred {
        Cred { ruid: uid, euid: uid, suid: uid, rgid: gid, egid: gid, sgid: gid, groups: Vec::new() }
    }

    #[test]
    fn root_reads_and_writes_anything_and_executes_with_an_x_bit() {
        let r = user(0, 0);
        assert!(r.may(5, 5, 0o100000, MAY_READ | MAY_WRITE, false));
        assert!(!r.may(5, 5, 0o100644, MAY_EXEC, false));
        assert!(r.may(5, 5, 0o100001, MAY_EXEC, false));
        assert!(r.may(5, 5, 0o040000, MAY_EXEC, false));
    }

    #[test]
    fn owner_group_other_in_that_order() {
        let u = user(1000, 100);
        // The owner's bits alone count for the owner, even when the
        // others' would allow more.
        assert!(!u.may(1000, 100, 0o100077, MAY_READ, false));
        assert!(u.may(1000, 0, 0o100400, MAY_READ, false));
        assert!(!u.may(1000, 0, 0o100400, MAY_WRITE, false));
        assert!(u.may(1, 100, 0o100040, MAY_READ, false));
        assert!(!u.may(1, 100, 0o100004, MAY_READ, false));
        assert!(u.may(1, 2, 0o100004, MAY_READ, false));
        assert!(!u.may(1, 2, 0o100770, MAY_READ, false));
        let mut g = u.clone();
        g.groups.push(2);
        assert!(g.may(1, 2, 0o100060, MAY_READ | MAY_WRITE, false));
    }

    #[test]
    fn real_ids_for_access() {
        let mut u = user(1000, 1000);
        u.euid = 0;
        assert!(u.may(0, 0, 0o100600, MAY_READ, false));
        assert!(!u.may(0, 0, 0o100600, MAY_READ, true));
    }

    #[test]
    fn chmod_by_owner_or_root() {
        let u = user(1000, 1000);
        assert_eq!(u.chmod(1000, 1000, 0o2755), Ok(0o2755));
        assert_eq!(u.chmod(1000, 5, 0o2755), Ok(0o755));
        assert_eq!(u.chmod(1, 1000, 0o644), Err(()));
        assert_eq!(user(0, 0).chmod(1, 1, 0o4755), Ok(0o4755));
    }

    #[test]
    fn chown_rules() {
        let mut u = user(1000, 1000);
        u.groups.push(50);
        assert_eq!(u.chown(1000, 1000, 0o100644, KEEP, 50), Ok((1000, 50, 0o100644)));
        assert_eq!(u.chown(1000, 1000, 0o100644, 1001, KEEP), Err(()));
        assert_eq!(u.chown(1000, 1000, 0o100644, KEEP, 51), Err(()));
        assert_eq!(u.chown(1, 1000, 0o100644, KEEP, 50), Err(()));
        assert_eq!(u.chown(1000, 1000, 0o100644, 1000, 1000), Ok((1000, 1000, 0o100644)));
        let r = user(0, 0);
        assert_eq!(r.chown(1, 1, 0o106755, 7, KEEP), Ok((7, 1, 0o100755)));
        assert_eq!(r.chown(1, 1, 0o106745, 7, KEEP), Ok((7, 1, 0o102745)));
        assert_eq!(r.chown(1, 1, 0o046755, 7, 8), Ok((7, 8, 0o046755)));
        assert_eq!(r.chown(1, 1, 0o104755, KEEP, KEEP), Ok((1, 1, 0o100755)));
    }

    #[test]
    fn protected_hard_links() {
        let u = user(1000, 1000);
        assert!(u.may_hardlink(1000, 0, 0o100000));
        assert!(!u.may_hardlink(0, 0, 0o100644));
        assert!(u.may_hardlink(0, 0, 0o100666));
        assert!(!u.may_hardlink(0, 0, 0o104666));
        assert!(!u.may_hardlink(0, 0, 0o102676));
        assert!(u.may_hardlink(0, 0, 0o102666));
        assert!(!u.may_hardlink(0, 0, 0o010666));
        assert!(user(0, 0).may_hardlink(5, 5, 0o104000));
    }

    #[test]
    fn signals() {
        let u = user(1000, 1000);
        assert!(u.may_signal(&user(1000, 5)));
        assert!(!u.may_signal(&user(0, 0)));
        let mut setuid_prog = user(1000, 1000);
        setuid_prog.euid = 0;
        setuid_prog.suid = 0;
        // Its real uid is the sender's.
        assert!(u.may_signal(&setuid_prog));
        let mut t = user(7, 7);
        t.suid = 1000;
        assert!(u.may_signal(&t));
        t.suid = 7;
        t.euid = 1000;
        assert!(!u.may_signal(&t));
        assert!(user(0, 0).may_signal(&t));
    }

    #[test]
    fn sticky_directories() {
        let u = user(1000, 1000);
        assert!(u.may_unlink_sticky(0o040777, 0, 1));
        assert!(!u.may_unlink_sticky(0o041777, 0, 1));
        assert!(u.may_unlink_sticky(0o041777, 0, 1000));
        assert!(u.may_unlink_sticky(0o041777, 1000, 1));
    }

    #[test]
    fn id_changes() {
        let mut r = user(0, 0);
        assert_eq!(r.setuid(1000), Ok(()));
        assert_eq!((r.ruid, r.euid, r.suid), (1000, 1000, 1000));
        assert_eq!(r.setuid(0), Err(()));
        let mut s = user(0, 0);
        assert_eq!(s.setresuid(KEEP, 1000, KEEP), Ok(()));
        assert_eq!((s.ruid, s.euid, s.suid), (0, 1000, 0));
        // Back to the saved 0, then all three away.
        assert_eq!(s.setuid(0), Ok(()));
        assert_eq!(s.euid, 0);
        assert_eq!(s.setresuid(5, 6, 7), Ok(()));
        assert_eq!(s.setresuid(8, KEEP, KEEP), Err(()));
        assert_eq!(s.setresuid(7, 5, 6), Ok(()));
        let mut t = user(0, 0);
        assert_eq!(t.setreuid(KEEP, 1000), Ok(()));
        assert_eq!((t.ruid, t.euid, t.suid), (0, 1000, 1000));
        assert_eq!(t.setreuid(1000, 0), Ok(()));
        assert_eq!((t.ruid, t.euid, t.suid), (1000, 0, 0));
        let mut g = user(0, 0);
        assert_eq!(g.setgid(100), Ok(()));
        assert_eq!((g.rgid, g.egid, g.sgid), (100, 100, 100));
        assert_eq!(g.setuid(1), Ok(()));
        assert_eq!(g.setgid(5), Err(()));
        assert_eq!(g.setresgid(KEEP, 100, KEEP), Ok(()));
        assert_eq!(g.setregid(7, KEEP), Err(()));
    }
}
