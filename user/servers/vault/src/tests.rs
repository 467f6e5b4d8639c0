//! Host tests of the vault's store: a disk and a TPM in memory, power
//! cuts at every block write, tampering, rollbacks, other boots and TPMs.

extern crate std;

use std::cell::RefCell;
use std::rc::Rc;
use std::vec::Vec;

use crate::protocol::*;
use crate::records::{MAX_KEYS, MAX_NAME, MAX_RECORDS, MAX_VALUE};
use crate::store::*;

/// The disk's bytes, shared so that a test can copy and put them back.
#[derive(Clone)]
struct Mem {
    bytes: Rc<RefCell<Vec<u8>>>,
    power: Power,
    /// Block writes left before the cut (None: no cut).
    left: Rc<RefCell<Option<usize>>>,
}

/// The power of the machine: off after a cut, for the disk and the TPM.
#[derive(Clone, Default)]
struct Power(Rc<RefCell<bool>>);
impl Power {
    fn off(&self) -> bool {
        *self.0.borrow()
    }
}

impl Mem {
    fn new(blocks: u64) -> Mem {
        Mem { bytes: Rc::new(RefCell::new(vec![0; blocks as usize * BLOCK])), power: Power::default(), left: Rc::default() }
    }
    fn image(&self) -> Vec<u8> {
        self.bytes.borrow().clone()
    }
    fn put_back(&self, img: &[u8]) {
        self.bytes.borrow_mut().copy_from_slice(img);
    }
}

impl Disk for Mem {
    fn blocks(&self) -> u64 {
        (self.bytes.borrow().len() / BLOCK) as u64
    }
    fn read(&mut self, block: u64, buf: &mut Page) -> Result<(), IoError> {
        let b = self.bytes.borrow();
        buf.copy_from_slice(&b[block as usize * BLOCK..][..BLOCK]);
        Ok(())
    }
    fn write(&mut self, block: u64, buf: &Page) -> Result<(), IoError> {
        if self.power.off() {
            return Err(IoError(4));
        }
        let mut left = self.left.borrow_mut();
        let mut n = BLOCK;
        if let Some(l) = left.as_mut() {
            if *l == 0 {
                // The cut: half of this block reaches the disk.
                n = BLOCK / 2;
                *self.power.0.borrow_mut() = true;
            } else {
                *l -= 1;
            }
        }
        self.bytes.borrow_mut()[block as usize * BLOCK..][..n].copy_from_slice(&buf[..n]);
        if n < BLOCK { Err(IoError(4)) } else { Ok(()) }
    }
    fn flush(&mut self) -> Result<(), IoError> {
        if self.power.off() { Err(IoError(4)) } else { Ok(()) }
    }
}

/// A TPM: its identity (a blob names the TPM and the PCRs it was sealed
/// under), the PCRs of this boot, the vault's counter, RANDOM's state.
struct TpmState {
    id: u8,
    pcrs: u8,
    counter: u64,
    rng: u8,
    present: bool,
}

#[derive(Clone)]
struct Tpm {
    s: Rc<RefCell<TpmState>>,
    power: Power,
}

impl Tpm {
    fn new(id: u8, power: &Power) -> Tpm {
        Tpm { s: Rc::new(RefCell::new(TpmState { id, pcrs: 0, counter: 0, rng: id, present: true })), power: power.clone() }
    }
    fn counter(&self) -> u64 {
        self.s.borrow().counter
    }
}

impl Anchor for Tpm {
    fn random(&mut self, out: &mut [u8]) -> Result<(), Refusal> {
        let mut s = self.s.borrow_mut();
        if !s.present {
            return Err(Refusal::NoTpm);
        }
        for b in out {
            s.rng = s.rng.wrapping_mul(167).wrapping_add(13);
            *b = s.rng;
        }
        Ok(())
    }
    fn seal(&mut self, secret: &[u8]) -> Result<Vec<u8>, Refusal> {
        let s = self.s.borrow();
        let mut b = vec![s.id, s.pcrs];
        b.extend_from_slice(secret);
        Ok(b)
    }
    fn unseal(&mut self, blob: &[u8]) -> Result<Vec<u8>, Refusal> {
        let s = self.s.borrow();
        if !s.present {
            return Err(Refusal::NoTpm);
        }
        if blob.len() < 2 || blob[0] != s.id {
            return Err(Refusal::Foreign);
        }
        if blob[1] != s.pcrs {
            return Err(Refusal::BootChanged);
        }
        Ok(blob[2..].to_vec())
    }
    fn counter(&mut self) -> Result<u64, Refusal> {
        if !self.s.borrow().present {
            return Err(Refusal::NoTpm);
        }
        Ok(self.s.borrow().counter)
    }
    fn increment(&mut self) -> Result<u64, Refusal> {
        if self.power.off() {
            return Err(Refusal::Failed("power".into()));
        }
        let mut s = self.s.borrow_mut();
        s.counter += 1;
        Ok(s.counter)
    }
}

fn machine() -> (Mem, Tpm) {
    let m = Mem::new(AREA_BLOCKS + 3);
    let t = Tpm::new(7, &m.power);
    (m, t)
}

type V = Vault<Mem, Tpm>;

fn boot(m: &Mem, t: &Tpm) -> V {
    *m.power.0.borrow_mut() = false;
    *m.left.borrow_mut() = None;
    Vault::open(m.clone(), t.clone())
}

fn put(v: &mut V, c: u16, name: &str, value: &str) -> Reply {
    let mut s = name.as_bytes().to_vec();
    s.extend_from_slice(value.as_bytes());
    v.request(c, PUT, name.len() as u64, &s)
}

fn get(v: &mut V, c: u16, name: &str) -> Result<Vec<u8>, u64> {
    let r = v.request(c, GET, 0, name.as_bytes());
    if r.status == OK { Ok(r.text) } else { Err(r.status) }
}

#[test]
fn a_secret_comes_back_at_the_next_boot() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "{}", v.note);
    assert!(v.note.contains("made a new store"));
    assert_eq!(t.counter(), 1, "the first copy's increment");
    assert_eq!(put(&mut v, 3, "disk-key", "s3cret").status, OK);
    assert_eq!(get(&mut v, 3, "disk-key"), Ok(b"s3cret".to_vec()));
    assert_eq!(put(&mut v, 3, "disk-key", "other").status, OK, "a new value");
    assert_eq!(t.counter(), 3);
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "{:?}", v.state);
    assert_eq!(get(&mut v, 3, "disk-key"), Ok(b"other".to_vec()));
    assert_eq!(v.counter, 3);
    assert_eq!(v.request(3, DELETE, 0, b"disk-key").status, OK);
    assert_eq!(get(&mut v, 3, "disk-key"), Err(NOT_FOUND));
    let mut v = boot(&m, &t);
    assert_eq!(get(&mut v, 3, "disk-key"), Err(NOT_FOUND), "the delete is kept");
}

#[test]
fn the_disk_holds_no_secret_in_the_clear() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 1, "name-in-clear", "VALUE-IN-CLEAR");
    let img = m.image();
    for needle in [&b"name-in-clear"[..], b"VALUE-IN-CLEAR"] {
        assert!(!img.windows(needle.len()).any(|w| w == needle));
    }
}

#[test]
fn a_client_reaches_only_its_own_keys() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    assert_eq!(put(&mut v, 1, "key", "one's").status, OK);
    assert_eq!(get(&mut v, 2, "key"), Err(NOT_FOUND), "another client's key of the same name");
    assert_eq!(v.request(2, DELETE, 0, b"key").status, NOT_FOUND);
    assert_eq!(v.request(2, LIST, 0, &[]), Reply { status: NOT_FOUND, value: 0, text: vec![] });
    assert_eq!(put(&mut v, 2, "key", "two's").status, OK);
    assert_eq!(get(&mut v, 1, "key"), Ok(b"one's".to_vec()));
    assert_eq!(get(&mut v, 2, "key"), Ok(b"two's".to_vec()));
    let l = v.request(1, LIST, 0, &[]);
    assert_eq!((l.status, l.value, l.text.as_slice()), (OK, 1, &b"key"[..]));
    let (_, report) = v.stats();
    assert!(report.contains("client 1: 1 key, 5 bytes") && report.contains("client 2: 1 key, 5 bytes"), "{report}");
    assert!(!report.contains("one's") && !report.contains("key\n"), "no values, no names: {report}");
}

#[test]
fn limits_and_bad_requests_change_nothing() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    let before = (m.image(), t.counter());
    let long = "n".repeat(MAX_NAME + 1);
    let big = "v".repeat(MAX_VALUE + 1);
    assert_eq!(put(&mut v, 1, &long, "x").status, BAD_REQUEST);
    assert_eq!(put(&mut v, 1, "k", &big).status, TOO_LARGE);
    assert_eq!(v.request(1, PUT, 0, b"kv").status, BAD_REQUEST, "an empty name");
    assert_eq!(v.request(1, PUT, 5, b"kv").status, BAD_REQUEST, "name_len past the string");
    assert_eq!(v.request(1, GET, 0, b"").status, BAD_REQUEST);
    assert_eq!(v.request(1, LIST, 0x10000, b"").status, BAD_REQUEST);
    assert_eq!(v.request(1, 99, 0, b"").status, BAD_REQUEST);
    assert_eq!(v.request(1, STATS, 0, b"").status, BAD_REQUEST, "STATS is the administrator's");
    assert_eq!(before, (m.image(), t.counter()), "nothing written, nothing incremented");
    let max_name = "n".repeat(MAX_NAME);
    let max_value = "v".repeat(MAX_VALUE);
    assert_eq!(put(&mut v, 1, &max_name, &max_value).status, OK, "the largest key");
    for i in 1..MAX_KEYS {
        assert_eq!(put(&mut v, 1, &format!("k{i}"), "x").status, OK);
    }
    let before = (m.image(), t.counter());
    assert_eq!(put(&mut v, 1, "one-more", "x").status, FULL);
    assert_eq!(before, (m.image(), t.counter()));
    assert_eq!(put(&mut v, 1, "k1", "y").status, OK, "a new value of a key is no new key");
    // The store's limit: fill it from other clients (each at MAX_KEYS).
    let mut c = 2;
    while v.records.0.len() < MAX_RECORDS {
        for i in 0..MAX_KEYS.min(MAX_RECORDS - v.records.0.len()) {
            assert_eq!(put(&mut v, c, &format!("{max_name:.30}{i:02}"), &max_value).status, OK);
        }
        c += 1;
    }
    assert_eq!(put(&mut v, c, "k", "x").status, FULL, "the store is full");
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "the largest store fits its slot: {:?}", v.state);
    assert_eq!(v.records.0.len(), MAX_RECORDS);
    assert_eq!(get(&mut v, 1, &max_name), Ok(max_value.into_bytes()));
}

#[test]
fn another_boot_cannot_unseal_and_nothing_is_lost() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 4, "k", "kept");
    let img = m.image();
    t.s.borrow_mut().pcrs = 1; // a changed boot image or description
    let mut v = boot(&m, &t);
    assert_eq!(v.state.status(), SEALED_ELSEWHERE);
    assert!(v.state.why().contains("changed boot image or description"), "{}", v.state.why());
    assert_eq!(get(&mut v, 4, "k"), Err(SEALED_ELSEWHERE));
    assert_eq!(put(&mut v, 4, "k", "new").status, SEALED_ELSEWHERE);
    assert_eq!(m.image(), img, "the disk untouched");
    // Another TPM.
    let other = Tpm::new(9, &m.power);
    let v = boot(&m, &other);
    assert_eq!(v.state.status(), SEALED_ELSEWHERE);
    assert!(v.state.why().contains("another TPM"));
    assert_eq!(m.image(), img);
    // The right boot again: the secret is back.
    t.s.borrow_mut().pcrs = 0;
    let mut v = boot(&m, &t);
    assert_eq!(get(&mut v, 4, "k"), Ok(b"kept".to_vec()));
}

#[test]
fn without_a_tpm_nothing_is_served_or_written() {
    let (m, t) = machine();
    t.s.borrow_mut().present = false;
    let mut v = boot(&m, &t);
    assert_eq!(v.state.status(), NO_TPM);
    assert_eq!(put(&mut v, 1, "k", "v").status, NO_TPM);
    assert!(m.image().iter().all(|&b| b == 0));
}

#[test]
fn an_old_copy_put_back_is_a_rollback() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 1, "pin", "1234");
    let old = m.image();
    put(&mut v, 1, "pin", "9999");
    put(&mut v, 1, "other", "x");
    let new = m.image();
    m.put_back(&old);
    let mut v = boot(&m, &t);
    assert_eq!(v.state.status(), ROLLBACK, "{:?}", v.state);
    assert!(v.state.why().contains("counter 2") && v.state.why().contains("is 4"), "{}", v.state.why());
    assert_eq!(get(&mut v, 1, "pin"), Err(ROLLBACK), "the old PIN is not served");
    assert_eq!(put(&mut v, 1, "pin", "x").status, ROLLBACK);
    assert_eq!(m.image(), old, "kept as found");
    // One slot put back: the other is the newest and current.
    let mut half = new.clone();
    let a = BLOCK..(1 + SLOT_BLOCKS as usize) * BLOCK;
    half[a.clone()].copy_from_slice(&old[a]);
    m.put_back(&half);
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open);
    assert_eq!(get(&mut v, 1, "pin"), Ok(b"9999".to_vec()));
    // The whole area erased but the key block.
    let mut erased = new.clone();
    erased[BLOCK..].fill(0);
    m.put_back(&erased);
    let v = boot(&m, &t);
    assert_eq!(v.state.status(), ROLLBACK);
    assert!(v.state.why().contains("gone"));
    // Erased with the key block: a new store, which says so.
    m.put_back(&vec![0; new.len()]);
    let v = boot(&m, &t);
    assert_eq!(v.state, State::Open);
    assert!(v.note.contains("an earlier store's area was erased"), "{}", v.note);
    assert!(v.records.0.is_empty());
}

#[test]
fn a_bit_flipped_anywhere_is_refused() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 1, "a", "first");
    put(&mut v, 2, "b", "second");
    let good = m.image();
    let newest = v.current;
    let slot_len = 48 + v.records.encode().len() + 16;
    let ranges = [
        (0, 72 + 34, "the key block (its blob: 2 + 32 bytes)"),
        (BLOCK * (1 + newest * SLOT_BLOCKS as usize), slot_len, "the newest copy"),
    ];
    for (start, len, what) in ranges {
        for byte in start..start + len {
            for bit in [0, 3, 7] {
                let mut img = good.clone();
                img[byte] ^= 1 << bit;
                m.put_back(&img);
                let mut v = boot(&m, &t);
                assert_ne!(v.state, State::Open, "{what}: byte {byte} bit {bit} flipped, still open");
                assert_eq!(get(&mut v, 1, "a"), Err(v.state.status()));
                assert_eq!(m.image(), img, "{what}: kept as found");
            }
        }
    }
    // A flip in the older copy: the newest serves, the older is refused.
    let older = 1 - newest;
    let mut img = good.clone();
    img[BLOCK * (1 + older * SLOT_BLOCKS as usize) + 60] ^= 1;
    m.put_back(&img);
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open);
    assert_eq!(v.slots[older], Slot::Bad("authentication failed"));
    assert_eq!(get(&mut v, 2, "b"), Ok(b"second".to_vec()));
}

/// Runs `ops` (PUTs) on a new store with the power cut at block write
/// `cut`; then boots again: the store is open and holds what it held
/// before the cut operation, or after it.  False when `cut` came after all.
fn cut_at(cut: usize) -> bool {
    let (m, t) = machine();
    *m.left.borrow_mut() = Some(cut);
    let mut v = Vault::open(m.clone(), t.clone());
    let ops: Vec<(u16, std::string::String, std::string::String)> =
        (0..6).map(|i| (i % 3, format!("key{}", i % 4), "x".repeat(50 * i as usize))).collect();
    let mut states = vec![crate::records::Records::default()];
    let mut done = v.state == State::Open;
    for (c, n, val) in &ops {
        if !done {
            break;
        }
        let next = states.last().unwrap().put(*c, n.as_bytes(), val.as_bytes()).unwrap();
        states.push(next);
        done = put(&mut v, *c, n, val).status == OK;
    }
    let whole = done && !m.power.off();
    let v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "cut at write {cut}: {:?}", v.state);
    let n = states.len();
    let ok = v.records == states[n - 1] || (n >= 2 && v.records == states[n - 2]) || n == 1;
    assert!(ok, "cut at write {cut}: neither the state before nor after the cut write");
    assert!(t.counter() == v.counter, "cut at write {cut}: counters {} and {}", t.counter(), v.counter);
    !whole
}

#[test]
fn a_power_cut_at_any_write_keeps_the_last_whole_state() {
    let mut cut = 0;
    while cut_at(cut) {
        cut += 1;
    }
    // The key block, the first copy, a block for each of the six PUTs.
    assert_eq!(cut, 8, "the run wrote {cut} blocks");
}

#[test]
fn a_write_cut_before_the_increment_is_completed_at_start() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 1, "k", "v1");
    // The write lands, the increment does not (the TPM fails once).
    t.s.borrow_mut().present = true;
    let before = t.counter();
    let img = {
        let mut v2 = boot(&m, &t);
        *m.power.0.borrow_mut() = false;
        // Make the increment fail: power off only for the TPM.
        let p = Power::default();
        *p.0.borrow_mut() = true;
        v2.tpm.power = p;
        let r = put(&mut v2, 1, "k", "v2");
        assert_eq!((r.status, r.value), (IO_ERROR, 1), "on the disk, increment pending");
        m.image()
    };
    assert_eq!(t.counter(), before);
    m.put_back(&img);
    let mut v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "{:?}", v.state);
    assert!(v.note.contains("completed"), "{}", v.note);
    assert_eq!(t.counter(), before + 1);
    assert_eq!(get(&mut v, 1, "k"), Ok(b"v2".to_vec()));
}

#[test]
fn a_cut_making_of_the_store_is_completed() {
    let (m, t) = machine();
    let v = boot(&m, &t);
    assert_eq!(v.state, State::Open);
    // As if the cut came after the key block: no copy, no increment.
    let mut img = m.image();
    img[BLOCK..].fill(0);
    m.put_back(&img);
    t.s.borrow_mut().counter = 0;
    let v = boot(&m, &t);
    assert_eq!(v.state, State::Open, "{:?}", v.state);
    assert!(v.note.contains("completed the store's making"), "{}", v.note);
    assert_eq!((t.counter(), v.counter), (1, 1));
}

#[test]
fn a_damaged_area_is_kept_and_said() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    put(&mut v, 1, "k", "v");
    let mut img = m.image();
    img[..BLOCK].fill(0);
    m.put_back(&img);
    let v = boot(&m, &t);
    assert_eq!(v.state.status(), DAMAGED);
    assert!(v.state.why().contains("no key block"));
    assert_eq!(m.image(), img);
    let small = Mem::new(AREA_BLOCKS - 1);
    let v = Vault::open(small, Tpm::new(1, &Power::default()));
    assert_eq!(v.state.status(), DAMAGED);
}

#[test]
fn a_record_image_parses_only_as_written() {
    use crate::records::Records;
    let r = Records::default().put(1, b"b", b"2").unwrap().put(1, b"a", b"1").unwrap().put(0, b"z", b"").unwrap();
    let e = r.encode();
    assert_eq!(Records::decode(&e), Some(r.clone()));
    assert_eq!(Records::decode(&e[..e.len() - 1]), None, "cut");
    let mut swapped = Records::default().put(1, b"a", b"1").unwrap();
    swapped.0.insert(0, crate::records::Record { client: 1, name: b"b".to_vec(), value: vec![] });
    assert_eq!(Records::decode(&swapped.encode()), None, "out of order");
}

/// One request through the generated dispatch and the vault's Session,
/// as the server answers it: the reply's words and string.
fn call(v: &mut V, label: u64, payload: u64, w0: u64, data: &[u8], over: bool) -> ([u64; 4], Vec<u8>) {
    let m = keep_abi::Msg { err: 0, tag: keep_abi::Tag::new(label), payload, words: [w0, 0, 0, 0] };
    let mut s = crate::serve::Session { vault: v, data, over, text: Vec::new() };
    let a = dispatch(&mut s, &m);
    assert_eq!(a.string, !s.text.is_empty());
    (a.words(), s.text)
}

#[test]
fn described_clients_are_served_in_their_namespace_and_the_administrator_stats() {
    let (m, t) = machine();
    let mut v = boot(&m, &t);
    let (a, b) = (keep_system::names::CLIENT | 3, keep_system::names::CLIENT | 4);
    let (w, _) = call(&mut v, PUT, a, 3, b"keyvalue", false);
    assert_eq!(w[0], OK);
    assert_eq!(call(&mut v, GET, a, 0, b"key", false), ([OK, 5, 0, 0], b"value".to_vec()));
    assert_eq!(call(&mut v, GET, b, 0, b"key", false).0[0], NOT_FOUND, "another client's namespace");
    assert_eq!(call(&mut v, LIST, a, 0, b"", false), ([OK, 1, 0, 0], b"key".to_vec()));
    let (w, report) = call(&mut v, STATS, 0, 0, b"", false);
    assert_eq!(w[0], OK);
    assert!(!report.is_empty() && !report.windows(5).any(|x| x == b"value"), "the report shows no value");
    // The administrator holds no namespace, a client no STATS, any other
    // payload nothing; an unknown label is BAD_REQUEST; none changes the store.
    for (label, p) in [(PUT, 0), (GET, 0), (STATS, a), (GET, 1), (GET, 1 << 61), (STATS, 7), (0, a), (6, a), (6, 0)] {
        assert_eq!(call(&mut v, label, p, 3, b"keyother", false), ([BAD_REQUEST, 0, 0, 0], Vec::new()), "{label} {p:#x}");
    }
    // A string longer than the server takes: TOO_LARGE for PUT, else BAD_REQUEST.
    assert_eq!(call(&mut v, PUT, a, 3, b"keyother", true).0, [TOO_LARGE, 0, 0, 0]);
    assert_eq!(call(&mut v, GET, a, 0, b"key", true).0, [BAD_REQUEST, 0, 0, 0]);
    assert_eq!(call(&mut v, GET, a, 0, b"key", false), ([OK, 5, 0, 0], b"value".to_vec()), "nothing changed");
}
