//! tfiles: a trusted program whose files the workhorse keeps
//! (docs/trusted-core.md, "Trusted files").  Its line in the description
//! has `uses=vault,workhorse`: the vault holds each file's key and root,
//! the workhorse its ciphertext in /data/trusted/<its place>.  It is run
//! from the shell (`run tfiles ARG0`; a described program gets one
//! argument): bits 0-7 of arg0 say what it does, bits 8-15 are the file's
//! number N (file fN), bits 16-31 a version V, bits 32-47 a size in KiB S:
//!
//! - 0: the state: each file the vault has a record of, read whole and
//!   checked (size, generation, blocks, the root's first bytes, and ok or
//!   what is wrong); no key and no content;
//! - 1: writes fN whole with version V of its text (S KiB);
//! - 2: reads fN whole: ok with the version its text is, or the error;
//! - 3: writes fN with versions 1..V in turn, a line for each one
//!   acknowledged (what a kill of the workhorse must not lose);
//! - 4: removes fN;
//! - 5: the benchmarks (vault.read.4k, .64k, vault.write.4k, .64k: one
//!   MiB each between the icount plugin's markers), V runs of each.
//!
//! Exit code 0 when the request succeeded, 1 when not, 2 without the
//! vault or the workhorse.

#![no_std]
#![no_main]

extern crate alloc;

use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;

use keep_abi::{Sender, Tag, err};
use keep_rt::println;
use keep_system::names;
use keep_tfiles::{BLOCK, Error, File, Files, Rng, Roots, Store, StoreError};
use keep_vault::Client;
use keep_workhorse::whfiles_protocol as wh;

keep_rt::entry!(main);

const VAULT: u64 = 0x20;
const WORKHORSE: u64 = 0x21;

/// The workhorse's whfiles protocol; a call that fails (the workhorse
/// killed and restarted: the capability is stale) is made once more on a
/// new capability: every request is the same bytes at the same place
/// again, so repeating it is harmless.
struct Wh(Sender);

fn pack(name: &str) -> (u64, u64) {
    let mut b = [0u8; 16];
    b[..name.len()].copy_from_slice(name.as_bytes());
    (u64::from_le_bytes(b[..8].try_into().unwrap()), u64::from_le_bytes(b[8..].try_into().unwrap()))
}

fn workhorse() -> Result<Sender, u64> {
    let mut last = 0;
    for _ in 0..6 {
        match names::lookup_patiently("workhorse", WORKHORSE, keep_rt::ipc_buffer()) {
            Ok(s) => return Ok(s),
            Err(e) => last = e,
        }
    }
    Err(last)
}

impl Wh {
    fn call(&mut self, label: u64, w: [u64; 4], send: &[u8], out: &mut [u8]) -> Result<(u64, usize), StoreError> {
        for again in [false, true] {
            let buf = keep_rt::ipc_buffer();
            let mut tag = Tag::new(label);
            if !send.is_empty() {
                buf.set_string(send);
                tag = tag.with_string();
            }
            let m = self.0.call(tag, w);
            if m.err != err::OK {
                if !again {
                    let _ = keep_abi::SELF_ASPACE.delete_cap(WORKHORSE);
                    if let Ok(s) = workhorse() {
                        self.0 = s;
                        continue;
                    }
                }
                return Err(StoreError::Failed(0x100 + m.err));
            }
            return match m.words[0] {
                wh::OK => {
                    let n = if m.tag.has_string() { buf.read_string(out) } else { 0 };
                    Ok((m.words[1], n))
                }
                wh::NOT_FOUND => Err(StoreError::NotThere),
                s => Err(StoreError::Failed(s)),
            };
        }
        unreachable!()
    }
}

impl Store for Wh {
    fn read(&mut self, name: &str, off: u64, out: &mut [u8]) -> Result<usize, StoreError> {
        let (lo, hi) = pack(name);
        let mut done = 0;
        while done < out.len() {
            let k = (out.len() - done).min(BLOCK);
            let (_, n) = self.call(wh::READ, [lo, hi, off + done as u64, k as u64], &[], &mut out[done..done + k])?;
            done += n;
            if n < k {
                break;
            }
        }
        Ok(done)
    }
    fn write(&mut self, name: &str, off: u64, data: &[u8]) -> Result<(), StoreError> {
        let (lo, hi) = pack(name);
        for (k, chunk) in data.chunks(BLOCK).enumerate() {
            let (n, _) = self.call(wh::WRITE, [lo, hi, off + (k * BLOCK) as u64, 0], chunk, &mut [])?;
            if n as usize != chunk.len() {
                return Err(StoreError::Failed(wh::IO_ERROR));
            }
        }
        Ok(())
    }
    fn sync(&mut self) -> Result<(), StoreError> {
        self.call(wh::SYNC, [0; 4], &[], &mut []).map(|_| ())
    }
    fn remove(&mut self, name: &str) -> Result<(), StoreError> {
        let (lo, hi) = pack(name);
        self.call(wh::REMOVE, [lo, hi, 0, 0], &[], &mut []).map(|_| ())
    }
}

struct Vault(Client);

impl Roots for Vault {
    fn get(&mut self, key: &[u8], out: &mut [u8]) -> Result<Option<usize>, u64> {
        match self.0.get(key, out) {
            Ok(n) => Ok(Some(n)),
            Err(keep_vault::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), u64> {
        self.0.put(key, value).map(|_| ())
    }
    fn delete(&mut self, key: &[u8]) -> Result<bool, u64> {
        match self.0.delete(key) {
            Ok(_) => Ok(true),
            Err(keep_vault::NOT_FOUND) => Ok(false),
            Err(e) => Err(e),
        }
    }
    fn key_at(&mut self, index: u64, out: &mut [u8]) -> Result<Option<usize>, u64> {
        match self.0.list(index, out) {
            Ok((_, n)) => Ok(Some(n)),
            Err(keep_vault::NOT_FOUND) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// RDRAND (QEMU's `-cpu max` has it); no fallback: a key or a nonce from
/// anything guessable would not be one.
struct Rdrand;

impl Rng for Rdrand {
    fn fill(&mut self, out: &mut [u8]) -> bool {
        if core::arch::x86_64::__cpuid(1).ecx & (1 << 30) == 0 {
            return false;
        }
        for c in out.chunks_mut(8) {
            let mut v: u64 = 0;
            let mut ok: u8 = 0;
            for _ in 0..32 {
                // SAFETY: rdrand only writes the register and the carry flag.
                unsafe { core::arch::asm!("rdrand {v}", "setc {ok}", v = out(reg) v, ok = out(reg_byte) ok) };
                if ok != 0 {
                    break;
                }
            }
            if ok == 0 {
                return false;
            }
            c.copy_from_slice(&v.to_le_bytes()[..c.len()]);
        }
        true
    }
}

type T = Files<Wh, Vault, Rdrand>;

/// File fN's text, version V: lines easy to search the disk for.
fn text(n: u64, version: u64, len: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(len + 64);
    let mut i = 0;
    while v.len() < len {
        v.extend_from_slice(alloc::format!("TFILE-PLAINTEXT f{n} v{version} line {i:06}\n").as_bytes());
        i += 1;
    }
    v.truncate(len);
    v
}

/// The version whose text `data` is, if it is one.
fn version_of(n: u64, data: &[u8]) -> Option<u64> {
    let head = core::str::from_utf8(&data[..data.len().min(64)]).ok()?;
    let prefix = alloc::format!("TFILE-PLAINTEXT f{n} v");
    let rest = head.strip_prefix(prefix.as_str())?;
    let v: u64 = rest.split(' ').next()?.parse().ok()?;
    (text(n, v, data.len()) == data).then_some(v)
}

fn read_all(t: &mut T, f: &File) -> Result<Vec<u8>, Error> {
    let mut out = vec![0u8; f.size() as usize];
    t.read(f, 0, &mut out)?;
    Ok(out)
}

fn hex4(b: &[u8]) -> String {
    b[..4].iter().map(|x| alloc::format!("{x:02x}")).collect()
}

fn state(t: &mut T) -> i32 {
    let names = match t.names() {
        Ok(n) => n,
        Err(e) => {
            println!("tfiles: the vault: {e}");
            return 1;
        }
    };
    println!("tfiles: {} file{} in the vault", names.len(), if names.len() == 1 { "" } else { "s" });
    let mut bad = 0;
    for name in names {
        let r = t.open(&name).and_then(|f| t.verify(&f).map(|_| f));
        match r {
            Ok(f) => println!(
                "  {name}: {} bytes, generation {}, {} blocks, root {}..: ok",
                f.size(),
                f.generation(),
                f.blocks(),
                hex4(&f.root())
            ),
            Err(e) => {
                bad += 1;
                println!("  {name}: {e}");
            }
        }
    }
    if bad == 0 { 0 } else { 1 }
}

fn write(t: &mut T, n: u64, version: u64, len: usize) -> Result<u64, Error> {
    let name = alloc::format!("f{n}");
    let mut f = t.open_or_new(&name)?;
    let data = text(n, version, len);
    t.write(&mut f, 0, &data)
}

/// The benchmarks: one MiB through the workhorse per run, in 4 KiB and
/// 64 KiB requests, read and written (each write a commit).
fn bench(t: &mut T, runs: u64) -> i32 {
    const MIB: usize = 1 << 20;
    let mut f = match t.open_or_new("bench") {
        Ok(f) => f,
        Err(e) => {
            println!("tfiles: bench: {e}");
            return 1;
        }
    };
    // Made in 64 KiB writes (the program's heap is small).
    let chunk = text(99, 0, 64 << 10);
    for k in 0..MIB / chunk.len() {
        if let Err(e) = t.write(&mut f, (k * chunk.len()) as u64, &chunk) {
            println!("tfiles: bench: {e}");
            return 1;
        }
    }
    let mut buf = vec![0u8; 64 << 10];
    for _ in 0..runs {
        for (name, size) in [("vault.read.4k", 4096usize), ("vault.read.64k", 65536)] {
            let _ = keep_rt::icount::region(name, 1, || {
                for k in 0..MIB / size {
                    let n = t.read(&f, (k * size) as u64, &mut buf[..size])?;
                    if n != size {
                        return Err(Error::Missing("short"));
                    }
                }
                Ok(())
            });
        }
        for (name, size) in [("vault.write.4k", 4096usize), ("vault.write.64k", 65536)] {
            let data = text(99, 1, size);
            let _ = keep_rt::icount::region(name, 1, || {
                for k in 0..MIB / size {
                    t.write(&mut f, (k * size) as u64, &data)?;
                }
                Ok::<(), Error>(())
            });
        }
    }
    let _ = t.remove("bench");
    println!("tfiles: bench: done");
    0
}

fn main(arg0: u64, _: u64) -> i32 {
    let v = match names::lookup_patiently("vault", VAULT, keep_rt::ipc_buffer()) {
        Ok(s) => Vault(Client(s)),
        Err(e) => {
            println!("tfiles: no vault ({})", if e >= 0x100 { "the call failed" } else { names::status::name(e) });
            return 2;
        }
    };
    let w = match workhorse() {
        Ok(s) => Wh(s),
        Err(e) => {
            println!("tfiles: no workhorse ({})", if e >= 0x100 { "the call failed" } else { names::status::name(e) });
            return 2;
        }
    };
    let mut t = Files::new(w, v, Rdrand);
    let (what, n, version, kib) = (arg0 & 0xff, (arg0 >> 8) & 0xff, (arg0 >> 16) & 0xffff, ((arg0 >> 32) & 0xffff) as usize);
    let name = alloc::format!("f{n}");
    match what {
        0 => state(&mut t),
        1 => match write(&mut t, n, version, kib << 10) {
            Ok(g) => {
                println!("tfiles: write {name} v{version} ({} bytes): ok, generation {g}", kib << 10);
                0
            }
            Err(e) => {
                println!("tfiles: write {name} v{version}: {e}");
                1
            }
        },
        2 => match t.open(&name).and_then(|f| read_all(&mut t, &f).map(|d| (f, d))) {
            Ok((f, d)) => match version_of(n, &d) {
                Some(v) => {
                    println!("tfiles: read {name}: ok, {} bytes, version {v}, generation {}", d.len(), f.generation());
                    0
                }
                None => {
                    println!("tfiles: read {name}: ok, {} bytes, not a text of its own", d.len());
                    1
                }
            },
            Err(e) => {
                println!("tfiles: read {name}: {e}");
                1
            }
        },
        3 => {
            let mut failed = 0;
            for v in 1..=version {
                match write(&mut t, n, v, kib << 10) {
                    Ok(g) => println!("tfiles: acknowledged {name} v{v} generation {g}"),
                    Err(e) => {
                        failed += 1;
                        println!("tfiles: write {name} v{v}: {e}");
                    }
                }
            }
            println!("tfiles: loop done, {failed} failed");
            0
        }
        4 => match t.remove(&name) {
            Ok(true) => {
                println!("tfiles: removed {name}");
                0
            }
            Ok(false) => {
                println!("tfiles: remove {name}: NOT FOUND");
                1
            }
            Err(e) => {
                println!("tfiles: remove {name}: {e}");
                1
            }
        },
        5 => bench(&mut t, version.max(1)),
        _ => {
            println!("tfiles: request {what} is none of 0-5");
            1
        }
    }
}
