//! Host tests: the workhorse's files and the vault in memory, the
//! workhorse hostile (it changes, moves, cuts, removes and puts back
//! files), power cut at every write.

use std::collections::BTreeMap;
use std::string::{String, ToString};
use std::vec::Vec;

use super::*;

/// The workhorse's directory in memory.  `cut_after`: writes past that
/// many fail (and are lost), as a power cut or a killed workhorse would.
#[derive(Clone, Default)]
struct Mem {
    files: BTreeMap<String, Vec<u8>>,
    writes: usize,
    cut_after: Option<usize>,
}

impl Store for Mem {
    fn read(&mut self, name: &str, off: u64, out: &mut [u8]) -> Result<usize, StoreError> {
        let f = self.files.get(name).ok_or(StoreError::NotThere)?;
        let s = (off as usize).min(f.len());
        let n = out.len().min(f.len() - s);
        out[..n].copy_from_slice(&f[s..s + n]);
        Ok(n)
    }
    fn write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), StoreError> {
        if self.cut_after.is_some_and(|c| self.writes >= c) {
            return Err(StoreError::Failed(0x100));
        }
        self.writes += 1;
        let f = self.files.entry(name.to_string()).or_default();
        let end = off as usize + data.len();
        if f.len() < end {
            f.resize(end, 0);
        }
        f[off as usize..end].copy_from_slice(data);
        Ok(())
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        self.files.remove(name).map(|_| ()).ok_or(StoreError::NotThere)
    }
}

/// The vault in memory; `fail_puts` refuses PUTs (the commit not made).
#[derive(Clone, Default)]
struct Vault {
    keys: BTreeMap<Vec<u8>, Vec<u8>>,
    fail_puts: bool,
    puts: usize,
}

impl Roots for Vault {
    fn get(&mut self, key: &[u8], out: &mut [u8]) -> Result<Option<usize>, u64> {
        Ok(self.keys.get(key).map(|v| {
            out[..v.len()].copy_from_slice(v);
            v.len()
        }))
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), u64> {
        if self.fail_puts {
            return Err(7);
        }
        assert!(key.len() <= 32 && value.len() <= 256, "within the vault's limits");
        self.puts += 1;
        self.keys.insert(key.to_vec(), value.to_vec());
        Ok(())
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool, u64> {
        Ok(self.keys.remove(key).is_some())
    }
    fn key_at(&mut self, index: u64, out: &mut [u8]) -> Result<Option<usize>, u64> {
        Ok(self.keys.keys().nth(index as usize).map(|k| {
            out[..k.len()].copy_from_slice(k);
            k.len()
        }))
    }
}

/// Deterministic bytes (never the same twice), for the tests only.
#[derive(Clone, Default)]
struct Counter(u64);

impl Rng for Counter {
    fn fill(&mut self, out: &mut [u8]) -> bool {
        for c in out.chunks_mut(8) {
            self.0 += 1;
            let b = self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_le_bytes();
            c.copy_from_slice(&b[..c.len()]);
        }
        true
    }
}

type T = Files<Mem, Vault, Counter>;

fn files() -> T {
    Files::new(Mem::default(), Vault::default(), Counter::default())
}

/// Plaintext that is easy to find: "PLAINTEXT v<version> " and the offset.
fn text(version: u32, len: usize) -> Vec<u8> {
    let mut v = Vec::new();
    let mut i = 0;
    while v.len() < len {
        v.extend_from_slice(format!("PLAINTEXT v{version} at {i:08}\n").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

fn write_all(t: &mut T, name: &str, data: &[u8]) -> Result<u64, Error> {
    let mut f = t.open_or_new(name)?;
    t.write(&mut f, 0, data)
}

fn read_all(t: &mut T, name: &str) -> Result<Vec<u8>, Error> {
    let f = t.open(name)?;
    let mut out = vec![0u8; f.size() as usize];
    let n = t.read(&f, 0, &mut out)?;
    assert_eq!(n, out.len());
    Ok(out)
}

/// Reopened from what the workhorse and the vault hold (a restarted program).
fn restarted(t: &T) -> T {
    let mut store = t.store.clone();
    store.cut_after = None;
    Files::new(store, t.roots.clone(), Counter(t.rng.0 + 1_000_000))
}

#[test]
fn round_trip_and_partial_writes() {
    let mut t = files();
    let a = text(1, 3 * BLOCK + 100);
    assert_eq!(write_all(&mut t, "a", &a), Ok(1));
    assert_eq!(read_all(&mut t, "a").unwrap(), a);
    // A write inside, across a block's edge, and one past the end (the gap zeros).
    let mut want = a.clone();
    let mut f = t.open("a").unwrap();
    t.write(&mut f, 4000, b"across the edge").unwrap();
    want[4000..4015].copy_from_slice(b"across the edge");
    t.write(&mut f, 6 * BLOCK as u64 + 5, b"far").unwrap();
    want.resize(6 * BLOCK + 5, 0);
    want.extend_from_slice(b"far");
    assert_eq!(f.generation(), 3);
    let mut t = restarted(&t);
    assert_eq!(read_all(&mut t, "a").unwrap(), want);
    // Reads at odd offsets, and past the end.
    let f = t.open("a").unwrap();
    let mut out = [0u8; 20];
    assert_eq!(t.read(&f, 3990, &mut out), Ok(20));
    assert_eq!(&out[..], &want[3990..4010]);
    assert_eq!(t.read(&f, f.size(), &mut out), Ok(0));
    assert_eq!(t.read(&f, f.size() - 2, &mut out), Ok(2));
    assert!(t.verify(&f).is_ok());
    // An empty file.
    write_all(&mut t, "empty", b"").unwrap();
    assert_eq!(read_all(&mut t, "empty").unwrap(), b"");
    assert_eq!(t.names().unwrap(), ["a", "empty"]);
}

#[test]
fn the_workhorse_holds_ciphertext_only() {
    let mut t = files();
    let a = text(7, 5 * BLOCK);
    write_all(&mut t, "secret", &a).unwrap();
    for (name, bytes) in &t.store.files {
        assert!(!bytes.windows(9).any(|w| w == b"PLAINTEXT"), "{name} holds plaintext");
    }
    // Nor is the key anywhere but in the vault.
    let rec = t.record("secret").unwrap().unwrap();
    for bytes in t.store.files.values() {
        assert!(!bytes.windows(32).any(|w| w == rec.key));
    }
}

#[test]
fn names_and_limits() {
    let mut t = files();
    for bad in ["", "UPPER", "a.b", "much-too-long-a", "sl/ash"] {
        assert_eq!(write_all(&mut t, bad, b"x"), Err(Error::BadName), "{bad}");
    }
    let mut f = t.open_or_new("big").unwrap();
    assert_eq!(t.write(&mut f, (MAX_BLOCKS * BLOCK) as u64, b"x"), Err(Error::TooLarge));
    assert_eq!(t.write(&mut f, u64::MAX, b"x"), Err(Error::TooLarge));
    assert!(t.store.files.is_empty() && t.roots.keys.is_empty(), "refusals write nothing");
    assert_eq!(t.open("nothing").unwrap_err(), Error::NotFound);
}

impl PartialEq for File {
    fn eq(&self, o: &File) -> bool {
        self.name == o.name && self.rec == o.rec && self.entries == o.entries
    }
}
impl core::fmt::Debug for File {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "File({}, gen {})", self.name, self.rec.generation)
    }
}

/// Each read of `name` is an error of class `class`, never data.
fn refused(t: &mut T, name: &str, class: &str) {
    match read_all(t, name) {
        Ok(_) => panic!("{name}: damaged data returned as good"),
        Err(e) => assert_eq!(e.class(), class, "{name}: {e}"),
    }
}

#[test]
fn a_flipped_bit_anywhere_is_refused() {
    let mut t = files();
    let a = text(1, 2 * BLOCK + 10);
    write_all(&mut t, "f", &a).unwrap();
    write_all(&mut t, "f", &text(2, 2 * BLOCK + 10)).unwrap();
    let names: Vec<String> = t.store.files.keys().cloned().collect();
    for name in &names {
        let len = t.store.files[name].len();
        for at in (0..len).step_by(97).chain([len - 1]) {
            let mut u = restarted(&t);
            u.store.files.get_mut(name).unwrap()[at] ^= 0x10;
            match read_all(&mut u, "f") {
                // A byte of a place or a table the current version does not use.
                Ok(d) => assert_eq!(d, text(2, 2 * BLOCK + 10), "{name}@{at}"),
                Err(e) => assert!(matches!(e, Error::Integrity(..)), "{name}@{at}: {e}"),
            }
        }
    }
    // A byte of a block in use, and of the table in use: refused.
    let mut u = restarted(&t);
    let f = u.open("f").unwrap();
    let at = format::place(1, f.entries[1].slot) as usize + 5;
    u.store.files.get_mut("f.d").unwrap()[at] ^= 1;
    assert_eq!(read_all(&mut u, "f"), Err(Error::Integrity(1, "it does not authenticate")));
    let mut u = restarted(&t);
    u.store.files.get_mut("f.0").unwrap()[HEADER_AT] ^= 1;
    refused(&mut u, "f", "INTEGRITY");
}

const HEADER_AT: usize = format::HEADER + 3;

#[test]
fn swapped_moved_and_renamed_blocks_are_refused() {
    let mut t = files();
    write_all(&mut t, "f", &text(1, 4 * BLOCK)).unwrap();
    write_all(&mut t, "g", &text(2, 4 * BLOCK)).unwrap();
    let f = t.open("f").unwrap();
    let (p0, p2) = (format::place(0, f.entries[0].slot) as usize, format::place(2, f.entries[2].slot) as usize);
    // Two blocks swapped.
    let mut u = restarted(&t);
    let d = u.store.files.get_mut("f.d").unwrap();
    let b0 = d[p0..p0 + BLOCK].to_vec();
    let b2 = d[p2..p2 + BLOCK].to_vec();
    d[p0..p0 + BLOCK].copy_from_slice(&b2);
    d[p2..p2 + BLOCK].copy_from_slice(&b0);
    refused(&mut u, "f", "INTEGRITY");
    // A block in the other place of its own index.
    let mut u = restarted(&t);
    let d = u.store.files.get_mut("f.d").unwrap();
    let other = format::place(0, 1 - f.entries[0].slot) as usize;
    if d.len() < other + BLOCK {
        d.resize(other + BLOCK, 0);
    }
    d.copy_within(p0..p0 + BLOCK, other);
    d[p0..p0 + BLOCK].fill(0);
    refused(&mut u, "f", "INTEGRITY");
    // g's files renamed over f's: another name, another key.
    let mut u = restarted(&t);
    for ext in ["d", "0", "1"] {
        if let Some(v) = u.store.files.remove(&format!("g.{ext}")) {
            u.store.files.insert(format!("f.{ext}"), v);
        }
    }
    refused(&mut u, "f", "INTEGRITY");
    refused(&mut u, "g", "AVAILABILITY");
}

#[test]
fn an_older_version_put_back_is_stale() {
    let mut t = files();
    write_all(&mut t, "f", &text(1, 3 * BLOCK)).unwrap();
    write_all(&mut t, "f", &text(2, 3 * BLOCK)).unwrap();
    let old = t.store.files.clone();
    write_all(&mut t, "f", &text(3, 3 * BLOCK)).unwrap();
    // The whole directory of the generation before put back (its table
    // file of this parity holds generation 1).
    let mut u = restarted(&t);
    u.store.files = old.clone();
    assert_eq!(read_all(&mut u, "f").unwrap_err(), Error::Stale(1, 3));
    // Only the table of an older generation, in the table file now used.
    let mut u = restarted(&t);
    let t2 = old["f.0"].clone();
    u.store.files.insert("f.1".into(), t2);
    assert_eq!(read_all(&mut u, "f").unwrap_err(), Error::Stale(2, 3));
    // Only the data of before: its blocks' tags are not the table's.
    let mut u = restarted(&t);
    u.store.files.insert("f.d".into(), old["f.d"].clone());
    refused(&mut u, "f", "INTEGRITY");
    // The newest back: good again.
    assert_eq!(read_all(&mut restarted(&t), "f").unwrap(), text(3, 3 * BLOCK));
}

#[test]
fn cut_and_removed_files_are_unavailable() {
    let mut t = files();
    write_all(&mut t, "f", &text(1, 3 * BLOCK)).unwrap();
    let tn = format!("f.{}", t.open("f").unwrap().generation() % 2);
    for (name, keep) in [("f.d", 0usize), ("f.d", BLOCK), (tn.as_str(), 10), (tn.as_str(), format::HEADER + 3)] {
        let mut u = restarted(&t);
        u.store.files.get_mut(name).unwrap().truncate(keep);
        refused(&mut u, "f", "AVAILABILITY");
    }
    for name in ["f.d", tn.as_str()] {
        let mut u = restarted(&t);
        u.store.files.remove(name);
        refused(&mut u, "f", "AVAILABILITY");
    }
    // The other files are not affected, and the program goes on.
    let mut u = restarted(&t);
    u.store.files.remove("f.d");
    write_all(&mut u, "h", b"after").unwrap();
    assert_eq!(read_all(&mut u, "h").unwrap(), b"after");
    // Removing a file: its record first.
    assert_eq!(u.remove("h"), Ok(true));
    assert_eq!(u.remove("h"), Ok(false));
    assert!(!u.store.files.keys().any(|k| k.starts_with("h.")));
    refused(&mut u, "h", "NOT FOUND");
}

/// A power cut (or the workhorse killed) after each write of an update:
/// the old version or, once committed, the new; both whole.
#[test]
fn a_cut_at_every_write_leaves_the_old_or_the_new() {
    let mut base = files();
    let v1 = text(1, 5 * BLOCK + 7);
    write_all(&mut base, "f", &v1).unwrap();
    write_all(&mut base, "g", b"untouched").unwrap();
    // The update: blocks 1-2 changed, the file longer.
    let mut v2 = v1.clone();
    v2[BLOCK + 10..3 * BLOCK].fill(b'#');
    v2.extend_from_slice(&text(2, 2 * BLOCK));
    let update = |t: &mut T| -> Result<u64, Error> {
        let mut f = t.open("f")?;
        t.write(&mut f, BLOCK as u64 + 10, &v2[BLOCK + 10..])
    };
    let mut whole = restarted(&base);
    let writes0 = whole.store.writes;
    update(&mut whole).unwrap();
    let needed = whole.store.writes - writes0;
    assert!(needed >= 5, "blocks and a table written");
    for cut in 0..=needed {
        let mut t = restarted(&base);
        t.store.cut_after = Some(t.store.writes + cut);
        let r = update(&mut t);
        assert_eq!(r.is_ok(), cut == needed, "cut after {cut}");
        let mut after = restarted(&t);
        let got = read_all(&mut after, "f").unwrap();
        assert_eq!(got, if r.is_ok() { v2.clone() } else { v1.clone() }, "cut after {cut}");
        let f = after.open("f").unwrap();
        assert!(after.verify(&f).is_ok());
        assert_eq!(read_all(&mut after, "g").unwrap(), b"untouched");
        // A cut update done again after the restart.
        update(&mut after).unwrap();
        assert_eq!(read_all(&mut restarted(&after), "f").unwrap(), v2);
    }
    // Every write through, the vault's PUT refused: the old version stays,
    // in memory too.
    let mut t = restarted(&base);
    t.roots.fail_puts = true;
    let mut f = t.open("f").unwrap();
    let before = f.clone();
    assert_eq!(t.write(&mut f, 0, b"lost"), Err(Error::Vault(7)));
    assert_eq!(f, before);
    t.roots.fail_puts = false;
    assert_eq!(read_all(&mut t, "f").unwrap(), v1);
    // Each acknowledged write is one commit.
    let mut t = files();
    for v in 1..=5u32 {
        assert_eq!(write_all(&mut t, "n", &text(v, 100)), Ok(v as u64));
        assert_eq!(t.roots.puts, v as usize);
    }
}

#[test]
fn the_tree_matches_a_fresh_one() {
    let leaves: Vec<[u8; 32]> = (0..13u8).map(|i| [i; 32]).collect();
    let mut t = tree::Tree::new(leaves[..5].to_vec());
    for l in &leaves[5..] {
        t.push(*l);
    }
    assert_eq!(t.root(), tree::Tree::new(leaves.clone()).root());
    let mut changed = leaves.clone();
    changed[6] = [99; 32];
    t.set(6, [99; 32]);
    assert_eq!(t.root(), tree::Tree::new(changed).root());
    assert_ne!(t.root(), tree::Tree::new(leaves).root());
    assert_ne!(tree::Tree::new(vec![]).root(), tree::Tree::new(vec![[0; 32]]).root());
}

#[test]
fn a_ranged_update_matches_a_fresh_tree() {
    // Every start and length over trees of 0 to 11 leaves, replacing and
    // growing: the same root as a tree made from the leaves at once.
    for n in 0..12usize {
        for start in 0..=n {
            for len in 0..(14 - start) {
                let old: Vec<[u8; 32]> = (0..n).map(|i| [i as u8; 32]).collect();
                let new: Vec<[u8; 32]> = (0..len).map(|i| [100 + i as u8; 32]).collect();
                let mut want = old.clone();
                want.resize(want.len().max(start + len), [0; 32]);
                want[start..start + len].copy_from_slice(&new);
                let mut t = tree::Tree::new(old);
                t.update(start, &new);
                assert_eq!(t.len(), want.len());
                assert_eq!(t.root(), tree::Tree::new(want).root(), "n {n} start {start} len {len}");
            }
        }
    }
}
