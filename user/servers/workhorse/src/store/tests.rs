//! Host tests of the store against a disk in memory that keeps a journal
//! of every write, so that a crash can be made after any write, in the
//! middle of one, or (with a volatile cache) losing what was not flushed.

use super::*;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

#[derive(Clone)]
struct MemDisk {
    data: Vec<u8>,
    /// Every write: (sector, bytes).
    journal: Vec<(u64, Vec<u8>)>,
    /// The journal's length at each flush.
    flushes: Vec<usize>,
    /// Writes fail once the journal is this long.
    fail_at: Option<usize>,
}

impl MemDisk {
    /// A disk of `sectors` holding a pattern (as tools/mkdisk.py's image does).
    fn new(sectors: u64) -> MemDisk {
        let data = (0..sectors as usize * SECTOR).map(|i| (i * 7 + i / 512) as u8).collect();
        MemDisk { data, journal: Vec::new(), flushes: Vec::new(), fail_at: None }
    }

    /// What the disk holds after the first `k` writes of `journal` and the
    /// first `bytes` bytes of write `k`, on top of `base`.
    fn crashed(base: &MemDisk, journal: &[(u64, Vec<u8>)], k: usize, bytes: usize) -> MemDisk {
        let mut d = MemDisk { data: base.data.clone(), journal: Vec::new(), flushes: Vec::new(), fail_at: None };
        for (s, w) in &journal[..k] {
            d.put(*s, w);
        }
        if let Some((s, w)) = journal.get(k) {
            d.put(*s, &w[..bytes.min(w.len())]);
        }
        d
    }

    fn put(&mut self, sector: u64, bytes: &[u8]) {
        let at = sector as usize * SECTOR;
        self.data[at..at + bytes.len()].copy_from_slice(bytes);
    }
}

impl Disk for MemDisk {
    fn sectors(&self) -> u64 {
        (self.data.len() / SECTOR) as u64
    }
    fn read(&mut self, sector: u64, buf: &mut [u8]) -> Result<(), IoError> {
        let at = sector as usize * SECTOR;
        assert!(buf.len() % SECTOR == 0 && at + buf.len() <= self.data.len(), "read outside the disk");
        buf.copy_from_slice(&self.data[at..at + buf.len()]);
        Ok(())
    }
    fn write(&mut self, sector: u64, data: &[u8]) -> Result<(), IoError> {
        assert!(data.len() % SECTOR == 0 && sector as usize * SECTOR + data.len() <= self.data.len(), "write outside the disk");
        if self.fail_at.is_some_and(|f| self.journal.len() >= f) {
            return Err(IoError);
        }
        self.put(sector, data);
        self.journal.push((sector, data.to_vec()));
        Ok(())
    }
    fn flush(&mut self) -> Result<(), IoError> {
        self.flushes.push(self.journal.len());
        Ok(())
    }
}

/// The tree by path: (mode, nlink, bytes or link target).
type Dump = BTreeMap<String, (u32, u32, Vec<u8>)>;

fn dump(t: &Tree) -> Dump {
    let mut out = BTreeMap::new();
    let mut stack = vec![(ROOT, String::new())];
    while let Some((dir, path)) = stack.pop() {
        let d = t.get(dir).unwrap();
        out.insert(format!("{path}/"), (d.mode, d.nlink, Vec::new()));
        let Node::Dir { entries, parent } = &d.node else { panic!("not a directory") };
        if dir != ROOT {
            assert!(t.get(*parent).is_some(), "parent of {path} missing");
        }
        for (name, &ino) in entries {
            let i = t.get(ino).unwrap();
            let p = format!("{path}/{name}");
            match &i.node {
                Node::Dir { parent, .. } => {
                    assert_eq!(*parent, dir, "{p}: parent");
                    stack.push((ino, p));
                }
                Node::File(b) => drop(out.insert(p, (i.mode, i.nlink, b.clone()))),
                Node::Symlink(s) => drop(out.insert(p, (i.mode, i.nlink, s.as_bytes().to_vec()))),
            }
        }
    }
    out
}

fn mount(d: MemDisk) -> (Store<MemDisk>, Mounted) {
    match Store::mount(d, 42) {
        Ok(r) => r,
        Err((_, e)) => panic!("mount: {e:?}"),
    }
}

/// Looks up a path (no links followed).
fn at(s: &Store<MemDisk>, path: &str) -> u64 {
    let mut ino = ROOT;
    for part in path.split('/').filter(|p| !p.is_empty()) {
        let Node::Dir { entries, .. } = &s.tree().get(ino).unwrap().node else { panic!("{path}: not a directory") };
        ino = *entries.get(part).unwrap_or_else(|| panic!("{path}: no {part}"));
    }
    ino
}

fn split(path: &str) -> (&str, &str) {
    let k = path.rfind('/').unwrap();
    (&path[..k], &path[k + 1..])
}

fn create(s: &mut Store<MemDisk>, path: &str, mode: u32, target: &str) -> Result<u64, Error> {
    let (dir, name) = split(path);
    let dir = at(s, dir);
    let ino = s.tree().fresh();
    s.change(&Op::Create { ino, dir, mode, name, target })?;
    Ok(ino)
}

fn file(s: &mut Store<MemDisk>, path: &str) -> u64 {
    create(s, path, 0o100644, "").unwrap()
}

fn bytes(seed: u64, n: usize) -> Vec<u8> {
    (0..n).map(|i| (mix(seed ^ (i as u64 / 8)) >> (i % 8 * 8)) as u8).collect()
}

/// A script touching every kind of record; the disk is small, so its log
/// fills and it compacts several times.  Calls `after` after each step.
fn script(s: &mut Store<MemDisk>, mut after: impl FnMut(&Store<MemDisk>)) {
    let steps: Vec<&dyn Fn(&mut Store<MemDisk>)> = vec![
        &|s| {
            let _ = create(s, "/a", 0o040755, "").unwrap();
        },
        &|s| {
            let _ = create(s, "/a/b", 0o040700, "").unwrap();
        },
        &|s| {
            let _ = file(s, "/a/b/f1");
        },
        &|s| {
            let _ = s.write(at(s, "/a/b/f1"), 0, &bytes(1, 100)).unwrap();
        },
        &|s| {
            let _ = file(s, "/f2");
        },
        // (A write of more than MAX_DATA is several records, so several
        // steps: a crash may land between them.)
        &|s| {
            let _ = s.write(at(s, "/f2"), 0, &bytes(2, 70_000)[..MAX_DATA]).unwrap();
        },
        &|s| {
            let _ = s.write(at(s, "/f2"), MAX_DATA as u64, &bytes(2, 70_000)[MAX_DATA..]).unwrap();
        },
        &|s| {
            let _ = s.write(at(s, "/f2"), 1000, &bytes(3, 5000)).unwrap();
        },
        &|s| {
            let _ = create(s, "/a/l", 0o120777, "b/f1").unwrap();
        },
        &|s| s.change(&Op::Link { ino: at(s, "/a/b/f1"), dir: ROOT, name: "h" }).unwrap(),
        &|s| s.change(&Op::Rename { from_dir: ROOT, from: "f2", to_dir: at(s, "/a"), to: "f2x" }).unwrap(),
        &|s| {
            let _ = file(s, "/victim");
        },
        &|s| s.change(&Op::Rename { from_dir: ROOT, from: "h", to_dir: ROOT, to: "victim" }).unwrap(),
        &|s| s.change(&Op::Truncate { ino: at(s, "/a/f2x"), size: 80_000 }).unwrap(),
        &|s| s.change(&Op::Truncate { ino: at(s, "/a/f2x"), size: 3333 }).unwrap(),
        &|s| s.change(&Op::Chmod { ino: at(s, "/a/b/f1"), mode: 0o600 }).unwrap(),
        &|s| s.change(&Op::Chmod { ino: ROOT, mode: 0o700 }).unwrap(),
        &|s| s.change(&Op::Rename { from_dir: at(s, "/a"), from: "b", to_dir: ROOT, to: "c" }).unwrap(),
        &|s| s.change(&Op::Unlink { dir: ROOT, name: "victim" }).unwrap(),
        &|s| s.change(&Op::Link { ino: at(s, "/c/f1"), dir: at(s, "/a"), name: "h2" }).unwrap(),
        &|s| {
            let _ = create(s, "/a/empty", 0o040755, "").unwrap();
        },
        &|s| s.change(&Op::Unlink { dir: at(s, "/a"), name: "empty" }).unwrap(),
        &|s| {
            let _ = file(s, "/big");
        },
        &|s| {
            s.set_times(at(s, "/a/f2x"), [5, 6, 7]);
            s.sync_times(None).unwrap();
        },
    ];
    for step in steps {
        step(s);
        after(s);
    }
    // Writes to fill the log a few times over.
    for k in 0..150u64 {
        let ino = at(s, "/big");
        s.write(ino, (k % 20) * 3000, &bytes(100 + k, 3000)).unwrap();
        after(s);
    }
    s.change(&Op::Truncate { ino: at(s, "/big"), size: 10 }).unwrap();
    after(s);
}

const SMALL: u64 = 1100;

#[test]
fn geometry() {
    assert!(Geometry::new(min_sectors() - 1).is_none());
    let g = Geometry::new(min_sectors()).unwrap();
    assert!(g.log >= 2 * MAX_RECORD_SECTORS);
    let g = Geometry::new(32768).unwrap();
    assert_eq!(2 + 2 * g.cp + g.log, 32768);
    assert!(min_sectors() <= SMALL);
}

#[test]
fn records_round_trip() {
    let ops = [
        Op::Create { ino: 9, dir: 1, mode: 0o120777, name: "n", target: "t/u" },
        Op::Create { ino: 9, dir: 1, mode: 0o100644, name: "ñame", target: "" },
        Op::Link { ino: 3, dir: 4, name: "x" },
        Op::Unlink { dir: 4, name: "yy" },
        Op::Rename { from_dir: 1, from: "a", to_dir: 2, to: "bcd" },
        Op::Write { ino: 7, off: 1 << 40, data: &[1, 2, 3] },
        Op::Truncate { ino: 7, size: 12345 },
        Op::Chmod { ino: 7, mode: 0o4755 },
        Op::Times { ino: 7, times: [1, u64::MAX, 1_700_000_000_123_456_789] },
    ];
    for op in ops {
        let mut v = Vec::new();
        op.encode(&mut v);
        assert_eq!(Op::decode(op.kind(), &v).as_ref(), Some(&op));
    }
    assert_eq!(Op::decode(99, &[0; 16]), None);
    assert_eq!(Op::decode(K_TRUNCATE, &[0; 15]), None, "short payload");
}

#[test]
fn format_then_mount() {
    let (s, m) = mount(MemDisk::new(SMALL));
    assert!(m.formatted);
    let (s2, m) = mount(s.into_disk());
    assert!(!m.formatted && !m.torn_tail && !m.bad_header, "{m:?}");
    assert_eq!(dump(s2.tree()).len(), 1);
    assert!(matches!(Store::mount(MemDisk::new(min_sectors() - 1), 1), Err((_, MountError::TooSmall))));
}

#[test]
fn everything_survives_a_remount() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    script(&mut s, |_| {});
    assert!(s.status().compactions > 3, "the log should have filled: {:?}", s.status());
    let want = dump(s.tree());
    assert_eq!(want["/a/f2x"].2.len(), 3333);
    assert_eq!(want["/c/f1"].1, 2, "f1 has two names");
    assert_eq!(want["/a/h2"], want["/c/f1"]);
    assert_eq!(want["/c/f1"].0, 0o100600);
    assert!(!want.contains_key("/victim") && !want.contains_key("/h"), "victim was replaced by f1's link, then unlinked");
    assert_eq!(want["/"].0, S_IFDIR | 0o700);
    let (s, m) = mount(s.into_disk());
    assert!(!m.formatted && m.log_records > 0, "{m:?}");
    assert_eq!(dump(s.tree()), want);
    assert_eq!(s.tree().est, s.tree().estimate());
}

#[test]
fn estimate_is_kept() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    script(&mut s, |s| {
        assert_eq!(s.tree().est, s.tree().estimate());
        // And it bounds the checkpoint.
        assert!(s.tree().checkpoint(0).len() as u64 <= s.tree().est);
    });
}

/// Runs the script on a fresh disk recording each step's state and the
/// journal's length when the step was acknowledged.
fn recorded() -> (MemDisk, Vec<(usize, Dump)>, MemDisk) {
    let base = MemDisk::new(SMALL);
    let (mut s, _) = mount(base.clone());
    let mut states = vec![(s.disk().journal.len(), dump(s.tree()))];
    script(&mut s, |s| states.push((s.disk().journal.len(), dump(s.tree()))));
    (base, states, s.into_disk())
}

/// The crashed disk mounts to the state acknowledged last or the one being
/// made; mounting again gives the same, and it takes changes.
fn check_crash(base: &MemDisk, states: &[(usize, Dump)], journal: &[(u64, Vec<u8>)], k: usize, bytes: usize) {
    let d = MemDisk::crashed(base, journal, k, bytes);
    let acked = states.iter().rposition(|(n, _)| *n <= k).map(|i| i as isize).unwrap_or(-1);
    let (s, m) = match Store::mount(d, k as u64) {
        Ok(r) => r,
        Err((_, e)) => panic!("crash after {k} writes and {bytes} bytes: mount: {e:?}"),
    };
    let got = dump(s.tree());
    let ok = |i: isize| i >= 0 && states.get(i as usize).is_some_and(|(_, st)| *st == got);
    assert!(
        ok(acked) || ok(acked + 1) || (acked < 0 && got.len() == 1),
        "crash after {k} writes and {bytes} bytes: state is neither step {acked} nor {} (formatted {})",
        acked + 1,
        m.formatted
    );
    let (mut s, m2) = mount(s.into_disk());
    assert!(!m2.formatted);
    assert_eq!(dump(s.tree()), got, "a second mount changed the state");
    let ino = s.tree().fresh();
    s.change(&Op::Create { ino, dir: ROOT, mode: 0o100644, name: "after-crash", target: "" }).unwrap();
    let (s, _) = mount(s.into_disk());
    assert!(dump(s.tree()).contains_key("/after-crash"));
}

#[test]
fn crash_at_every_record_boundary() {
    let (base, states, end) = recorded();
    assert!(end.journal.len() > 100);
    for k in 0..=end.journal.len() {
        check_crash(&base, &states, &end.journal, k, 0);
    }
}

#[test]
fn crash_in_the_middle_of_every_write() {
    let (base, states, end) = recorded();
    for k in 0..end.journal.len() {
        let n = end.journal[k].1.len();
        let mut cuts = vec![1, SECTOR / 2, n / 2, n / 2 + SECTOR / 2, n - SECTOR, n - 1];
        cuts.retain(|&c| c > 0 && c < n);
        cuts.dedup();
        for c in cuts {
            check_crash(&base, &states, &end.journal, k, c);
        }
    }
}

#[test]
fn crash_losing_unflushed_writes() {
    // A volatile write cache: a crash keeps all flushed writes and any
    // subset of the rest.  Then the state is one acknowledged since the
    // last flush (flushes come with compactions; fsync adds more).
    let (base, states, end) = recorded();
    let mut rng = 7u64;
    let mut next = || {
        rng = rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(rng)
    };
    for trial in 0..300 {
        let k = (next() % (end.journal.len() as u64 + 1)) as usize;
        // (A flush at k itself may not have happened yet.)
        let flushed = end.flushes.iter().copied().filter(|&f| f < k).max().unwrap_or(0);
        let mut d = base.clone();
        for (i, (s, w)) in end.journal[..k].iter().enumerate() {
            if i < flushed || next() % 2 == 0 {
                d.put(*s, w);
            }
        }
        let (s, _) = match Store::mount(d, trial) {
            Ok(r) => r,
            Err((_, e)) => panic!("trial {trial}: mount: {e:?}"),
        };
        let got = dump(s.tree());
        let first = states.iter().rposition(|(n, _)| *n <= flushed).unwrap_or(0);
        let last = states.iter().rposition(|(n, _)| *n <= k).unwrap_or(0);
        assert!(
            (first..=last + 1).any(|i| states.get(i).is_some_and(|(_, st)| *st == got)) || (flushed == 0 && got.len() == 1),
            "trial {trial}: crash after {k} writes ({flushed} flushed): not a state between steps {first} and {}",
            last + 1
        );
    }
}

/// The current epoch's header slot.
fn current_slot(s: &Store<MemDisk>) -> u64 {
    s.status().epoch % 2
}

#[test]
fn a_damaged_header_falls_back_to_the_other() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    script(&mut s, |_| {});
    let want = dump(s.tree());
    // Right after a mount (a compaction, nothing logged yet) the other
    // header's epoch is one complete state behind: the same tree.
    let (s, _) = mount(s.into_disk());
    let slot = current_slot(&s);
    let mut d = s.into_disk();
    d.data[slot as usize * SECTOR + 100] ^= 1;
    let (s, m) = mount(d);
    assert!(m.bad_header && !m.formatted, "{m:?}");
    assert_eq!(dump(s.tree()), want);
    // The older header damaged: the current one is used.
    let old = 1 - current_slot(&s);
    let mut d = s.into_disk();
    d.data[old as usize * SECTOR + 8] ^= 0x80;
    let (s, m) = mount(d);
    assert!(m.bad_header, "{m:?}");
    assert_eq!(dump(s.tree()), want);
    // Both damaged: no store; the range is formatted.
    let mut d = s.into_disk();
    d.data[3] ^= 1;
    d.data[SECTOR + 3] ^= 1;
    let (s, m) = mount(d);
    assert!(m.formatted);
    assert_eq!(dump(s.tree()).len(), 1);
}

#[test]
fn a_damaged_checkpoint_is_refused_and_left_alone() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    script(&mut s, |_| {});
    let slot = current_slot(&s);
    let g = Geometry::new(SMALL).unwrap();
    let mut d = s.into_disk();
    d.data[(g.area(slot) as usize) * SECTOR + 40] ^= 4;
    let before = d.data.clone();
    d.journal.clear();
    match Store::mount(d, 3) {
        Err((d, MountError::Damaged(_))) => {
            assert!(d.journal.is_empty(), "a damaged store was written");
            assert!(d.data == before);
        }
        Err((_, e)) => panic!("{e:?}"),
        Ok(_) => panic!("a damaged checkpoint was mounted"),
    }
}

#[test]
fn full_is_no_space_and_nothing_changes() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/fill");
    let chunk = bytes(5, 8192);
    let mut len = 0u64;
    loop {
        match s.write(f, len, &chunk) {
            Ok(n) => len += n as u64,
            Err(Error::NoSpace) => break,
            Err(e) => panic!("{e:?}"),
        }
        assert!(len < 10 << 20, "never full");
    }
    let want = dump(s.tree());
    assert!(len as u64 > s.status().bytes_capacity * 9 / 10, "full at {len} of {}", s.status().bytes_capacity);
    assert_eq!(s.change(&Op::Truncate { ino: f, size: len + 100_000 }), Err(Error::NoSpace));
    assert_eq!(s.write(f, 1 << 50, b"x"), Err(Error::NoSpace));
    let name = "n".repeat(200);
    let mut names = 0;
    loop {
        let ino = s.tree().fresh();
        match s.change(&Op::Create { ino, dir: ROOT, mode: 0o100644, name: &format!("{name}{names}"), target: "" }) {
            Ok(()) => names += 1,
            Err(Error::NoSpace) => break,
            Err(e) => panic!("{e:?}"),
        }
    }
    assert!(names < 100);
    let full = dump(s.tree());
    assert_eq!(full.len(), want.len() + names);
    // It mounts full, and deleting makes room.
    let (mut s, _) = mount(s.into_disk());
    assert_eq!(dump(s.tree()), full);
    s.change(&Op::Truncate { ino: at(&s, "/fill"), size: 0 }).unwrap();
    let g = file(&mut s, "/again");
    s.write(g, 0, &chunk).unwrap();
    let (s, _) = mount(s.into_disk());
    assert_eq!(dump(s.tree())["/again"].2, chunk);
}

#[test]
fn refused_changes_leave_the_tree_alone() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    script(&mut s, |_| {});
    let want = dump(s.tree());
    let journal = s.disk().journal.len();
    let f = at(&s, "/c/f1");
    let d = at(&s, "/a");
    let bad = [
        Op::Create { ino: f, dir: ROOT, mode: 0o100644, name: "dup-ino", target: "" },
        Op::Create { ino: 999, dir: ROOT, mode: 0o100644, name: "c", target: "" },
        Op::Create { ino: 999, dir: f, mode: 0o100644, name: "x", target: "" },
        Op::Create { ino: 999, dir: ROOT, mode: 0o100644, name: "a/b", target: "" },
        Op::Create { ino: 999, dir: ROOT, mode: 0o100644, name: "..", target: "" },
        Op::Create { ino: 999, dir: ROOT, mode: 0o120777, name: "l", target: "" },
        Op::Link { ino: d, dir: ROOT, name: "dirlink" },
        Op::Unlink { dir: ROOT, name: "a" },
        Op::Unlink { dir: ROOT, name: "nothing" },
        Op::Rename { from_dir: ROOT, from: "a", to_dir: d, to: "inside" },
        Op::Rename { from_dir: ROOT, from: "big", to_dir: ROOT, to: "a" },
        Op::Write { ino: d, off: 0, data: b"x" },
        Op::Truncate { ino: 12345, size: 0 },
        Op::Chmod { ino: 12345, mode: 0 },
    ];
    for op in &bad {
        assert_eq!(s.change(op), Err(Error::Bad), "{op:?}");
    }
    assert_eq!(dump(s.tree()), want);
    assert_eq!(s.disk().journal.len(), journal, "a refused change was written");
}

#[test]
fn an_io_error_refuses_changes_until_mounted_again() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/f");
    s.write(f, 0, b"kept").unwrap();
    let want = dump(s.tree());
    s.disk.fail_at = Some(s.disk.journal.len());
    assert_eq!(s.write(f, 4, b" and more"), Err(Error::Io));
    assert_eq!(dump(s.tree()), want, "a failed write changed the tree");
    s.disk.fail_at = None;
    assert_eq!(s.write(f, 4, b" and more"), Err(Error::Io), "the store takes changes after an I/O error");
    assert!(s.status().failed);
    assert_eq!(s.flush(), Err(Error::Io));
    // A mount whose compaction fails is an error; the next one is whole.
    let mut d = s.into_disk();
    d.fail_at = Some(d.journal.len());
    let Err((mut d, MountError::Io)) = Store::mount(d, 9) else { panic!("a mount that could not compact succeeded") };
    d.fail_at = None;
    let (s, _) = mount(d);
    assert_eq!(dump(s.tree()), want);
}

#[test]
fn orphans_live_until_forgotten_and_are_not_kept() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/tmp");
    s.write(f, 0, b"open").unwrap();
    s.change(&Op::Unlink { dir: ROOT, name: "tmp" }).unwrap();
    let n = s.disk().journal.len();
    // Still usable by whoever has it open, without records.
    s.write(f, 4, b" still").unwrap();
    assert_eq!(s.disk().journal.len(), n);
    assert!(matches!(&s.tree().get(f).unwrap().node, Node::File(b) if b == b"open still"));
    let (s2, _) = mount(MemDisk::crashed(&MemDisk::new(SMALL), &s.disk().journal, n, 0));
    assert!(s2.tree().get(f).is_none(), "an orphan came back");
    s.forget(f);
    assert!(s.tree().get(f).is_none());
    assert_eq!(s.tree().est, s.tree().estimate());
}

#[test]
fn stale_records_of_an_earlier_epoch_are_not_replayed() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/f");
    for k in 0..20 {
        s.write(f, k * 10, &bytes(k, 10)).unwrap();
    }
    let want = dump(s.tree());
    // The log holds 21 records; a mount compacts, and the next mount finds
    // the same 21 old records behind an empty log of a new epoch.
    let (s, m) = mount(s.into_disk());
    assert_eq!(m.log_records, 21);
    let (s, m) = mount(s.into_disk());
    assert_eq!(m.log_records, 0, "records of an earlier epoch were replayed");
    assert_eq!(dump(s.tree()), want);
}

fn times(s: &Store<MemDisk>, path: &str) -> [u64; 3] {
    s.tree().get(at(s, path)).unwrap().times
}

#[test]
fn times_reach_the_disk_with_a_flush_and_stay_through_compaction() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/f");
    let d = create(&mut s, "/d", 0o040755, "").unwrap();
    s.set_times(f, [10, 20, 30]);
    s.set_times(d, [1, 2, 3]);
    s.set_times(ROOT, [4, 5, 6]);
    s.flush().unwrap();
    // From the log (the records the flush wrote) ...
    let (s, m) = mount(s.into_disk());
    assert!(m.log_records >= 5, "{m:?}");
    assert_eq!((times(&s, "/f"), times(&s, "/d"), times(&s, "/")), ([10, 20, 30], [1, 2, 3], [4, 5, 6]));
    // ... and from the checkpoint that mount wrote.
    let (s, m) = mount(s.into_disk());
    assert_eq!(m.log_records, 0, "{m:?}");
    assert_eq!((times(&s, "/f"), times(&s, "/d"), times(&s, "/")), ([10, 20, 30], [1, 2, 3], [4, 5, 6]));
    assert_eq!(s.tree().est, s.tree().estimate());
}

#[test]
fn times_not_yet_written_are_lost_in_a_crash_but_not_the_change() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let f = file(&mut s, "/f");
    s.write(f, 0, b"kept").unwrap();
    s.set_times(f, [7, 8, 9]);
    let (mut s, _) = mount(s.into_disk());
    assert_eq!(times(&s, "/f"), [0; 3], "set_times alone writes nothing");
    let Node::File(b) = &s.tree().get(at(&s, "/f")).unwrap().node else { panic!() };
    assert_eq!(b, b"kept");
    // sync_times of one inode writes that one only.
    let (f, g) = (at(&s, "/f"), file(&mut s, "/g"));
    s.set_times(f, [7, 8, 9]);
    s.set_times(g, [1, 1, 1]);
    s.sync_times(Some(f)).unwrap();
    let (s, _) = mount(s.into_disk());
    assert_eq!((times(&s, "/f"), times(&s, "/g")), ([7, 8, 9], [0; 3]));
}

#[test]
fn times_of_no_inode_are_refused_and_change_nothing() {
    let (mut s, _) = mount(MemDisk::new(SMALL));
    let _ = file(&mut s, "/f");
    let (before, journal) = (dump(s.tree()), s.disk().journal.len());
    assert_eq!(s.change(&Op::Times { ino: 999, times: [1, 2, 3] }), Err(Error::Bad));
    s.set_times(999, [1, 2, 3]);
    s.sync_times(None).unwrap();
    assert_eq!((dump(s.tree()), s.disk().journal.len()), (before, journal));
}
